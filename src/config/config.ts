import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import path from 'node:path';
import { z } from 'zod';

/** Parses `24h`, `15m`, `3600` (seconds) and the like, as jsonwebtoken's `expiresIn` does. */
const DURATION = /^\d+(\s*(ms|s|m|h|d|w|y))?$/i;

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const intIn = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const url = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test'], { error: 'must be development, production or test' }).default('development'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: intIn(0, 65535).default(4000),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('./.data'),
  DATABASE_POOL_MAX: intIn(1, 1000).default(10),
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  JWT_EXPIRES_IN: z.string().regex(DURATION, 'must be a duration such as 24h, 30m or 3600').default('24h'),
  CREDENTIALS_KEY: z
    .string()
    .refine((v) => decodeKey(v) !== null, 'must be 32 bytes, written as 64 hex characters or base64')
    .optional(),
  DELIVERY_MODE: z.enum(['sandbox', 'live'], { error: 'must be sandbox or live' }).optional(),
  SMS_API_URL: url.default('https://sms.textsms.co.ke'),
  WHATSAPP_API_URL: url.default('https://graph.facebook.com/v21.0'),
  AFRICASTALKING_API_URL: url.default('https://api.africastalking.com'),
  TWILIO_API_URL: url.default('https://api.twilio.com'),
  SIGNUP_CREDITS: z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative number').transform(Number).default(100),
  CAMPAIGN_INLINE_LIMIT: intIn(0, 100000).default(100),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    error: 'must be one of fatal, error, warn, info, debug, trace, silent',
  }).default('info'),
  TRUST_PROXY: bool.default(false),
  BLOCK_PRIVATE_HOSTS: bool.default(false),
  BCRYPT_ROUNDS: intIn(4, 15).default(10),
  COST_SMS_SEGMENT: z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative number').transform(Number).default(1),
  COST_EMAIL: z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative number').transform(Number).default(0.5),
  COST_WHATSAPP: z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative number').transform(Number).default(1),
  PROVIDER_TIMEOUT_MS: intIn(100, 120000).default(10000),
  PROVIDER_CIRCUIT_RESET_MS: intIn(100, 3600000).default(30000),
  PROVIDER_CIRCUIT_VOLUME: intIn(1, 1000).default(2),
  DNS_SERVERS: z.string().trim().optional(),
  SEND_CONCURRENCY: intIn(1, 200).default(8),
  DEFAULT_SEND_RATE: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be messages a second, such as 50 or 0.5')
    .transform(Number)
    .refine((v) => v >= 0.1 && v <= 10000, 'must be between 0.1 and 10000 messages a second')
    .optional(),
  SANDBOX_LATENCY_MS: intIn(0, 60000).default(0),
  QUOTA_REQUESTS_PER_HOUR: intIn(0, 100_000_000).default(0),
  QUOTA_MESSAGES_PER_DAY: intIn(0, 100_000_000).default(0),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
  SEND_ABANDON_SECONDS: intIn(1, 86400).default(600),
  WORKERS: bool.default(true),
  WORKER_CONCURRENCY: intIn(1, 100).default(4),
  AUTH_CACHE_MS: intIn(0, 60_000).default(2000),
  PUBLIC_URL: url.optional(),
  SMTP_EHLO_NAME: z
    .string()
    .regex(/^([A-Za-z0-9-]+\.)*[A-Za-z0-9-]+$|^\[(IPv6:)?[0-9A-Fa-f:.]+\]$/, 'must be a host name or an address literal such as [192.0.2.1]')
    .max(253)
    .optional(),
  CAMPAIGN_LEASE_SECONDS: intIn(1, 3600).default(60),
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\d+(,\d+)*$/, 'must be seconds between attempts, comma-separated, such as 5,300,1800')
    .transform((v) => v.split(',').map(Number))
    .refine((xs) => xs.length <= 20 && xs.every((x) => x >= 1 && x <= 7 * 86400), 'must be at most 20 delays of 1 s to 7 days each')
    .default([5, 300, 1800, 7200, 18000, 36000, 36000]),
  WEBHOOK_TIMEOUT_MS: intIn(100, 60000).default(15000),
  METRICS_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces (it is sent in an Authorization header)')
    .optional(),
  METRICS_PORT: intIn(0, 65535).optional(),
  BOUNCE_DOMAIN: z
    .string()
    .trim()
    .toLowerCase()
    .regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'must be a domain name such as bounces.example.com')
    .optional(),
  BOUNCE_SMTP_PORT: intIn(0, 65535).optional(),
  BOUNCE_SMTP_HOST: z.string().min(1).optional(),
  BOUNCE_SOFT_LIMIT: intIn(1, 100).default(3),
  BOUNCE_SOFT_DAYS: intIn(1, 365).default(30),
  CLOSURE_GRACE_DAYS: intIn(0, 90).default(7),
});

export interface Config {
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  databaseUrl: string | undefined;
  dataDir: string;
  poolMax: number;
  jwtSecret: string;
  jwtExpiresIn: string;
  credentialsKey: Buffer;
  deliveryMode: 'sandbox' | 'live';
  smsApiUrl: string;
  whatsappApiUrl: string;
  /** Africa's Talking's API host (its sandbox is `https://api.sandbox.africastalking.com`). */
  africasTalkingApiUrl: string;
  /** Twilio's REST API host. */
  twilioApiUrl: string;
  signupCredits: number;
  campaignInlineLimit: number;
  logLevel: string;
  trustProxy: boolean;
  blockPrivateHosts: boolean;
  bcryptRounds: number;
  costs: { smsSegment: number; email: number; whatsapp: number };
  providerTimeoutMs: number;
  /** How long a provider's open circuit stays open before one send probes it. */
  providerCircuitResetMs: number;
  /** Calls to a provider within 10 s before half of them failing opens its circuit. */
  providerCircuitVolume: number;
  /** The DNS servers DKIM records are checked with (`host` or `host:port`); empty: the system's. */
  dnsServers: string[];
  sendConcurrency: number;
  /** The rate of a channel credential that sets none and whose provider has no default, in messages a second (unset: unpaced). */
  defaultSendRate: number | undefined;
  /** Simulated provider latency per sandbox call, for load and fault tests. */
  sandboxLatencyMs: number;
  /** Per-organization limits; 0 turns a limit off (the default). */
  quotas: { requestsPerHour: number; messagesPerDay: number; redisUrl?: string };
  /** An ad hoc send unsettled this long is taken for dead (its process killed) and settled as failed. */
  sendAbandonSeconds: number;
  /** Run queue workers inside this process (`npm start`); `npm run worker` runs only workers. */
  workers: boolean;
  workerConcurrency: number;
  /** How long a claimed campaign batch may stay unsettled before another worker takes it over. */
  campaignLeaseSeconds: number;
  /** Seconds before each retry of a webhook delivery (platform.md: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h). */
  webhookRetrySchedule: number[];
  /** The limit of one webhook attempt, connecting to reading the answer. */
  webhookTimeoutMs: number;
  /** When set, `GET /metrics` on the API port answers to `Authorization: Bearer <metricsToken>`. */
  metricsToken: string | undefined;
  /** When set, a listener of its own on this port (at `host`) serves `/metrics` without a credential. */
  metricsPort: number | undefined;
  /** How long authentication may reuse a user or API-key row (0: re-read on every request). */
  authCacheMs: number;
  /** The base of links Herald puts in messages; default `http://localhost:<PORT>`. */
  publicUrl: string;
  /** The name Herald gives in SMTP's EHLO (see `ehloName`). */
  smtpEhloName: string;
  /**
   * Bounces and complaints: the domain of every email's envelope sender (a VERP address naming its
   * recipient), the port and interface Herald's own SMTP listener for it answers on (unset: no
   * listener in this process), and how many temporary failures of one address within how many days
   * suppress it.
   */
  bounces: { domain: string | undefined; port: number | undefined; host: string; softLimit: number; softDays: number };
  /** Days between an admin's closing of the organization and the deletion of its rows (0: at once); cancellable until then. */
  closureGraceDays: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function decodeKey(value: string): Buffer | null {
  const hex = /^[0-9a-f]{64}$/i.test(value) ? Buffer.from(value, 'hex') : null;
  if (hex) return hex;
  const b64 = Buffer.from(value, 'base64');
  return b64.length === 32 ? b64 : null;
}

/**
 * Reads the configuration from the environment. Outside production, a missing JWT secret or
 * credentials key is generated once and kept in `<DATA_DIR>/secrets.json`, so tokens and stored
 * credentials survive restarts of a laptop install; production refuses to start without them.
 */
export function loadConfig(source: NodeJS.ProcessEnv = process.env): Config {
  const raw = Object.fromEntries(
    Object.keys(envSchema.shape).flatMap((k) => (source[k] === undefined || source[k] === '' ? [] : [[k, source[k]]])),
  );
  const parsed = envSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${String(i.path[0])} ${i.message}`));
  }
  const env = parsed.data;
  const production = env.NODE_ENV === 'production';
  const missing: string[] = [];
  if (production && !env.JWT_SECRET) missing.push('JWT_SECRET is required when NODE_ENV=production');
  if (production && !env.CREDENTIALS_KEY) missing.push('CREDENTIALS_KEY is required when NODE_ENV=production');
  if (env.METRICS_PORT !== undefined && env.METRICS_PORT !== 0 && env.METRICS_PORT === env.PORT) missing.push('METRICS_PORT must differ from PORT');
  if (missing.length) throw new ConfigError(missing);

  const generated = production ? null : localSecrets(env.DATA_DIR, !env.JWT_SECRET || !env.CREDENTIALS_KEY);
  return {
    env: env.NODE_ENV,
    host: env.HOST,
    port: env.PORT,
    databaseUrl: env.DATABASE_URL,
    dataDir: path.resolve(env.DATA_DIR),
    poolMax: env.DATABASE_POOL_MAX,
    jwtSecret: env.JWT_SECRET ?? generated!.jwtSecret,
    jwtExpiresIn: env.JWT_EXPIRES_IN,
    credentialsKey: decodeKey(env.CREDENTIALS_KEY ?? generated!.credentialsKey)!,
    deliveryMode: env.DELIVERY_MODE ?? (production ? 'live' : 'sandbox'),
    smsApiUrl: env.SMS_API_URL.replace(/\/+$/, ''),
    whatsappApiUrl: env.WHATSAPP_API_URL.replace(/\/+$/, ''),
    africasTalkingApiUrl: env.AFRICASTALKING_API_URL.replace(/\/+$/, ''),
    twilioApiUrl: env.TWILIO_API_URL.replace(/\/+$/, ''),
    signupCredits: env.SIGNUP_CREDITS,
    campaignInlineLimit: env.CAMPAIGN_INLINE_LIMIT,
    logLevel: env.LOG_LEVEL,
    trustProxy: env.TRUST_PROXY,
    blockPrivateHosts: env.BLOCK_PRIVATE_HOSTS,
    bcryptRounds: env.BCRYPT_ROUNDS,
    costs: { smsSegment: env.COST_SMS_SEGMENT, email: env.COST_EMAIL, whatsapp: env.COST_WHATSAPP },
    providerTimeoutMs: env.PROVIDER_TIMEOUT_MS,
    providerCircuitResetMs: env.PROVIDER_CIRCUIT_RESET_MS,
    providerCircuitVolume: env.PROVIDER_CIRCUIT_VOLUME,
    dnsServers: env.DNS_SERVERS ? env.DNS_SERVERS.split(',').map((s) => s.trim()).filter(Boolean) : [],
    sendConcurrency: env.SEND_CONCURRENCY,
    defaultSendRate: env.DEFAULT_SEND_RATE,
    sandboxLatencyMs: env.SANDBOX_LATENCY_MS,
    quotas: { requestsPerHour: env.QUOTA_REQUESTS_PER_HOUR, messagesPerDay: env.QUOTA_MESSAGES_PER_DAY, redisUrl: env.REDIS_URL },
    sendAbandonSeconds: env.SEND_ABANDON_SECONDS,
    workers: env.WORKERS,
    workerConcurrency: env.WORKER_CONCURRENCY,
    campaignLeaseSeconds: env.CAMPAIGN_LEASE_SECONDS,
    webhookRetrySchedule: env.WEBHOOK_RETRY_SCHEDULE,
    webhookTimeoutMs: env.WEBHOOK_TIMEOUT_MS,
    metricsToken: env.METRICS_TOKEN,
    metricsPort: env.METRICS_PORT,
    authCacheMs: env.AUTH_CACHE_MS,
    publicUrl: (env.PUBLIC_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ''),
    smtpEhloName: ehloName(env.SMTP_EHLO_NAME, env.PUBLIC_URL),
    bounces: { domain: env.BOUNCE_DOMAIN, port: env.BOUNCE_SMTP_PORT, host: env.BOUNCE_SMTP_HOST ?? env.HOST, softLimit: env.BOUNCE_SOFT_LIMIT, softDays: env.BOUNCE_SOFT_DAYS },
    closureGraceDays: env.CLOSURE_GRACE_DAYS,
  };
}

/**
 * The name Herald introduces itself with to SMTP servers: `SMTP_EHLO_NAME`, else the host of an
 * explicit `PUBLIC_URL`, else the machine's host name. Never a loopback address: strict servers
 * refuse `[127.0.0.1]`, nodemailer's own fallback for a host name without a dot.
 */
export function ehloName(configured: string | undefined, publicUrl: string | undefined, machine: string = hostname()): string {
  if (configured) return configured;
  const host = publicUrl ? new URL(publicUrl).hostname.replace(/^\[|\]$/g, '') : '';
  const loopback = host === 'localhost' || host === '::1' || /^127\./.test(host);
  if (host && !loopback) return isIP(host) === 6 ? `[IPv6:${host}]` : isIP(host) === 4 ? `[${host}]` : host;
  return machine || 'localhost';
}

function localSecrets(dataDir: string, needed: boolean): { jwtSecret: string; credentialsKey: string } | null {
  if (!needed) return null;
  const file = path.resolve(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8'));
  const secrets = { jwtSecret: randomBytes(48).toString('base64url'), credentialsKey: randomBytes(32).toString('hex') };
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets;
}
