import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { ehloName } from '../../src/config/config.js';
import { createSmtpAdapter } from '../../src/delivery/channels/smtp.js';
import { emailSecure, type StoredCredentials } from '../../src/delivery/credentials.js';
import type { ChannelAdapter, DeliveryResult, OutboundMessage } from '../../src/delivery/types.js';
import type { Herald } from '../../src/server.js';
import { expectError, expectValidation } from '../helpers/expect.js';
import { heraldWithOrg, signupOrg, type Client, type Org } from '../helpers/herald.js';

/*
 * Email against servers that speak TLS the way real relays do (issue 20): an `smtp-server` with
 * STARTTLS (or implicit TLS) and a self-signed certificate made here with openssl, the
 * organization's `email_secure` / `email_tls_verify` / `email_tls_ca`, the EHLO name, AUTH that is
 * configured but not offered, and the plain-text alternative. Assertions are on what the server
 * received.
 */

const SELF_SIGNED = 'TLS: self-signed certificate; set email_tls_ca or email_tls_verify';

interface Certificate {
  key: string;
  cert: string;
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(...args: string[]) {
  execFileSync('openssl', args, { stdio: 'ignore' });
}

/** A self-signed certificate as Debian's exim4 makes one: a common name, no alternative names. */
function selfSigned(dir: string, name: string, commonName: string): Certificate {
  const [key, cert] = [path.join(dir, `${name}.key`), path.join(dir, `${name}.crt`)];
  openssl('req', '-x509', ...EC_KEY, '-days', '2', '-subj', `/CN=${commonName}`, '-keyout', key, '-out', cert);
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

/** A certificate for `relay.herald.test` and 127.0.0.1 (not `localhost`) signed by `authority`. */
function signedBy(dir: string, authority: { key: string; cert: string }): Certificate {
  const [key, csr, cert, ext] = ['signed.key', 'signed.csr', 'signed.crt', 'signed.ext'].map((f) => path.join(dir, f));
  writeFileSync(ext, 'subjectAltName=DNS:relay.herald.test,IP:127.0.0.1\n');
  openssl('req', '-new', ...EC_KEY, '-subj', '/CN=relay.herald.test', '-keyout', key, '-out', csr);
  openssl('x509', '-req', '-in', csr, '-CA', authority.cert, '-CAkey', authority.key, '-CAcreateserial', '-days', '2', '-extfile', ext, '-out', cert);
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

interface Received {
  envelopeFrom: string | false;
  envelopeTo: string[];
  /** Whether the session was over TLS when the message came. */
  secure: boolean;
  /** The name the client gave in EHLO/HELO. */
  ehlo: string;
  user: string | undefined;
  subject: string | undefined;
  text: string | undefined;
  html: string | false;
}

interface TestServer {
  port: number;
  messages: Received[];
  /** TCP connections accepted: a failure tried once opens one. */
  connections: number;
  stop(): Promise<void>;
}

/**
 * An SMTP server on 127.0.0.1: `starttls` offers STARTTLS with the certificate, `implicit` speaks
 * TLS from the first byte, `plain` never offers TLS. `auth` offers AUTH (after TLS only, like most
 * relays, when TLS is on); without it, AUTH is not offered at all.
 */
async function startServer(tls: 'starttls' | 'implicit' | 'plain', certificate: Certificate, auth?: { user: string; pass: string }): Promise<TestServer> {
  const messages: Received[] = [];
  const state = { connections: 0 };
  const disabled = [...(tls === 'plain' ? ['STARTTLS'] : []), ...(auth ? [] : ['AUTH'])];
  const options: SMTPServerOptions = {
    ...(tls === 'plain' ? {} : { key: certificate.key, cert: certificate.cert }),
    secure: tls === 'implicit',
    disabledCommands: disabled,
    authOptional: true,
    allowInsecureAuth: tls === 'plain',
    logger: false,
    closeTimeout: 50,
    onConnect(_session, callback) {
      state.connections += 1;
      callback();
    },
    onAuth(given, _session, callback) {
      if (given.username !== auth?.user || given.password !== auth?.pass) {
        return callback(Object.assign(new Error('5.7.8 Authentication credentials invalid'), { responseCode: 535 }));
      }
      callback(null, { user: given.username });
    },
    onData(stream, session, callback) {
      const envelopeFrom: string | false = session.envelope.mailFrom ? session.envelope.mailFrom.address : false;
      const envelopeTo = session.envelope.rcptTo.map((r) => r.address);
      const user = typeof session.user === 'string' ? session.user : undefined;
      const received = { envelopeFrom, envelopeTo, secure: session.secure, ehlo: session.hostNameAppearsAs, user };
      simpleParser(stream)
        .then((parsed) => {
          messages.push({ ...received, subject: parsed.subject, text: parsed.text, html: parsed.html });
          callback();
        })
        .catch((err: Error) => callback(err));
    },
  };
  const server = new SMTPServer(options);
  // A client that rejects the certificate resets the handshake; the server only reports it.
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.server.address() as AddressInfo).port,
    messages,
    get connections() {
      return state.connections;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const message = (extra: Partial<OutboundMessage> = {}): OutboundMessage => ({
  channel: 'email',
  orgId: randomUUID(),
  fromName: 'Acme Ltd',
  subject: 'Your order',
  body: 'Your order has shipped',
  ...extra,
});
const target = (recipient = 'ada@example.com') => [{ recipient, clientId: randomUUID() }];

let dir: string;
/** The relay's own self-signed certificate, naming a host that is not how Herald reaches it. */
let relay: Certificate;
let stranger: Certificate;
let authority: Certificate;
let signed: Certificate;
let servers: TestServer[] = [];
let smtp: ChannelAdapter;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'herald-smtp-tls-'));
  relay = selfSigned(dir, 'relay', 'mail.internal');
  stranger = selfSigned(dir, 'stranger', 'mail.internal');
  authority = selfSigned(dir, 'authority', 'Herald Test CA');
  signed = signedBy(dir, { key: path.join(dir, 'authority.key'), cert: path.join(dir, 'authority.crt') });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeEach(() => {
  smtp = createSmtpAdapter({ timeoutMs: 2000, maxConnections: 2, ehloName: 'mail.herald.test' });
});
afterEach(async () => {
  await smtp.close?.();
  await Promise.all(servers.map((s) => s.stop()));
  servers = [];
});

async function server(tls: 'starttls' | 'implicit' | 'plain', auth?: { user: string; pass: string }, certificate = relay) {
  const s = await startServer(tls, certificate, auth);
  servers.push(s);
  return s;
}

const creds = (s: TestServer, extra: StoredCredentials = {}): StoredCredentials => ({
  email_host: '127.0.0.1',
  email_port: String(s.port),
  email_from: 'noreply@herald.test',
  ...extra,
});

async function sendOne(s: TestServer, extra: StoredCredentials = {}, body?: string): Promise<DeliveryResult> {
  const [result] = await smtp.send(message(body ? { body } : {}), target(), creds(s, extra));
  return result!;
}

describe('TLS modes against a relay with a self-signed certificate', () => {
  test('the default mode away from 465 is starttls-if-offered; 465 is implicit TLS; a mode set wins', () => {
    expect(emailSecure({ email_port: '587' })).toBe('starttls-if-offered');
    expect(emailSecure({ email_port: '25' })).toBe('starttls-if-offered');
    expect(emailSecure({ email_port: '465' })).toBe('tls');
    expect(emailSecure({ email_port: '465', email_secure: 'starttls' })).toBe('starttls');
  });

  test('starttls-if-offered with verification: a final failure with a clear reason, one connection, nothing delivered', async () => {
    const s = await server('starttls');
    const result = await sendOne(s);
    expect(result).toEqual({ recipient: 'ada@example.com', ok: false, retryable: false, network: 'smtp:127.0.0.1', error: SELF_SIGNED });
    expect(s.connections).toBe(1);
    expect(s.messages).toHaveLength(0);
  });

  test('several recipients: each gets the reason, and the connection is not tried again for each', async () => {
    const s = await server('starttls');
    const list = ['a', 'b', 'c', 'd', 'e'].map((n) => target(`${n}@example.com`)[0]!);
    const results = await smtp.send(message(), list, creds(s));
    expect(results.map((r) => [r.recipient, r.ok, r.retryable, r.error])).toEqual(list.map((t) => [t.recipient, false, false, SELF_SIGNED]));
    // At most the two connections of the pool were opening when the first failure came.
    expect(s.connections).toBeLessThanOrEqual(2);
  });

  test('with email_tls_ca set to the relay certificate it sends over TLS, though the certificate names another host', async () => {
    const s = await server('starttls');
    expect(await sendOne(s, { email_tls_ca: relay.cert })).toMatchObject({ ok: true });
    expect(s.messages).toEqual([expect.objectContaining({ envelopeTo: ['ada@example.com'], secure: true, subject: 'Your order' })]);
  });

  test('a CA the certificate does not chain to fails the same way', async () => {
    const s = await server('starttls');
    expect(await sendOne(s, { email_tls_ca: stranger.cert })).toMatchObject({ ok: false, retryable: false, error: SELF_SIGNED });
    expect(s.messages).toHaveLength(0);
  });

  test('a CA certificate vouches for the names its certificate lists only; without it the chain is unverified', async () => {
    const s = await server('starttls', undefined, signed);
    expect(await sendOne(s, { email_tls_ca: authority.cert })).toMatchObject({ ok: true });
    expect(s.messages).toEqual([expect.objectContaining({ secure: true })]);

    const [other] = await smtp.send(message(), target(), creds(s, { email_host: 'localhost', email_tls_ca: authority.cert }));
    expect(other).toMatchObject({ ok: false, retryable: false });
    expect(other!.error).toMatch(/^TLS: Hostname\/IP does not match certificate's altnames: .*localhost.*; set email_host to a name the certificate lists, or email_tls_verify$/);

    expect(await sendOne(s)).toMatchObject({ ok: false, retryable: false, error: 'TLS: unable to verify the first certificate; set email_tls_ca or email_tls_verify' });
    expect(s.messages).toHaveLength(1);
  });

  test('with verification off it sends, still over TLS', async () => {
    const s = await server('starttls');
    expect(await sendOne(s, { email_tls_verify: false })).toMatchObject({ ok: true });
    expect(s.messages).toEqual([expect.objectContaining({ secure: true })]);
  });

  test('starttls sends over TLS where offered, and refuses a server without STARTTLS: final, nothing sent in clear', async () => {
    const offered = await server('starttls');
    expect(await sendOne(offered, { email_secure: 'starttls', email_tls_ca: relay.cert })).toMatchObject({ ok: true });
    expect(offered.messages).toEqual([expect.objectContaining({ secure: true })]);

    const plain = await server('plain');
    const refused = await sendOne(plain, { email_secure: 'starttls' });
    expect(refused).toMatchObject({ ok: false, retryable: false });
    expect(refused.error).toMatch(/^TLS: the server does not offer STARTTLS \(answered 5\d\d .*\); email_secure starttls does not send in clear$/);
    expect(plain.messages).toHaveLength(0);
  });

  test('starttls-if-offered sends in clear to a server that offers no STARTTLS; none never tries TLS', async () => {
    const plain = await server('plain');
    expect(await sendOne(plain)).toMatchObject({ ok: true });
    const offered = await server('starttls');
    expect(await sendOne(offered, { email_secure: 'none' })).toMatchObject({ ok: true });
    expect([...plain.messages, ...offered.messages].map((m) => m.secure)).toEqual([false, false]);
  });

  test('implicit TLS on a secure server: sent with the CA, a clear final failure without it; tls against a plain port fails final', async () => {
    const secure = await server('implicit');
    expect(await sendOne(secure, { email_secure: 'tls', email_tls_ca: relay.cert })).toMatchObject({ ok: true });
    expect(secure.messages).toEqual([expect.objectContaining({ secure: true })]);
    expect(await sendOne(secure, { email_secure: 'tls' })).toMatchObject({ ok: false, retryable: false, error: SELF_SIGNED });

    const plain = await server('plain');
    const wrong = await sendOne(plain, { email_secure: 'tls' });
    expect(wrong).toMatchObject({ ok: false, retryable: false });
    expect(wrong.error).toMatch(new RegExp(`^TLS: .+; is port ${plain.port} implicit TLS\\? if not, set email_secure to starttls$`));
  });
});

describe('EHLO name', () => {
  test('the server sees the configured name, and the machine host name by default, never [127.0.0.1]', async () => {
    const s = await server('plain');
    await sendOne(s);
    const machine = createSmtpAdapter({ timeoutMs: 2000, maxConnections: 1 });
    try {
      await machine.send(message(), target(), creds(s));
    } finally {
      await machine.close?.();
    }
    expect(s.messages.map((m) => m.ehlo)).toEqual(['mail.herald.test', hostname()]);
  });

  test('SMTP_EHLO_NAME, else the host of PUBLIC_URL (an address as a literal), else the machine host name', () => {
    expect(ehloName('mx.example.org', 'https://herald.example.com', 'box')).toBe('mx.example.org');
    expect(ehloName(undefined, 'https://herald.example.com:8443/base', 'box')).toBe('herald.example.com');
    expect(ehloName(undefined, 'http://192.0.2.7:4000', 'box')).toBe('[192.0.2.7]');
    expect(ehloName(undefined, 'http://[2001:db8::7]:4000', 'box')).toBe('[IPv6:2001:db8::7]');
    expect(ehloName(undefined, 'http://127.0.0.1:4000', 'box')).toBe('box');
    expect(ehloName(undefined, 'http://localhost:4000', 'box')).toBe('box');
    expect(ehloName(undefined, undefined, 'box')).toBe('box');
    expect(ehloName(undefined, undefined, '')).toBe('localhost');
  });
});

describe('AUTH', () => {
  const login = { user: 'mailer', pass: 's3cret' };

  test('email_user set and no AUTH offered: a final failure with a clear reason, nothing sent unauthenticated', async () => {
    const s = await server('plain');
    const result = await sendOne(s, { email_user: 'mailer', email_pass: 's3cret' });
    expect(result).toMatchObject({
      ok: false,
      retryable: false,
      error: 'SMTP: email_user is set but the server offers no AUTH (PLAIN, LOGIN or CRAM-MD5); not sending unauthenticated',
    });
    expect(s.messages).toHaveLength(0);
  });

  test('AUTH offered after STARTTLS: logs in over TLS; a wrong password is final with the server reply', async () => {
    const s = await server('starttls', login);
    expect(await sendOne(s, { email_user: 'mailer', email_pass: 's3cret', email_tls_ca: relay.cert })).toMatchObject({ ok: true });
    expect(s.messages).toEqual([expect.objectContaining({ user: 'mailer', secure: true })]);
    const before = s.connections;
    const wrong = await smtp.send(message(), ['x', 'y', 'z'].map((n) => target(`${n}@example.com`)[0]!), creds(s, { email_user: 'mailer', email_pass: 'wrong', email_tls_ca: relay.cert }));
    expect(wrong.map((r) => [r.ok, r.retryable, r.error])).toEqual(Array(3).fill([false, false, expect.stringMatching(/^535 /)]));
    // One refused login is not repeated for every recipient (a relay would take that for an attack).
    expect(s.connections - before).toBeLessThanOrEqual(2);
  });

  test('without email_user nothing logs in', async () => {
    const s = await server('starttls', login);
    expect(await sendOne(s, { email_tls_ca: relay.cert })).toMatchObject({ ok: true });
    expect(s.messages[0]!.user).toBeUndefined();
  });
});

describe('plain-text alternative', () => {
  test('entities decoded, links keep their URLs, lists and headings readable', async () => {
    const s = await server('plain');
    const html =
      '<html><head><style>p { color: red }</style></head><body>' +
      '<h1>Caf&eacute; news</h1>' +
      '<p>Cr&egrave;me br&ucirc;l&eacute;e &mdash; &euro;4 &amp; more at <a href="https://example.com/menu?day=mon&amp;size=l">our menu</a>.</p>' +
      '<h2>This week</h2><ul><li>Espresso</li><li>Flat&nbsp;white</li></ul>' +
      '<ol><li>Order</li><li>Enjoy</li></ol>' +
      '<p><a href="https://example.com">https://example.com</a><img src="https://example.com/pixel.gif" alt=""></p>' +
      '</body></html>';
    expect(await sendOne(s, {}, html)).toMatchObject({ ok: true });
    const [m] = s.messages;
    expect(m!.html).toBe(html);
    expect(m!.text?.trim()).toBe(
      [
        'Café news',
        '',
        'Crème brûlée — €4 & more at our menu',
        '[https://example.com/menu?day=mon&size=l].',
        '',
        '',
        'This week',
        '',
        '- Espresso',
        '- Flat\u00a0white',
        '',
        ' 1. Order',
        ' 2. Enjoy',
        '',
        'https://example.com',
      ].join('\n'),
    );
  });
});

/* ------------------------------------------------------------------------------------------ */

describe('over HTTP: credentials in both doors, and a live send', () => {
  let herald: Herald, api: Client, org: Org;
  beforeAll(async () => {
    ({ herald, api, org } = await heraldWithOrg({ env: { DELIVERY_MODE: 'live', WORKERS: 'false', SMTP_EHLO_NAME: 'herald.example.test', PROVIDER_TIMEOUT_MS: '2000' } }));
  });
  afterAll(() => herald?.stop());

  const putCreds = (body: unknown, admin = org) => api.put('/organizations/current/credentials', body, { token: admin.token });

  test('REST: the TLS fields stored and shown, the port as a number, the CA removable; bad values named', async () => {
    const s = await server('starttls');
    const put = await putCreds({ email_host: '127.0.0.1', email_port: s.port, email_from: 'noreply@herald.test', email_user: 'mailer', email_pass: 'pass-1234' });
    expect(put.status).toBe(200);
    expect(put.body.credentials).toMatchObject({
      email_port: String(s.port),
      email_secure: 'starttls-if-offered',
      email_tls_verify: true,
      email_tls_ca: null,
      email_pass: '****1234',
    });

    const set = await putCreds({ email_secure: 'starttls', email_tls_verify: false, email_tls_ca: relay.cert, email_port: '465' });
    expect(set.body.credentials).toMatchObject({ email_port: '465', email_secure: 'starttls', email_tls_verify: false, email_tls_ca: relay.cert.trim() });
    const read = await api.get('/organizations/current', { token: org.token });
    expect(read.body.credentials).toMatchObject({ email_secure: 'starttls', email_tls_verify: false, email_tls_ca: relay.cert.trim() });

    const removed = await putCreds({ email_tls_ca: '', email_tls_verify: 'true' });
    expect(removed.body.credentials).toMatchObject({ email_tls_ca: null, email_tls_verify: true });
    // A relay without AUTH: the user and password can be taken away again.
    const withUser = await putCreds({ email_user: 'mailer', email_pass: 'secret-pass' });
    expect(withUser.body.credentials).toMatchObject({ email_user: 'mailer', email_pass: '****pass' });
    const noUser = await putCreds({ email_user: '', email_pass: '' });
    expect(noUser.body.credentials).toMatchObject({ email_user: null, email_pass: null });

    expectValidation(await putCreds({ email_secure: 'ssl', email_tls_verify: 'yes', email_tls_ca: 'not a certificate', email_port: 70000 }), [
      'email_secure',
      'email_tls_verify',
      'email_tls_ca',
      'email_port',
    ]);
    expectValidation(await putCreds({ email_tls_ca: `${relay.cert}\n${relay.key}` }), ['email_tls_ca']);
    expectValidation(await putCreds({ email_port: 25.5 }), ['email_port']);
  });

  test('GraphQL: updateCredentials takes the TLS fields and organization.credentials shows them', async () => {
    const fields = 'email_port email_secure email_tls_verify email_tls_ca';
    const res = await api.gql(
      `mutation($input: CredentialsInput!) { updateCredentials(input: $input) { credentials { ${fields} } } }`,
      { input: { email_host: '127.0.0.1', email_port: '2525', email_secure: 'none', email_tls_verify: false, email_tls_ca: relay.cert } },
      { token: org.token },
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data.updateCredentials.credentials).toEqual({ email_port: '2525', email_secure: 'none', email_tls_verify: false, email_tls_ca: relay.cert.trim() });
    const read = await api.gql(`{ organization { credentials { ${fields} } } }`, undefined, { token: org.token });
    expect(read.body.data.organization.credentials).toEqual(res.body.data.updateCredentials.credentials);

    const bad = await api.gql(`mutation { updateCredentials(input: { email_secure: "tls-maybe" }) { _id } }`, undefined, { token: org.token });
    expect(bad.body.errors?.[0].extensions).toMatchObject({ code: 'BAD_REQUEST', statusCode: 400 });
    expect(bad.body.errors?.[0].message).toMatch(/^email_secure must be one of tls, starttls, starttls-if-offered, none$/);
  });

  test('a live send: the certificate error is a 502 with the reason, tried once; with the CA it arrives over TLS, to a dot-less domain, under the configured EHLO name', async () => {
    const s = await server('starttls');
    const sender = await signupOrg(api);
    const send = (to: string) =>
      api.post('/notifications/send', { type: 'email', to, subject: 'Hello', message: '<p>Caf&eacute;</p>' }, { token: sender.token });
    expect((await putCreds({ email_host: '127.0.0.1', email_port: s.port, email_from: 'herald@localhost' }, sender)).status).toBe(200);

    expectError(await send('root@localhost'), 502, SELF_SIGNED);
    expect(s.connections).toBe(1);
    expect(s.messages).toHaveLength(0);

    expect((await putCreds({ email_tls_ca: relay.cert }, sender)).status).toBe(200);
    const ok = await send('root@localhost');
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ recipient: 'root@localhost', status: 'success' });
    expect(s.messages).toEqual([
      expect.objectContaining({ envelopeFrom: 'herald@localhost', envelopeTo: ['root@localhost'], secure: true, ehlo: 'herald.example.test', text: 'Café' }),
    ]);
  });
});

describe('addresses on a domain without a dot where private hosts are blocked', () => {
  let herald: Herald, api: Client, org: Org;
  beforeAll(async () => {
    ({ herald, api, org } = await heraldWithOrg({ env: { BLOCK_PRIVATE_HOSTS: 'true', WORKERS: 'false' } }));
  });
  afterAll(() => herald?.stop());

  test('email_from and recipients like root@localhost are refused; dotted ones still pass', async () => {
    const put = (email_from: string) => api.put('/organizations/current/credentials', { email_from }, { token: org.token });
    expectValidation(await put('herald@localhost'), ['email_from']);
    expect((await put('herald@example.com')).status).toBe(200);

    const contact = await api.post('/contacts', { name: 'Root', email: 'root@localhost' }, { token: org.token });
    expectValidation(contact, ['email']);
    expect((await api.post('/contacts', { name: 'Ada', email: 'Ada@Example.com' }, { token: org.token })).body.email).toBe('ada@example.com');

    const send = (to: string | string[]) => api.post('/notifications/send', { type: 'email', to, subject: 'Hi', message: 'Hello' }, { token: org.token });
    const one = await send('root@localhost');
    expectValidation(one, ['to']);
    expect(one.body.message).toBe('to must be a valid email address');
    const many = await send(['root@localhost', 'ada@example.com']);
    expect(many.status).toBe(200);
    expect(many.body).toEqual([
      { recipient: 'root@localhost', status: 'failed', error: 'Invalid email address' },
      { recipient: 'ada@example.com', status: 'success' },
    ]);
  });
});
