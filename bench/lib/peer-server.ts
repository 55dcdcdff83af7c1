// Runs one of the test fakes (tests/fakes) in a process of its own, so that neither Herald nor the
// baseline loop shares an event loop with the provider it sends to. `PEER=smtp` starts the SMTP sink,
// `PEER=sms` the SMS gateway fake, `PEER=smpp` the fake SMSC (tests/fakes/smpp-server.ts, binding
// system id `herald`, password `secret1`); a small control server on PORT answers:
//   GET /health   -> ok
//   GET /info     -> { smtpPort }, { url } or { host, port, systemId, password }: where to send
//   GET /stats    -> { messages, connections } (smtp), { calls, messages } (sms) or
//                    { messages, destinations, texts, received, binds, sessions, maxOutstanding } (smpp),
//                    since the last reset
//   POST /reset   -> forgets what was received
// For `PEER=sms` and `PEER=smpp` also:
//   LATENCY_MS=50                  every gateway call (submit_sm) answers after that many ms (default: at once)
// For `PEER=sms` also:
//   GET /stats?partnerID=<id>      the same counts for that gateway account's messages only
//   GET /arrivals?partnerID=<id>   [[at, messages], ...]: each call's arrival (ms since the epoch)
//                                  and how many of the account's messages it carried
import { createServer } from 'node:http';
import { startSmppServer } from '../../tests/fakes/smpp-server.js';
import { startSmsGatewayFake, type SmsCall } from '../../tests/fakes/sms-gateway-fake.js';
import { startSmtpSink } from '../../tests/fakes/smtp-sink.js';

const peer = process.env.PEER;
let info: unknown;
let stats: (partnerID?: string | null) => unknown;
let reset: () => void;
/** Answers for paths other than /info, /stats, /health and /reset (null: 404). */
let extra: (path: string, query: URLSearchParams) => unknown = () => null;
if (peer === 'smtp') {
  const sink = await startSmtpSink();
  info = { smtpPort: sink.port };
  stats = () => ({ messages: sink.messages.length, recipients: new Set(sink.messages.flatMap((m) => m.envelopeTo)).size, connections: sink.connections.total });
  reset = () => void (sink.messages.length = 0);
} else if (peer === 'sms') {
  const gateway = await startSmsGatewayFake();
  const latency = Number(process.env.LATENCY_MS ?? 0);
  if (latency > 0) gateway.setBehaviour({ kind: 'delay', ms: latency });
  info = { url: gateway.url };
  type Message = { mobile: string; partnerID: string };
  const messagesOf = (c: SmsCall): Message[] =>
    (Array.isArray(c.body?.smslist) ? c.body.smslist : [c.body]).map((s: { mobile?: unknown; partnerID?: unknown }) => ({ mobile: String(s?.mobile), partnerID: String(s?.partnerID) }));
  const callsOf = (partnerID: string | null) =>
    gateway.calls.map((c) => ({ call: c, messages: messagesOf(c).filter((m) => partnerID === null || m.partnerID === partnerID) })).filter((c) => c.messages.length);
  stats = (partnerID: string | null = null) => {
    const calls = callsOf(partnerID);
    return {
      calls: calls.length,
      messages: calls.reduce((n, c) => n + c.messages.length, 0),
      mobiles: new Set(calls.flatMap((c) => c.messages.map((m) => m.mobile))).size,
      bulkSizes: [...new Set(calls.map((c) => c.call.body?.count ?? 1))],
    };
  };
  extra = (path, query) => (path === '/arrivals' ? callsOf(query.get('partnerID')).map((c) => [c.call.at, c.messages.length]) : null);
  // The accepted messages go too: a long bench would otherwise keep every one of them.
  reset = () => void ((gateway.calls.length = 0), (gateway.answered.length = 0));
} else if (peer === 'smpp') {
  const credentials = { systemId: 'herald', password: 'secret1' };
  const smsc = await startSmppServer(credentials);
  const latency = Number(process.env.LATENCY_MS ?? 0);
  info = { host: smsc.host, port: smsc.port, ...credentials };
  stats = () => {
    const submits = smsc.submits();
    return {
      messages: submits.length,
      destinations: new Set(submits.map((s) => s.destination)).size,
      texts: [...new Set(submits.map((s) => `${s.dataCoding}:${s.text}`))],
      received: smsc.received(),
      binds: smsc.binds().filter((b) => b.status === 0).length,
      sessions: smsc.sessions(),
      // The most submit_sm a session had unanswered at once: at most 1 when they are answered at once.
      maxOutstanding: smsc.maxOutstandingSeen(),
    };
  };
  // The fake's reset forgets its delay too: it is set again.
  reset = () => void (smsc.reset(), smsc.delay(latency));
  reset();
} else {
  throw new Error('PEER must be smtp, sms or smpp');
}

createServer((req, res) => {
  const { pathname, searchParams } = new URL(req.url ?? '/', 'http://peer');
  if (pathname === '/reset' && req.method === 'POST') reset();
  const body =
    pathname === '/info' ? info
    : pathname === '/stats' ? stats(searchParams.get('partnerID'))
    : pathname === '/health' || pathname === '/reset' ? { ok: true }
    : extra(pathname, searchParams);
  res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(body ?? { error: 'not found' }));
}).listen(Number(process.env.PORT), '127.0.0.1');
