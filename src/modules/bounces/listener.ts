import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../../config/config.js';
import type { Db } from '../../db/database.js';
import { readInboundReport } from '../../delivery/bounces/reports.js';
import { readBounceAddress, type BounceRef } from '../../delivery/bounces/verp.js';
import { inboundReports } from '../../lib/metrics.js';
import { recipientByReference } from '../receipts/service.js';
import { bounced, complained } from './service.js';

/**
 * Herald's own inbound SMTP listener for the bounce domain (`BOUNCE_SMTP_PORT`): where mail
 * servers send their bounce messages (RFC 3464), which go to the envelope sender, and where
 * feedback-loop reports (RFC 5965) sent to the same addresses arrive. It takes mail only for
 * addresses Herald made (`bounces+<token>@<BOUNCE_DOMAIN>`; any other is refused at RCPT), bounds
 * what one message, one connection and one sender may cost, and answers 250 only once what a
 * message says is recorded: a failure to record is a temporary 451, so the sender tries again and
 * nothing is lost.
 */

/** The largest message taken: bounce messages carry the original's headers, often the whole of it. */
export const MAX_MESSAGE_BYTES = 2 * 1024 * 1024;
/** Connections handled at once; more are told to come back (421). */
export const MAX_CLIENTS = 100;
/** Recipients of one message: a bounce or a report names one, a few at most. */
const MAX_RECIPIENTS = 10;
/** Connections a remote address may open a minute; past it, a temporary refusal. */
const CONNECTIONS_PER_MINUTE = 600;

export interface BounceListener {
  readonly port: number;
  close(): Promise<void>;
}

class SmtpReply extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** Starts the listener on `config.bounces.port` (0: any free port) when a bounce domain and port are set. */
export async function startBounceListener(db: Db, config: Config, log: Logger): Promise<BounceListener | null> {
  const { domain, port, host } = config.bounces;
  if (!domain || port === undefined) return null;
  const secret = config.jwtSecret;
  const connections = new RateLimiterMemory({ points: CONNECTIONS_PER_MINUTE, duration: 60 });
  /** The recipients of each transaction, as their addresses named them. */
  const refs = new WeakMap<SMTPServerSession['envelope'], BounceRef[]>();

  const server = new SMTPServer({
    name: config.smtpEhloName,
    banner: 'Herald bounce listener',
    size: MAX_MESSAGE_BYTES,
    maxClients: MAX_CLIENTS,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    socketTimeout: 60_000,
    closeTimeout: 5_000,
    onConnect(session, callback) {
      connections.consume(session.remoteAddress).then(
        () => callback(),
        () => callback(new SmtpReply(421, 'Too many connections from your address, try again later')),
      );
    },
    onRcptTo(address, session, callback) {
      const ref = readBounceAddress(secret, domain, address.address);
      if (!ref) return callback(new SmtpReply(550, `5.1.1 <${address.address}>: no such bounce address`));
      const known = refs.get(session.envelope) ?? [];
      if (known.length >= MAX_RECIPIENTS) return callback(new SmtpReply(452, '4.5.3 Too many recipients'));
      refs.set(session.envelope, [...known, ref]);
      callback();
    },
    onData(stream, session, callback) {
      readAll(stream)
        .then(async (raw) => {
          if (stream.sizeExceeded) throw new SmtpReply(552, `5.3.4 Message larger than ${MAX_MESSAGE_BYTES} bytes`);
          await handle(raw, refs.get(session.envelope) ?? []);
          callback(null, 'Accepted');
        })
        .catch((err: unknown) => {
          if (err instanceof SmtpReply) return callback(err);
          log.error({ err }, 'an inbound bounce or report could not be recorded');
          callback(new SmtpReply(451, '4.3.0 Could not record it now, try again later'));
        });
    },
  });
  server.on('error', (err) => log.warn({ err }, 'bounce listener connection error'));

  async function handle(raw: Buffer, recipients: BounceRef[]): Promise<void> {
    const report = await readInboundReport(raw);
    if (report.kind === 'none') {
      inboundReports.inc({ kind: 'unreadable' });
      log.info({ why: report.why }, 'mail to a bounce address that is neither a bounce nor a complaint');
      return;
    }
    const at = report.kind === 'complaint' ? (report.arrivalDate ?? new Date()) : new Date();
    const refs = await Promise.all(recipients.map(async ({ orgId, clientId }) => ({ orgId, ref: await recipientByReference(db, orgId, clientId) })));
    // A return path Herald signed names a log that exists, or soon will: a campaign's logs are
    // written once its turn settles, and a mail server may bounce faster than that. Until the log
    // is there the report is not taken (451): the server tries again, and nothing is lost.
    if (refs.some((r) => !r.ref)) throw new SmtpReply(451, '4.3.0 The message is not logged yet, try again later');
    for (const { orgId, ref } of refs) {
      const outcome = !ref
        ? 'unknown'
        : report.kind === 'bounce'
          ? await bounced(db, config, orgId, ref, { type: report.type, reason: report.reason, at })
          : await complained(db, orgId, ref, { feedbackType: report.feedbackType, at });
      if (outcome === 'unknown') inboundReports.inc({ kind: 'unknown' });
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.server.address() as AddressInfo).port;
  log.info({ port: bound, domain }, 'bounce listener started');
  return {
    port: bound,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A message's bytes, up to the limit (smtp-server marks the stream `sizeExceeded` past it and keeps draining). */
async function readAll(stream: SMTPServerDataStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of stream) {
    const buf = chunk as Buffer;
    if (bytes + buf.length <= MAX_MESSAGE_BYTES) chunks.push(buf);
    bytes += buf.length;
  }
  return Buffer.concat(chunks);
}
