import type { AddressInfo, Socket } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/**
 * A real SMTP server (the `smtp-server` package) on 127.0.0.1 that keeps every message it accepts,
 * parsed with mailparser. Plain SMTP only (STARTTLS disabled): point nodemailer at it with
 * `ignoreTLS` (Herald's SMTP adapter: `allowInsecure: true`).
 *
 *   const sink = await startSmtpSink();                     // sink.port
 *   sink.setBehaviour({ reject: { 'gone@example.com': 550, 'later@example.com': 451 } });
 *   sink.setBehaviour({ drop: ['cut@example.com'], garbageGreeting: true, stallGreetingMs: 5000 });
 *   sink.messages                                           // parsed messages, in acceptance order
 *   sink.rcptAttempts                                       // every RCPT TO address, faults included
 *   sink.connections                                        // { total, open }: to see pooling
 *   await sink.stop();
 *
 * A message is recorded before the server answers DATA, so it is there once the client's send resolves
 * (a stalled message is recorded too, though the client never hears back).
 */
export interface SinkAttachment {
  filename: string | undefined;
  contentType: string;
  content: Buffer;
}

export interface SinkMessage {
  /** SMTP envelope, as the client gave it in MAIL FROM / RCPT TO (accepted recipients only). */
  envelopeFrom: string | false;
  envelopeTo: string[];
  /** The authenticated user of the session, if the client logged in. */
  authUser: string | undefined;
  /** Header lines as sent, keyed in lower case (`from`, `to`, `subject`, `content-type`, ...). */
  headers: Record<string, string>;
  subject: string | undefined;
  html: string | false;
  text: string | undefined;
  attachments: SinkAttachment[];
  /** The message as it arrived (what a DKIM verifier reads). */
  raw: Buffer;
}

export interface SinkBehaviour {
  /** Recipients refused at RCPT TO, with the reply code (550 permanent, 451 temporary, ...). */
  reject?: Record<string, number>;
  /** Hold the answer to DATA this long: a server that accepts the connection and then stalls. */
  stallDataMs?: number;
  /** Hold the greeting this long: a server that accepts the TCP connection and then says nothing. */
  stallGreetingMs?: number;
  /** Recipients (`*`: every one) whose RCPT TO makes the server drop the connection without a reply. */
  drop?: string[];
  /** Greet every new connection with a line that is not an SMTP reply, then close it. */
  garbageGreeting?: boolean;
}

export interface SmtpSinkOptions {
  /** When set, only this login is accepted (535 otherwise); sessions without AUTH still may send. */
  auth?: { user: string; pass: string };
}

export interface SmtpSink {
  host: string;
  port: number;
  messages: SinkMessage[];
  /** Every address given in RCPT TO, in arrival order, whatever the answer: counts attempts per recipient. */
  rcptAttempts: string[];
  connections: { total: number; open: number };
  setBehaviour(behaviour: SinkBehaviour): void;
  /** Resolves once `count` messages are in (or rejects after `timeoutMs`). */
  waitForMessages(count: number, timeoutMs?: number): Promise<SinkMessage[]>;
  stop(): Promise<void>;
}

export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const messages: SinkMessage[] = [];
  const rcptAttempts: string[] = [];
  const connections = { total: 0, open: 0 };
  let behaviour: SinkBehaviour = {};
  const timers = new Set<NodeJS.Timeout>();

  const server = new SMTPServer({
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    logger: false,
    // Pooled clients stay connected; do not hold stop() for the default 30 s grace period.
    closeTimeout: 50,
    onConnect(session, callback) {
      connections.total += 1;
      connections.open += 1;
      if (behaviour.garbageGreeting) {
        const socket = socketOf(session.id);
        socket?.write('this is not an SMTP greeting\r\n');
        // Closed a moment later, so the client reads the line as the answer rather than seeing a hang-up.
        const timer = setTimeout(() => {
          timers.delete(timer);
          socket?.destroy();
        }, 100);
        timers.add(timer);
        return;
      }
      if (!behaviour.stallGreetingMs) return callback();
      const timer = setTimeout(() => {
        timers.delete(timer);
        callback();
      }, behaviour.stallGreetingMs);
      timers.add(timer);
    },
    onClose() {
      connections.open -= 1;
    },
    onAuth(auth, _session, callback) {
      if (options.auth && (auth.username !== options.auth.user || auth.password !== options.auth.pass)) {
        return callback(Object.assign(new Error('5.7.8 Authentication credentials invalid'), { responseCode: 535 }));
      }
      callback(null, { user: auth.username });
    },
    onRcptTo(address, session, callback) {
      const to = address.address.toLowerCase();
      rcptAttempts.push(to);
      const hit = (list?: string[]) => !!list && (list.includes('*') || list.includes(to));
      if (hit(behaviour.drop)) return void socketOf(session.id)?.destroy();
      const code = behaviour.reject?.[to];
      if (!code) return callback();
      const text = code >= 500 ? `5.1.1 <${address.address}>: Recipient address rejected` : `4.2.1 <${address.address}>: Mailbox busy, try again later`;
      callback(Object.assign(new Error(text), { responseCode: code }));
    },
    onData(stream, session, callback) {
      // Read the envelope now: the session is reset for the next message once we answer.
      const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : false;
      const envelopeTo = session.envelope.rcptTo.map((r) => r.address);
      const authUser = typeof session.user === 'string' ? session.user : undefined;
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      simpleParser(stream)
        .then((parsed) => {
          const headers: Record<string, string> = {};
          for (const line of parsed.headerLines) headers[line.key] = line.line.slice(line.line.indexOf(':') + 1).trim();
          messages.push({
            envelopeFrom,
            envelopeTo,
            authUser,
            headers,
            subject: parsed.subject,
            html: parsed.html,
            text: parsed.text,
            attachments: parsed.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: a.content })),
            raw: Buffer.concat(chunks),
          });
          if (!behaviour.stallDataMs) return callback();
          const timer = setTimeout(() => {
            timers.delete(timer);
            callback();
          }, behaviour.stallDataMs);
          timers.add(timer);
        })
        .catch((err: Error) => callback(err));
    },
  });

  /** smtp-server does not hand the socket to handlers; it is found through the session's id. */
  function socketOf(sessionId: string): Socket | undefined {
    const { connections: open } = server as unknown as { connections: Set<{ id: string; _socket: Socket }> };
    return [...open].find((c) => c.id === sessionId)?._socket;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.server.address() as AddressInfo;

  return {
    host: '127.0.0.1',
    port,
    messages,
    rcptAttempts,
    connections,
    setBehaviour(next) {
      const reject = Object.fromEntries(Object.entries(next.reject ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
      const lower = (list?: string[]) => list?.map((a) => a.toLowerCase());
      behaviour = { ...next, reject, drop: lower(next.drop) };
    },
    async waitForMessages(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`SMTP sink: ${messages.length} of ${count} messages after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return messages;
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
