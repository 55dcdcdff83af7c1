import { createHash } from 'node:crypto';
import nodemailer from 'nodemailer';
import pMap from 'p-map';
import type { StoredCredentials } from '../credentials.js';
import type { ChannelAdapter, DeliveryResult, DeliveryTarget, OutboundMessage } from '../types.js';

export interface SmtpAdapterOptions {
  /** Limit for connecting and the greeting; a whole message (queueing included) gets twice this. */
  timeoutMs: number;
  /** Connections per credential set; also how many recipients of one send are in flight. */
  maxConnections: number;
  /** A credential set's pool unused for this long is closed. Default 10 minutes. */
  poolTtlMs?: number;
  /** Pools kept open at once; the least recently used is closed beyond it. Default 50. */
  maxPools?: number;
  /** Local tests only: never try STARTTLS. Production keeps nodemailer's opportunistic TLS. */
  allowInsecure?: boolean;
}

type Transport = ReturnType<typeof nodemailer.createTransport>;

interface Pool {
  transport: Transport;
  lastUsed: number;
  inFlight: number;
  evicted: boolean;
}

/** Failures that say nothing about the message itself: the next attempt may well go through. */
const CONNECTION_CODES = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'EABORT', 'ECONNREFUSED', 'ECONNRESET']);

export function createSmtpAdapter(options: SmtpAdapterOptions): ChannelAdapter {
  const poolTtlMs = options.poolTtlMs ?? 10 * 60_000;
  const maxPools = options.maxPools ?? 50;
  const maxConnections = Math.max(1, options.maxConnections);
  // Map order doubles as recency order: an entry is re-inserted on every use.
  const pools = new Map<string, Pool>();

  function retire(key: string, pool: Pool) {
    pools.delete(key);
    pool.evicted = true;
    // Closing a pool with queued messages would fail them; the last send out closes it instead.
    if (pool.inFlight === 0) pool.transport.close();
  }

  function acquire(host: string, port: number, credentials: StoredCredentials): Pool {
    const now = Date.now();
    for (const [key, pool] of pools) if (now - pool.lastUsed > poolTtlMs) retire(key, pool);

    const passHash = createHash('sha256').update(credentials.email_pass ?? '').digest('hex');
    const key = [host, port, credentials.email_user ?? '', passHash].join('|');
    let pool = pools.get(key);
    if (pool) {
      pools.delete(key);
    } else {
      const idleTimeout = Math.min(poolTtlMs, 4 * 60_000);
      const transport = nodemailer.createTransport({
        pool: true,
        host,
        port,
        secure: port === 465,
        ignoreTLS: options.allowInsecure === true,
        maxConnections,
        idleTimeout,
        connectionTimeout: options.timeoutMs,
        greetingTimeout: options.timeoutMs,
        // The socket timeout also runs while a pooled connection waits for work: a short one would
        // drop idle connections between sends. A stalled server is caught by the per-message deadline.
        socketTimeout: Math.max(options.timeoutMs, idleTimeout + 60_000),
        ...(credentials.email_user ? { auth: { user: credentials.email_user, pass: credentials.email_pass ?? '' } } : {}),
      });
      pool = { transport, lastUsed: now, inFlight: 0, evicted: false };
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
    async send(message: OutboundMessage, targets: DeliveryTarget[], credentials: StoredCredentials): Promise<DeliveryResult[]> {
      const host = credentials.email_host ?? '';
      const network = `smtp:${host}`;
      const port = Number(credentials.email_port);
      const failAll = (error: string) => targets.map((t): DeliveryResult => ({ recipient: t.recipient, ok: false, error, retryable: false, network }));
      if (!targets.length) return [];
      if (!host || !credentials.email_from) return failAll('SMTP: missing credentials');
      if (!Number.isInteger(port) || port < 1 || port > 65535) return failAll(`SMTP: invalid port ${credentials.email_port}`);

      const pool = acquire(host, port, credentials);
      const content = isMarkup(message.body) ? { html: message.body, text: htmlToText(message.body) } : { text: message.body };
      const attachments = message.attachments?.map((a) => ({ filename: a.filename, content: a.content, contentType: a.contentType, encoding: 'base64' }));
      pool.inFlight += 1;
      try {
        // One message per recipient, so no recipient sees the others' addresses.
        return await pMap(
          targets,
          async (target): Promise<DeliveryResult> => {
            try {
              const info = await pool.transport.sendMail({
                from: { name: message.fromName, address: credentials.email_from! },
                to: target.recipient,
                subject: message.subject ?? '',
                ...content,
                attachments,
                // Socket timeouts reset on every byte; a server trickling replies needs a hard stop.
                signal: AbortSignal.timeout(options.timeoutMs * 2),
              });
              return { recipient: target.recipient, ok: true, network, providerMessageId: info.messageId };
            } catch (err) {
              return { recipient: target.recipient, ok: false, network, ...describeFailure(err, options.timeoutMs * 2) };
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

interface SmtpError {
  code?: string;
  response?: string;
  responseCode?: number;
  message?: string;
  name?: string;
}

function describeFailure(err: unknown, deadlineMs: number): { error: string; retryable: boolean } {
  const e = (err ?? {}) as SmtpError;
  if (typeof e.responseCode === 'number' && e.response) {
    return { error: e.response, retryable: e.responseCode >= 400 && e.responseCode < 500 };
  }
  // The hard deadline only fires once the server has greeted us (connect and greeting have their
  // own, retryable, timeouts): the message may already be accepted, and sending it again could
  // deliver it twice. Final, like any answer we cannot read.
  if (e.code === 'EABORT' || e.name === 'AbortError' || e.name === 'TimeoutError') {
    return { error: `SMTP: no answer within ${deadlineMs} ms; the message may have been delivered`, retryable: false };
  }
  return { error: `SMTP: ${e.message ?? String(err)}`, retryable: CONNECTION_CODES.has(e.code ?? '') };
}

/** Any opening or closing tag, `<br/>` or a comment; a bare `a < b` is not markup. */
const MARKUP = /<\/?[a-z][a-z0-9-]*(\s[^<>]*)?\/?>|<!--/i;

export function isMarkup(body: string): boolean {
  return MARKUP.test(body);
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** The plain-text alternative of an HTML body: enough for a text-only client, not a renderer. */
export function htmlToText(html: string): string {
  return html
    .replace(/<(script|style|head)\b[\s\S]*?<\/\1\s*>/gi, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/(p|div|h[1-6]|li|tr|table|blockquote|section|article|header|footer)\s*>/gi, '\n')
    .replace(/<li\b[^>]*>/gi, '- ')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, name: string) => {
      if (name[0] === '#') {
        const point = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
        return point > 0 && point <= 0x10ffff ? String.fromCodePoint(point) : entity;
      }
      return ENTITIES[name.toLowerCase()] ?? entity;
    })
    .replace(/[^\S\n]+/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}
