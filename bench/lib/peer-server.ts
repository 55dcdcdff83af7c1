// Runs one of the test fakes (tests/fakes) in a process of its own, so that neither Herald nor the
// baseline loop shares an event loop with the provider it sends to. `PEER=smtp` starts the SMTP sink,
// `PEER=sms` the SMS gateway fake; a small control server on PORT answers:
//   GET /health   -> ok
//   GET /info     -> { smtpPort } or { url }: where to send
//   GET /stats    -> { messages, connections } (smtp) or { calls, messages } (sms), since the last reset
//   POST /reset   -> forgets what was received
import { createServer } from 'node:http';
import { startSmsGatewayFake } from '../../tests/fakes/sms-gateway-fake.js';
import { startSmtpSink } from '../../tests/fakes/smtp-sink.js';

const peer = process.env.PEER;
let info: unknown;
let stats: () => unknown;
let reset: () => void;
if (peer === 'smtp') {
  const sink = await startSmtpSink();
  info = { smtpPort: sink.port };
  stats = () => ({ messages: sink.messages.length, recipients: new Set(sink.messages.flatMap((m) => m.envelopeTo)).size, connections: sink.connections.total });
  reset = () => void (sink.messages.length = 0);
} else if (peer === 'sms') {
  const gateway = await startSmsGatewayFake();
  info = { url: gateway.url };
  stats = () => ({
    calls: gateway.calls.length,
    messages: gateway.calls.reduce((n, c) => n + (Array.isArray(c.body?.smslist) ? c.body.smslist.length : 1), 0),
    mobiles: new Set(gateway.calls.flatMap((c) => (Array.isArray(c.body?.smslist) ? c.body.smslist.map((s: { mobile: string }) => s.mobile) : [c.body?.mobile]))).size,
    bulkSizes: [...new Set(gateway.calls.map((c) => c.body?.count ?? 1))],
  });
  reset = () => void (gateway.calls.length = 0);
} else {
  throw new Error('PEER must be smtp or sms');
}

createServer((req, res) => {
  if (req.url === '/reset' && req.method === 'POST') reset();
  const body = req.url === '/info' ? info : req.url === '/stats' ? stats() : req.url === '/health' || req.url === '/reset' ? { ok: true } : null;
  res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? { error: 'not found' }));
}).listen(Number(process.env.PORT), '127.0.0.1');
