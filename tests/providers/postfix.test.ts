import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { POSTFIX, postfixAvailable, startPostfix, type PostfixInstance } from '../fakes/postfix.js';

/**
 * The Postfix fixture (tests/fakes/postfix.ts) does what Herald's email tests rely on: a real
 * Postfix accepts mail for a domain without mailboxes and then bounces it with its own DSN, sent
 * with the null sender to the message's envelope sender at Herald's bounce domain; it refuses a
 * rejected domain at RCPT TO; and instances run side by side and leave nothing behind. No Herald
 * and no database. Skipped without Postfix, unless REQUIRE_POSTFIX=1 (CI installs it).
 */

const havePostfix = postfixAvailable();
const requirePostfix = process.env.REQUIRE_POSTFIX === '1';

interface Received {
  /** MAIL FROM's address: '' for the null sender `<>`. */
  mailFrom: string | false;
  rcptTo: string[];
  raw: Buffer;
}

/** Where Postfix relays the DSNs: a plain SMTP server keeping every message with its envelope. */
async function startListener(port = 0) {
  const received: Received[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    closeTimeout: 50,
    onData(stream, session, callback) {
      const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : false;
      const rcptTo = session.envelope.rcptTo.map((r) => r.address);
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        received.push({ mailFrom, rcptTo, raw: Buffer.concat(chunks) });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return { port: (server.server.address() as AddressInfo).port, received, stop: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function waitFor<T>(find: () => T | undefined | Promise<T | undefined>, ms: number, what: () => Promise<string>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const found = await find();
    if (found !== undefined) return found;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${await what()}`);
    await sleep(100);
  }
}

/** The parts of a multipart body, each with its Content-Type and its body (line ends as LF). */
function reportParts(raw: string, boundary: string): { type: string | undefined; body: string }[] {
  return raw
    .replace(/\r\n/g, '\n')
    .split(`\n--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const [head, ...body] = part.replace(/^\n/, '').split('\n\n');
      return { type: /^content-type:\s*([^;\s]+)/im.exec(head)?.[1].toLowerCase(), body: body.join('\n\n') };
    });
}

/** RFC 3464 fields: the per-message block, then one block per recipient. */
function dsnBlocks(text: string): Record<string, string>[] {
  return text
    .replace(/\r\n/g, '\n')
    .replace(/\n[ \t]+/g, ' ')
    .split(/\n\s*\n/)
    .filter((block) => block.trim())
    .map((block) =>
      Object.fromEntries(
        block
          .split('\n')
          .filter((line) => line.includes(':'))
          .map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      ),
    );
}

/** Processes whose working directory is inside `dir`: Postfix's daemons all work in their queue directory. */
function processesIn(dir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/cwd`).startsWith(`${dir}/`)) found.push(Number(entry));
    } catch {
      /* gone, or a zombie */
    }
  }
  return found;
}

const transport = (mta: PostfixInstance) => nodemailer.createTransport({ host: '127.0.0.1', port: mta.smtpPort, secure: false, ignoreTLS: true });

if (!havePostfix && requirePostfix) {
  test('Postfix is available', () => {
    throw new Error(`REQUIRE_POSTFIX=1 but ${POSTFIX} is missing: install it with "apt-get install -y postfix"`);
  });
}

(havePostfix ? describe : describe.skip)('a real Postfix as the MTA Herald hands mail to', () => {
  let listener: Awaited<ReturnType<typeof startListener>>;
  let mta: PostfixInstance;
  const extra: PostfixInstance[] = [];

  const options = () => ({
    noMailboxDomain: 'nomailbox.test',
    rejectDomain: 'rejected.test',
    bounceDomain: 'bounces.herald.test',
    bounceRelay: { host: '127.0.0.1', port: listener.port },
  });

  beforeAll(async () => {
    listener = await startListener();
    mta = await startPostfix(options());
  });

  afterAll(async () => {
    await Promise.all([mta, ...extra].map((m) => m?.stop()));
    await listener?.stop();
  });

  test('its configuration passes postfix check and names no unknown parameter', async () => {
    const run = promisify(execFile);
    const check = await run(POSTFIX, ['-c', `${mta.dir}/etc`, 'check']);
    expect(check.stderr).toBe('');
    const postconf = await run('/usr/sbin/postconf', ['-c', `${mta.dir}/etc`, '-n']);
    expect(postconf.stderr).toBe('');
    // Postfix's scripts report to the log, not to a stderr that is no terminal.
    expect((await mta.log()).split('\n').filter((line) => /warning|fatal|error/i.test(line))).toEqual([]);
  });

  test('mail to a domain without mailboxes is accepted, then bounced with a DSN to the envelope sender', async () => {
    const sent = Date.now();
    const info = await transport(mta).sendMail({
      from: 'news@shop.example',
      to: 'nobody@nomailbox.test',
      subject: 'Spring sale',
      text: 'Everything half price.',
      envelope: { from: 'bounces+TOKEN123@bounces.herald.test', to: 'nobody@nomailbox.test' },
    });
    expect(info.response).toMatch(/^250 /);
    expect(info.accepted).toEqual(['nobody@nomailbox.test']);

    const dsn = await waitFor(
      () => listener.received.find((m) => m.rcptTo.includes('bounces+TOKEN123@bounces.herald.test')),
      20_000,
      () => mta.log(),
    );
    const tookMs = Date.now() - sent;
    console.log(`Postfix DSN received ${tookMs} ms after the send`);

    // Case kept: the token in the address is what Herald matches the bounce with.
    expect(dsn.rcptTo).toEqual(['bounces+TOKEN123@bounces.herald.test']);
    expect(dsn.mailFrom).toBe('');
    const parsed = await simpleParser(dsn.raw);
    const contentType = parsed.headers.get('content-type') as { value: string; params: Record<string, string> };
    expect(contentType.value).toBe('multipart/report');
    expect(contentType.params['report-type']).toBe('delivery-status');
    expect(parsed.to).toMatchObject({ text: 'bounces+TOKEN123@bounces.herald.test' });

    const parts = reportParts(dsn.raw.toString('utf8'), contentType.params.boundary);
    expect(parts.map((p) => p.type)).toEqual(['text/plain', 'message/delivery-status', 'message/rfc822']);
    const [perMessage, ...perRecipient] = dsnBlocks(parts[1].body);
    expect(perMessage['reporting-mta']).toBe('dns; postfix.herald.test');
    expect(perRecipient).toHaveLength(1);
    expect(perRecipient[0]).toMatchObject({ 'final-recipient': 'rfc822; nobody@nomailbox.test', action: 'failed' });
    expect(perRecipient[0].status).toMatch(/^5\.\d{1,3}\.\d{1,3}$/);

    // The bounced message comes back whole, so its Message-ID ties the DSN to what was sent.
    expect(parts[2].body).toContain(`Message-ID: ${info.messageId}`);
  });

  test('mail to a rejected domain is refused at RCPT TO, while the client waits', async () => {
    const error = await transport(mta)
      .sendMail({ from: 'news@shop.example', to: 'someone@rejected.test', subject: 'Hi', text: 'Hello.', envelope: { from: 'bounces+TOKEN456@bounces.herald.test', to: 'someone@rejected.test' } })
      .then(
        () => undefined,
        (e: Error & { responseCode?: number; command?: string; response?: string }) => e,
      );
    expect(error).toMatchObject({ responseCode: 550, command: 'RCPT TO' });
    expect(error?.response).toMatch(/^550 5\.1\.1 .*someone@rejected\.test/);
  });

  test('a DSN the bounce relay cannot take yet stays queued, and flush() sends it once it listens', async () => {
    const relay = await startListener();
    const port = relay.port;
    await relay.stop();
    const later = await startPostfix({ ...options(), bounceRelay: { host: '127.0.0.1', port } });
    extra.push(later);
    await transport(later).sendMail({ from: 'news@shop.example', to: 'late@nomailbox.test', text: 'x', envelope: { from: 'bounces+LATER@bounces.herald.test', to: 'late@nomailbox.test' } });
    await waitFor(async () => /to=<bounces\+LATER@bounces\.herald\.test>.*status=deferred/.test(await later.log()) || undefined, 20_000, () => later.log());

    const back = await startListener(port);
    try {
      await later.flush();
      const dsn = await waitFor(() => back.received.find((m) => m.rcptTo.includes('bounces+LATER@bounces.herald.test')), 20_000, () => later.log());
      expect(dsn.mailFrom).toBe('');
    } finally {
      await back.stop();
    }
  });

  test('two instances run at once, each with its own port and directory, and stop cleanly', async () => {
    const second = await startPostfix(options());
    extra.push(second);
    expect(second.smtpPort).not.toBe(mta.smtpPort);
    expect(second.dir).not.toBe(mta.dir);
    expect(processesIn(second.dir).length).toBeGreaterThan(0);

    const envelopes = [
      { mta, from: 'bounces+FIRST@bounces.herald.test' },
      { mta: second, from: 'bounces+SECOND@bounces.herald.test' },
    ];
    await Promise.all(
      envelopes.map(({ mta: via, from }) =>
        transport(via).sendMail({ from: 'news@shop.example', to: 'gone@nomailbox.test', text: 'x', envelope: { from, to: 'gone@nomailbox.test' } }),
      ),
    );
    for (const { mta: via, from } of envelopes) {
      const dsn = await waitFor(() => listener.received.find((m) => m.rcptTo.includes(from)), 20_000, () => via.log());
      expect(dsn.mailFrom).toBe('');
    }
    expect(await second.log()).toMatch(/status=bounced/);

    await second.stop();
    expect(processesIn(second.dir)).toEqual([]);
    expect(existsSync(second.dir)).toBe(false);
  });
});
