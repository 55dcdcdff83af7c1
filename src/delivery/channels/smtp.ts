import { createHash, X509Certificate } from 'node:crypto';
import { hostname } from 'node:os';
import { checkServerIdentity, type ConnectionOptions } from 'node:tls';
import { compile } from 'html-to-text';
import nodemailer from 'nodemailer';
import type SMTPConnection from 'nodemailer/lib/smtp-connection';
import pMap from 'p-map';
import { emailSecure, type EmailSecure, type StoredCredentials } from '../credentials.js';
import { signersFor } from '../dkim.js';
import { dkimMailOptions, signWithDkimKeys } from '../dkim-sign.js';
import { LaneLimit } from '../lane-limit.js';
import { subjectOf, type BounceType, type ChannelAdapter, type DeliveryResult, type DeliveryTarget, type OutboundMessage, type SendOptions } from '../types.js';
import { isMarkup } from '../html.js';

export interface SmtpAdapterOptions {
  /** Limit for connecting and the greeting; a whole message (queueing included) gets twice this. */
  timeoutMs: number;
  /** Connections per credential set; also how many recipients of one send are in flight. */
  maxConnections: number;
  /** A credential set's pool unused for this long is closed. Default 10 minutes. */
  poolTtlMs?: number;
  /** Pools kept open at once; the least recently used is closed beyond it. Default 50. */
  maxPools?: number;
  /** The name given in EHLO (`SMTP_EHLO_NAME`, resolved by the configuration). Default: the machine's host name. */
  ehloName?: string;
  /** Local tests only: credentials without `email_secure` use `none` instead of the port's default. */
  allowInsecure?: boolean;
  /** The envelope sender of one recipient's email (its VERP bounce address); unset: the From address. */
  bounceAddress?: (orgId: string, clientId: string) => string | undefined;
}

type Transport = ReturnType<typeof nodemailer.createTransport>;

interface Pool {
  transport: Transport;
  lastUsed: number;
  inFlight: number;
  evicted: boolean;
  /** Messages handed to the transport at once: a quarter of its connections kept for transactional sends. */
  lanes: LaneLimit;
}

/** Failures that say nothing about the message itself: the next attempt may well go through. */
const CONNECTION_CODES = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'EABORT', 'ECONNREFUSED', 'ECONNRESET']);

export function createSmtpAdapter(options: SmtpAdapterOptions): ChannelAdapter {
  const poolTtlMs = options.poolTtlMs ?? 10 * 60_000;
  const maxPools = options.maxPools ?? 50;
  const maxConnections = Math.max(1, options.maxConnections);
  // Map order doubles as recency order: an entry is re-inserted on every use.
  const pools = new Map<string, Pool>();
  const ehloName = options.ehloName || hostname() || 'localhost';

  function retire(key: string, pool: Pool) {
    pools.delete(key);
    pool.evicted = true;
    // Closing a pool with queued messages would fail them; the last send out closes it instead.
    if (pool.inFlight === 0) pool.transport.close();
  }

  function acquire(host: string, port: number, secure: EmailSecure, credentials: StoredCredentials): Pool {
    const now = Date.now();
    for (const [key, pool] of pools) if (now - pool.lastUsed > poolTtlMs) retire(key, pool);

    const hash = (value: string | undefined) => createHash('sha256').update(value ?? '').digest('hex');
    const verify = credentials.email_tls_verify !== false;
    const key = [host, port, secure, verify, hash(credentials.email_tls_ca), credentials.email_user ?? '', hash(credentials.email_pass)].join('|');
    let pool = pools.get(key);
    if (pool) {
      pools.delete(key);
    } else {
      const idleTimeout = Math.min(poolTtlMs, 4 * 60_000);
      const transport = nodemailer.createTransport({
        pool: true,
        host,
        port,
        name: ehloName,
        secure: secure === 'tls',
        requireTLS: secure === 'starttls',
        ignoreTLS: secure === 'none',
        tls: tlsOptions(verify, credentials.email_tls_ca),
        maxConnections,
        idleTimeout,
        connectionTimeout: options.timeoutMs,
        greetingTimeout: options.timeoutMs,
        // The socket timeout also runs while a pooled connection waits for work: a short one would
        // drop idle connections between sends. A stalled server is caught by the per-message deadline.
        socketTimeout: Math.max(options.timeoutMs, idleTimeout + 60_000),
        // nodemailer sends without logging in when the server offers no AUTH; forcing the login
        // routes that case to `plainLogin`, which refuses to go on without credentials being used.
        ...(credentials.email_user
          ? { auth: { user: credentials.email_user, pass: credentials.email_pass ?? '' }, forceAuth: true, customAuth: { PLAIN: plainLogin } }
          : {}),
      });
      transport.use('stream', signWithDkimKeys);
      pool = { transport, lastUsed: now, inFlight: 0, evicted: false, lanes: new LaneLimit(maxConnections) };
    }
    pool.lastUsed = now;
    pools.set(key, pool);
    while (pools.size > maxPools) {
      const [oldestKey, oldest] = pools.entries().next().value as [string, Pool];
      retire(oldestKey, oldest);
    }
    return pool;
  }

  return {
    channel: 'email',
    async send(message: OutboundMessage, targets: DeliveryTarget[], credentials: StoredCredentials, sendOptions?: SendOptions): Promise<DeliveryResult[]> {
      const host = credentials.email_host ?? '';
      const network = `smtp:${host}`;
      const port = Number(credentials.email_port);
      const failAll = (error: string) => targets.map((t): DeliveryResult => ({ recipient: t.recipient, ok: false, error, retryable: false, network }));
      if (!targets.length) return [];
      if (!host || !credentials.email_from) return failAll('SMTP: missing credentials');
      if (!Number.isInteger(port) || port < 1 || port > 65535) return failAll(`SMTP: invalid port ${credentials.email_port}`);

      const secure = credentials.email_secure ?? (options.allowInsecure ? 'none' : emailSecure(credentials));
      const pool = acquire(host, port, secure, credentials);
      const dkim = dkimMailOptions(signersFor(credentials.dkim, credentials.email_from));
      const contentOf = (body: string) => (isMarkup(body) ? { html: body, text: htmlToText(body) } : { text: body });
      const shared = contentOf(message.body);
      const attachments = message.attachments?.map((a) => ({ filename: a.filename, content: a.content, contentType: a.contentType, encoding: 'base64' }));
      pool.inFlight += 1;
      // A failure of the connection's set-up (TLS, AUTH) would meet every recipient alike: after the
      // first, the others fail with it without another connection.
      let setupFailure: { error: string; retryable: boolean } | undefined;
      try {
        // One message per recipient, so no recipient sees the others' addresses.
        return await pMap(
          targets,
          async (target): Promise<DeliveryResult> => {
            if (setupFailure) return { recipient: target.recipient, ok: false, network, ...setupFailure };
            try {
              const returnPath = options.bounceAddress?.(message.orgId, target.clientId);
              const info = await pool.lanes.run(sendOptions, () => pool.transport.sendMail({
                from: { name: message.fromName, address: credentials.email_from! },
                to: target.recipient,
                ...(returnPath && { envelope: { from: returnPath, to: target.recipient } }),
                subject: subjectOf(message, target) ?? '',
                ...(target.content?.body === undefined ? shared : contentOf(target.content.body)),
                headers: target.content?.headers,
                attachments,
                ...dkim,
                // Socket timeouts reset on every byte; a server trickling replies needs a hard stop.
                signal: AbortSignal.timeout(options.timeoutMs * 2),
              }));
              return { recipient: target.recipient, ok: true, network, providerMessageId: info.messageId };
            } catch (err) {
              const { setup, ...failure } = describeFailure(err, { deadlineMs: options.timeoutMs * 2, port, secure });
              if (setup) setupFailure = failure;
              return { recipient: target.recipient, ok: false, network, ...failure };
            }
          },
          { concurrency: maxConnections },
        );
      } finally {
        pool.inFlight -= 1;
        if (pool.evicted && pool.inFlight === 0) pool.transport.close();
      }
    },
    async close() {
      for (const [key, pool] of pools) retire(key, pool);
    },
  };
}

/**
 * Verification against the organization's `email_tls_ca` when it has one. A certificate given there
 * whole is pinned: the server presenting exactly it is trusted by whatever name it is reached
 * (`127.0.0.1` for a relay whose self-signed certificate names its host); a CA's certificate vouches
 * only for the names in the certificates it signed.
 */
function tlsOptions(verify: boolean, caPem: string | undefined): ConnectionOptions {
  if (!caPem) return { rejectUnauthorized: verify };
  const pinned = new Set<string>();
  for (const pem of caPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []) {
    try {
      pinned.add(new X509Certificate(pem).fingerprint256);
    } catch {
      // Checked when stored; a certificate that does not parse pins nothing.
    }
  }
  return {
    rejectUnauthorized: verify,
    ca: caPem,
    checkServerIdentity: (name, cert) => (pinned.has(cert.fingerprint256) ? undefined : checkServerIdentity(name, cert)),
  };
}

/** The server offers no AUTH mechanism nodemailer can use while the organization set `email_user`. */
class AuthNotOffered extends Error {
  constructor() {
    super('the server offers no AUTH mechanism');
  }
}

/**
 * AUTH PLAIN, as nodemailer does it, except when the server offered no mechanism at all (the forced
 * login falls back to PLAIN then): sending without logging in would hide a misconfigured relay.
 */
async function plainLogin(ctx: SMTPConnection.CustomAuthenticationContext): Promise<void> {
  if (!ctx.authMethods.length) throw new AuthNotOffered();
  const { user, pass } = ctx.auth.credentials ?? { user: ctx.auth.user ?? '', pass: ctx.auth.pass ?? '' };
  const reply = await ctx.sendCommand(`AUTH PLAIN ${Buffer.from(`\u0000${user}\u0000${pass}`, 'utf8').toString('base64')}`);
  if (reply.status !== 235) throw new Error('Invalid login');
}

interface SmtpError {
  code?: string;
  originalCode?: string;
  command?: string;
  response?: string;
  responseCode?: number;
  message?: string;
  reason?: string;
  name?: string;
}

/** OpenSSL's verdicts on a certificate (node's `err.code`): the relay's certificate is not trusted as configured. */
const CERTIFICATE_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_CHAIN_TOO_LONG',
  'INVALID_CA',
  'INVALID_PURPOSE',
]);

/**
 * OpenSSL's reason for refusing a certificate, without the hint newer Node versions append to it
 * (`; if the root CA is installed locally, try running Node.js with --use-system-ca`): the remedy
 * here is the organization's own setting, named after it, and the reason reads the same on every Node.
 */
const certificateReason = (message = '') => message.replace(/;\s*if the root CA is installed locally.*$/s, '').trim();

/** SMTP replies that ask the sender to slow down (RFC 5321 421, 450, 451, 452). */
const THROTTLING_REPLIES = new Set([421, 450, 451, 452]);

/** Why a message failed; `setup` when it was the connection's TLS or AUTH, not the message or its recipient. */
function describeFailure(
  err: unknown,
  context: { deadlineMs: number; port: number; secure: EmailSecure },
): { error: string; retryable: boolean; throttled?: boolean; setup?: boolean; bounce?: BounceType } {
  const e = (err ?? {}) as SmtpError;
  const code = e.originalCode ?? e.code ?? '';
  // Configuration errors: every attempt would meet the same certificate or the same server, so
  // they are final, and the reason says which credential changes the outcome.
  if (CERTIFICATE_CODES.has(code)) {
    return { error: `TLS: ${certificateReason(e.message)}; set email_tls_ca or email_tls_verify`, retryable: false, setup: true };
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return { error: `TLS: ${e.message?.trim()}; set email_host to a name the certificate lists, or email_tls_verify`, retryable: false, setup: true };
  }
  if (code.startsWith('ERR_SSL_')) {
    const hint = context.secure === 'tls' ? `is port ${context.port} implicit TLS? if not, set email_secure to starttls` : 'check email_secure';
    return { error: `TLS: ${e.reason ?? e.message}; ${hint}`, retryable: false, setup: true };
  }
  if (e.code === 'ETLS' && e.command === 'STARTTLS' && e.response) {
    return { error: `TLS: the server does not offer STARTTLS (answered ${e.response}); email_secure ${context.secure} does not send in clear`, retryable: false, setup: true };
  }
  if (err instanceof AuthNotOffered) {
    return { error: 'SMTP: email_user is set but the server offers no AUTH (PLAIN, LOGIN or CRAM-MD5); not sending unauthenticated', retryable: false, setup: true };
  }
  if (typeof e.responseCode === 'number' && e.response) {
    // A refused login is the same for every message: trying it again per recipient only looks like an attack.
    return {
      error: e.response,
      retryable: e.responseCode >= 400 && e.responseCode < 500,
      // "Too many connections", "try again later", "insufficient system storage": the server asks to slow down.
      throttled: e.code !== 'EAUTH' && THROTTLING_REPLIES.has(e.responseCode),
      setup: e.code === 'EAUTH',
      bounce: recipientRefused(e.command, e.responseCode, e.response),
    };
  }
  // The hard deadline only fires once the server has greeted us (connect and greeting have their
  // own, retryable, timeouts): the message may already be accepted, and sending it again could
  // deliver it twice. Final, like any answer we cannot read.
  if (e.code === 'EABORT' || e.name === 'AbortError' || e.name === 'TimeoutError') {
    return { error: `SMTP: no answer within ${context.deadlineMs} ms; the message may have been delivered`, retryable: false };
  }
  return { error: `SMTP: ${e.message ?? String(err)}`, retryable: CONNECTION_CODES.has(e.code ?? '') };
}

/** An enhanced status code (RFC 3463) in a reply. */
const ENHANCED_STATUS = /\b([245])\.(\d{1,3})\.(\d{1,3})\b/;

/**
 * A refusal at `RCPT TO` that is about the recipient's address or mailbox, a bounce given at once:
 * permanent (5xx) is hard, temporary (4xx) soft. The enhanced code decides when there is one
 * (X.1.1-3, X.1.6, X.1.10: no such address; X.2.x: the mailbox); without one, 550, 551 and 553.
 * Refusals about the sender, relaying or policy (X.7.x) are not the recipient's and count for nothing.
 */
function recipientRefused(command: string | undefined, code: number, response: string): BounceType | undefined {
  if (!command || !/^RCPT TO/i.test(command)) return undefined;
  const enhanced = ENHANCED_STATUS.exec(response);
  if (enhanced) {
    const [, klass, subject, detail] = enhanced;
    const aboutRecipient = (subject === '1' && ['1', '2', '3', '6', '10'].includes(detail!)) || subject === '2';
    if (!aboutRecipient) return undefined;
    return klass === '5' ? 'hard' : klass === '4' ? 'soft' : undefined;
  }
  return [550, 551, 553].includes(code) ? 'hard' : undefined;
}

/**
 * The plain-text alternative of an HTML body (html-to-text): every named entity decoded, a link's
 * URL kept after its text, lists as `- item` / ` 1. item`, headings in their own case on lines of
 * their own, layout tables read as blocks, images and scripts left out.
 */
export const htmlToText: (html: string) => string = compile({
  wordwrap: 78,
  selectors: [
    { selector: 'a', options: { hideLinkHrefIfSameAsText: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'ul', options: { itemPrefix: '- ' } },
    ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
  ],
});
