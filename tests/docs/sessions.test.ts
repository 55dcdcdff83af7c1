import { spawn, spawnSync, type ChildProcessByStdio } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Readable } from 'node:stream';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Herald } from '../../src/server.js';
import { startAfricasTalkingFake, type AfricasTalkingFake } from '../fakes/africastalking-fake.js';
import { postfixAvailable, startPostfix, type PostfixInstance } from '../fakes/postfix.js';
import { startSmsGatewayFake, type SmsGatewayFake } from '../fakes/sms-gateway-fake.js';
import { client, startTestHerald, uniqueEmail, type Client } from '../helpers/herald.js';
import { answerLines, callsIn, documentProblems, fencedBlocks, sessionsOf, shownFields, shownText, type Answer } from './sessions.js';

/**
 * The documents' example sessions, run as written: README.md, CONTRIBUTING.md and every docs/*.md. A document's
 * sessions (its ```sh blocks that call Herald) run in order as one script, in a fresh temporary
 * directory, once with bash and once with an interactive zsh with default options (where a `#` line
 * is an error), each time for an organization of its own, against a real Herald with sandbox
 * delivery, or, for a document about providers (`LIVE`), live delivery to the SMS gateway's and
 * Africa's Talking's fakes. Only the address (`localhost:4000`), the signup email, the webhook
 * receiver's port, and a live document's provider addresses are replaced. The ```text block after each session shows its answers, one line per call: the
 * status is checked as the call returns, and every concrete field shown when the script is done.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOCUMENTS = ['README.md', 'CONTRIBUTING.md', ...readdirSync(path.join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const read = (doc: string) => readFileSync(path.join(ROOT, doc), 'utf8');

/** The metrics token docs/operations.md starts Herald with; the test's Herald is started with it too. */
const METRICS_TOKEN = 'herald-metrics-0123456789abcdef';

const ZSH = spawnSync('sh', ['-c', 'command -v zsh'], { encoding: 'utf8' }).stdout.trim();
const SHELLS: ('bash' | 'zsh')[] = ['bash', ...(ZSH || process.env.REQUIRE_ZSH === '1' ? (['zsh'] as const) : [])];

/**
 * Prepended to a document's script, for bash and zsh alike. `curl` becomes a function (the
 * documents' `c` helper calls `curl`, so it goes through it) that numbers each call (a counter
 * file, since calls in `$(...)` run in subshells), keeps its status and body, prints the body and
 * the status as the documents' helper does, and fails the script at once when the status is not
 * the one the document shows. `set -euo pipefail` stops the script at the first failure, also in
 * a pipe or a `$(...)`.
 */
const PRELUDE = String.raw`set -euo pipefail
curl() {
  local n rc=0 code want
  n=$(( $(cat "$DOC_OUT/count") + 1 )); echo "$n" > "$DOC_OUT/count"; : > "$DOC_OUT/$n.body"
  code=$(command curl "$@" -o "$DOC_OUT/$n.body" -w '%{http_code}') || rc=$?
  echo "$code" > "$DOC_OUT/$n.status"
  cat "$DOC_OUT/$n.body"
  printf '\n-> %s\n' "$code" >&2
  if [ "$rc" -ne 0 ]; then return "$rc"; fi
  want=$(sed -n "$n"p "$DOC_OUT/expected")
  if [ "$code" != "$want" ]; then echo "call $n answered $code; the document shows $want" >&2; return 1; fi
}
`;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `script` with `shell` in `cwd`: bash reads it from a file, zsh interactively (`-i`, no
 * startup files) from its standard input, as a terminal session would. Ends with the shell: a
 * background process it left (a webhook receiver) keeps no pipe waited for.
 */
function runShell(shell: 'bash' | 'zsh', script: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<Run> {
  const file = path.join(cwd, '..', `${path.basename(cwd)}.${shell}`);
  writeFileSync(file, script);
  const input = shell === 'zsh' ? openSync(file, 'r') : 'ignore';
  const args = shell === 'zsh' ? ['-f', '-i', '-s'] : [file];
  const child = spawn(shell === 'zsh' ? ZSH || 'zsh' : 'bash', args, {
    cwd,
    env: { ...env, PS1: '', PROMPT_EOL_MARK: '' },
    stdio: [input, 'pipe', 'pipe'],
  }) as ChildProcessByStdio<null, Readable, Readable>;
  if (typeof input === 'number') closeSync(input);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      // Give the pipes a moment to drain, then stop reading what a background process still holds.
      setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        rmSync(file, { force: true });
        resolve({ code, signal, stdout, stderr });
      }, 100);
    });
  });
}

/** A free TCP port on the loopback interface. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Whether some object anywhere in `v` has `key` equal to `value`. */
function hasField(v: unknown, key: string, value: unknown): boolean {
  if (Array.isArray(v)) return v.some((x) => hasField(x, key, value));
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return (key in o && o[key] === value) || Object.values(o).some((x) => hasField(x, key, value));
  }
  return false;
}

let herald: Herald;
let api: Client;
let work: string;

/**
 * The documents whose sessions need live delivery: a Herald of their own whose SMS gateway is the
 * gateway's fake (with the credentials the document sets), and the Africa's Talking sandbox host the
 * document names answered by Africa's Talking's fake.
 */
const LIVE = new Set(['docs/providers-and-failover.md']);
const AT_SANDBOX = 'https://api.sandbox.africastalking.com';
let live: { herald: Herald; api: Client; gateway: SmsGatewayFake; at: AfricasTalkingFake } | undefined;

/**
 * The documents whose sessions need a mail relay that bounces: a Herald of their own with live
 * delivery and its bounce listener for the document's bounce domain, and a Postfix of the test's
 * own standing for the relay the document names, with no mailbox for the document's addresses.
 * Without Postfix on the machine they are skipped, unless REQUIRE_POSTFIX=1 (CI) asks for it.
 */
const MAIL = new Set(['docs/email-deliverability.md']);
const MAIL_RELAY = { host: 'smtp.example.net', port: '"2525"' };
const WITH_POSTFIX = postfixAvailable() || process.env.REQUIRE_POSTFIX === '1';
let mail: { herald: Herald; mta: PostfixInstance } | undefined;

beforeAll(async () => {
  herald = await startTestHerald({ DELIVERY_MODE: 'sandbox', WORKERS: 'true', METRICS_TOKEN });
  api = client(herald.url);
  work = mkdtempSync(path.join(tmpdir(), 'herald-docs-'));
  if (DOCUMENTS.some((doc) => LIVE.has(doc))) {
    const [gateway, at] = await Promise.all([startSmsGatewayFake({ apikey: 'gw-key-7781', partnerID: '4410' }), startAfricasTalkingFake({ username: 'sandbox', apiKey: 'atsk-example-key' })]);
    const liveHerald = await startTestHerald({ DELIVERY_MODE: 'live', SMS_API_URL: gateway.url, METRICS_TOKEN });
    live = { herald: liveHerald, api: client(liveHerald.url), gateway, at };
  }
  if (WITH_POSTFIX && DOCUMENTS.some((doc) => MAIL.has(doc))) {
    const mailHerald = await startTestHerald({ DELIVERY_MODE: 'live', BOUNCE_DOMAIN: 'bounces.example.com', BOUNCE_SMTP_PORT: '0', BOUNCE_SMTP_HOST: '127.0.0.1' });
    const mta = await startPostfix({ noMailboxDomain: 'example.org', bounceDomain: 'bounces.example.com', bounceRelay: { host: '127.0.0.1', port: mailHerald.bounceSmtpPort! } });
    mail = { herald: mailHerald, mta };
  }
}, 60_000);
afterAll(async () => {
  await herald?.stop();
  await live?.herald.stop();
  await mail?.mta.stop();
  await mail?.herald.stop();
  await Promise.all([live?.gateway.stop(), live?.at.stop()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the documents', () => {
  test.each(DOCUMENTS)('%s follows the rules for sessions and links', (doc) => {
    expect(documentProblems(doc, read(doc), (p) => existsSync(path.join(ROOT, p)))).toEqual([]);
  });

  test('the README has its tour, and every area its guide', () => {
    expect(sessionsOf(read('README.md')).length).toBeGreaterThanOrEqual(2);
    for (const guide of ['sending-and-credits', 'campaigns', 'receipts-and-engagement', 'webhooks', 'contacts-in-bulk', 'recurring-and-automated', 'console', 'graphql', 'security', 'operations', 'performance']) {
      expect(DOCUMENTS).toContain(`docs/${guide}.md`);
    }
    // The metrics session works against a Herald started the way the guide says.
    expect(read('docs/operations.md')).toContain(`METRICS_TOKEN=${METRICS_TOKEN} npm start`);
  });

  test('the checks can fail: a comment line stops an interactive zsh, a wrong status stops the script', async () => {
    const doc = '```sh\nc() { curl -sS -w \'%{stderr}\\n-> %{http_code}\\n\' "$@"; }\nc localhost:4000/health\n```\n\n```text\n200 { "status": "ok" }\n```\n';
    expect(documentProblems('example.md', doc, () => true)).toEqual([]);
    expect(documentProblems('example.md', doc.replace('c localhost', '# the probe\nc localhost'), () => true)).toEqual([
      expect.stringContaining('a comment in a sh block'),
    ]);
    expect(documentProblems('example.md', doc.replace('200 {', '200 {}\n200 {'), () => true)).toEqual([expect.stringContaining('2 answer lines for 1 call')]);

    const ok = await runDocument('example', doc, 'bash');
    expect(ok.failure).toBeUndefined();
    const wrongStatus = await runDocument('example', doc.replace('200 {', '201 {'), 'bash');
    expect(wrongStatus.failure).toContain('call 1 answered 200; the document shows 201');
    if (SHELLS.includes('zsh')) {
      const comment = await runDocument('example', doc.replace('c localhost', '# the probe\nc localhost'), 'zsh');
      expect(comment.failure).toMatch(/command not found: #/);
      expect((await runDocument('example', doc, 'zsh')).failure).toBeUndefined();
    }
  }, 60_000);
});

interface Result {
  /** What went wrong, for the message; undefined when the script ran to its end with every status as shown. */
  failure?: string;
  answers: Answer[];
  calls: { status: number; body: string; json: unknown }[];
  stdout: string;
  /** The token of the session's signup, when it has one. */
  token?: string;
  email: string;
}

/** Runs the sessions of `text` (a document) with `shell`, for an organization of its own. */
async function runDocument(name: string, text: string, shell: 'bash' | 'zsh'): Promise<Result> {
  const sessions = sessionsOf(text);
  const docEmail = /"email"\s*:\s*"([^"]+)"/.exec(sessions.find((s) => s.script.includes('/auth/signup'))?.script ?? '')?.[1];
  const email = uniqueEmail(name.toLowerCase().replace(/\W+/g, '-'));
  // People invited become users, and a user's email is unique across Herald: each run invites its own.
  const invited = new Map(
    sessions
      .flatMap((s) => s.script.split('\n').filter((line) => line.includes('/invitations ')))
      .flatMap((line) => [...line.matchAll(/"email"\s*:\s*"([^"]+)"/g)].map((m) => m[1]!))
      .map((address) => [address, uniqueEmail(`${name.toLowerCase().replace(/\W+/g, '-')}-invited`)] as const),
  );
  const port = String(await freePort());
  const target = LIVE.has(name) ? live!.herald : MAIL.has(name) ? mail!.herald : herald;
  const replace = (s: string) => {
    if (LIVE.has(name)) s = s.replaceAll(AT_SANDBOX, live!.at.url);
    if (MAIL.has(name)) s = s.replaceAll(MAIL_RELAY.host, '127.0.0.1').replaceAll(MAIL_RELAY.port, `"${mail!.mta.smtpPort}"`);
    let out = s.replaceAll('localhost:4000', new URL(target.url).host).replaceAll('127.0.0.1:4001', `127.0.0.1:${port}`).replaceAll('listen(4001', `listen(${port}`);
    if (docEmail) out = out.replaceAll(docEmail, email);
    for (const [address, unique] of invited) out = out.replaceAll(address, unique);
    return out;
  };
  const script = replace(sessions.map((s) => s.script).join('\n'));
  const answers = sessions.flatMap((s) => answerLines(s.answers ?? '')).map((a) => ({ ...a, shows: replace(a.shows) }));

  const out = mkdtempSync(path.join(work, `${name.replace(/\W+/g, '-')}-${shell}-out-`));
  const cwd = mkdtempSync(path.join(work, `${name.replace(/\W+/g, '-')}-${shell}-cwd-`));
  writeFileSync(path.join(out, 'count'), '0');
  writeFileSync(path.join(out, 'expected'), answers.map((a) => a.status).join('\n') + '\n');
  const run = await runShell(shell, PRELUDE + script + '\n', cwd, {
    ...process.env,
    DOC_OUT: out,
    // A session's own temporary files (mktemp) go with the test's.
    TMPDIR: out,
    NODE_OPTIONS: '',
    PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
  });
  const count = Number(readFileSync(path.join(out, 'count'), 'utf8'));
  const calls = Array.from({ length: count }, (_, i) => {
    const body = readFileSync(path.join(out, `${i + 1}.body`), 'utf8');
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    return { status: Number(readFileSync(path.join(out, `${i + 1}.status`), 'utf8')), body, json };
  });
  let failure: string | undefined;
  if (run.code !== 0 || count !== answers.length) {
    const last = calls.at(-1);
    failure =
      `${name} with ${shell}: exit ${run.code ?? run.signal} after ${count} of ${answers.length} calls` +
      (last ? `; the last answered ${last.status} ${last.body.slice(0, 500)}` : '') +
      `\nstderr: ${run.stderr.slice(-3000)}`;
  }
  const signup = calls.find((c) => (c.json as { token?: unknown })?.token !== undefined)?.json as { token?: string } | undefined;
  return { failure, answers, calls, stdout: run.stdout, token: signup?.token, email };
}

/** What each document's session leaves behind, read back through the API, beyond the answers it shows. */
const AFTERWARDS: Record<string, (r: Result) => Promise<void>> = {
  'README.md': async (r) => {
    const cred = { token: r.token! };
    expect((await api.get('/users/me', cred)).body).toMatchObject({ email: r.email, role: 'admin' });
    const outbox = (await api.get('/sandbox/outbox?limit=1000', cred)).body as any[];
    expect(outbox.filter((m) => m.status !== 'success')).toEqual([]);
    expect(outbox.map((m) => [m.channel, m.recipient]).sort()).toEqual([
      ['email', 'grace@example.com'],
      ['sms', '+254712345678'],
      ['sms', '+254712345678'],
    ]);
  },
  'docs/campaigns.md': async (r) => {
    const cred = { token: r.token! };
    const outbox = (await api.get('/sandbox/outbox?limit=1000', cred)).body as any[];
    const peter = outbox.filter((m) => m.recipient === '+254722000111' || m.recipient === 'peter@example.com').map((m) => [m.channel, m.body]);
    // Peter's own texts: both campaigns' SMS, and the first one's email only (he left email by its link).
    expect(peter).toHaveLength(3);
    expect(peter).toEqual(
      expect.arrayContaining([
        ['sms', 'Last call, Peter'],
        ['email', expect.stringContaining('<p>Hi Peter</p>')],
        ['sms', 'Hi Peter, your gold plan renews soon'],
      ]),
    );
  },
  'docs/webhooks.md': async (r) => {
    // The receiver printed the delivery it verified.
    const received = r.stdout
      .split('\n')
      .map((l) => l.slice(Math.max(0, l.indexOf('{"type"'))))
      .filter((l) => l.startsWith('{"type"'))
      .map((l) => JSON.parse(l));
    expect(received).toEqual([expect.objectContaining({ type: 'message.sent', data: expect.objectContaining({ recipients: [{ recipient: '+254711000333', position: 1 }] }) })]);
  },
  'docs/providers-and-failover.md': async (r) => {
    const cred = { token: r.token! };
    const providers = (await live!.api.get('/providers?channel=sms', cred)).body as { _id: string; type: string }[];
    const byType = Object.fromEntries(providers.map((p) => [p.type, p._id]));
    const logs = (await live!.api.get('/message-logs', cred)).body as { recipients: { recipient: string; providerId?: string }[] }[];
    const carriers = Object.fromEntries(logs.flatMap((l) => l.recipients.map((x) => [x.recipient, x.providerId])));
    // The gateway carried the campaign and the first code; Africa's Talking, once it worked, the second.
    expect(carriers).toEqual({
      '+254711000101': byType['sms-gateway'],
      '+254711000102': byType['sms-gateway'],
      '+254711000103': byType['sms-gateway'],
      '+254711000104': byType['sms-gateway'],
      '+254711000105': byType.africastalking,
    });
    expect(live!.at.messages().map((m) => m.number)).toContain('+254711000105');
  },
  'docs/contacts-in-bulk.md': async (r) => {
    const contacts = (await api.get('/contacts', { token: r.token! })).body as any[];
    expect(contacts).toEqual([expect.objectContaining({ name: 'Wanjiru', attributes: { plan: 'gold' }, tags: ['imported', 'vip'] })]);
  },
};

describe.each(DOCUMENTS.filter((doc) => sessionsOf(read(doc)).length > 0))('%s', (doc) => {
  (MAIL.has(doc) && !WITH_POSTFIX ? test.skip.each(SHELLS) : test.each(SHELLS))('its sessions run as written with %s', async (shell) => {
    if (shell === 'zsh' && !ZSH) throw new Error('zsh is not installed, and REQUIRE_ZSH=1 asks for it');
    const result = await runDocument(doc, read(doc), shell);
    if (result.failure) throw new Error(result.failure);

    // Each answer line: the status (checked as the script ran), and every concrete field it shows.
    result.answers.forEach((answer, i) => {
      const got = result.calls[i]!;
      const where = `${doc}, call ${i + 1}: ${answer.status} ${answer.shows}\n-> ${got.status} ${got.body.slice(0, 2000)}`;
      expect({ where, status: got.status }).toEqual({ where, status: answer.status });
      // GraphQL answers most errors with 200: an operation of a session must have none.
      if ((got.json as { data?: unknown })?.data !== undefined) expect({ where, errors: (got.json as any).errors }).toEqual({ where, errors: undefined });
      // An answer that is not JSON (a CSV, a page, headers) shows pieces of its text; JSON, fields.
      if (got.json === undefined) {
        for (const piece of shownText(answer.shows)) expect({ where, piece, shown: got.body.includes(piece) }).toEqual({ where, piece, shown: true });
      } else {
        for (const [key, value] of shownFields(answer.shows)) {
          expect({ where, key, value, shown: hasField(got.json, key, value) }).toEqual({ where, key, value, shown: true });
        }
      }
    });
    await AFTERWARDS[doc]?.(result);
  }, 150_000);
});

test('a session block counts its calls, not the helper that makes them', () => {
  const blocks = fencedBlocks('```sh\nc() { curl -sS "$@"; }\nX=$(c a | field b); c b\nc d -H "$A"\n```\n');
  expect(callsIn(blocks[0]!.body)).toBe(3);
});
