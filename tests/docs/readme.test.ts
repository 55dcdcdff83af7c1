import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Herald } from '../../src/server.js';
import { client, startTestHerald, uniqueEmail, type Client } from '../helpers/herald.js';

/**
 * The README's example sessions, run as written: every ```sh block that calls curl (not the
 * `npm install && npm start` block), in order, as one bash script against a real Herald with sandbox
 * delivery. Only the address (`localhost:4000`) and the signup email are replaced.
 */

const README = readFileSync(fileURLToPath(new URL('../../README.md', import.meta.url)), 'utf8');
const README_EMAIL = 'ada@example.com';
/** The metrics session's `$METRICS_TOKEN`: the test's Herald is started with it, as the README says to start one. */
const README_METRICS_TOKEN = 'readme-metrics-token-0123456789';

const sessionBlocks = [...README.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]).filter((b) => /\bcurl\s/.test(b));

/**
 * Prepended to the README's commands. The README's `curl -s` prints an error body and exits 0 on a
 * 4xx/5xx, so a broken command would go unnoticed: `--fail-with-body` makes curl exit non-zero on an
 * HTTP error status (and `set -euo pipefail` stops the script there, also when the answer is piped
 * or captured in `$(...)`). Each call's status and body are also kept, numbered in call order (a
 * counter file, since calls in `$(...)` run in subshells), so the test can check the README's
 * `# -> <status> ...` comments. The body is still printed, as the commands expect.
 */
const PRELUDE = String.raw`set -euo pipefail
curl() {
  local n rc=0
  n=$(( $(cat "$README_OUT/count") + 1 )); echo "$n" > "$README_OUT/count"; : > "$README_OUT/$n.body"
  command curl --fail-with-body -sS -o "$README_OUT/$n.body" -w '%{http_code}' "$@" > "$README_OUT/$n.status" || rc=$?
  cat "$README_OUT/$n.body"
  return "$rc"
}
`;

interface Expectation {
  /** The command, for messages. */
  command: string;
  status?: number;
  /** The rest of the `# -> <status>` comment: the answer it shows. */
  shows?: string;
}

/** One expectation per `curl` in the script, in order: the first `# -> ...` comment after it, before the next curl. */
function expectations(script: string): Expectation[] {
  const starts = [...script.matchAll(/\bcurl\s/g)].map((m) => m.index!);
  return starts.map((start, i) => {
    const segment = script.slice(start, starts[i + 1] ?? script.length);
    const comment = /#\s*->\s*(\d{3})\b(.*)$/m.exec(segment);
    return {
      command: segment.split('\n')[0].trim(),
      status: comment ? Number(comment[1]) : undefined,
      shows: comment?.[2].trim(),
    };
  });
}

/**
 * The scalar fields a comment shows with a concrete value (`"status": "success"`, `"sent": 1`);
 * placeholders (`"eyJ..."`, `"..."`, `"<id>"`) are skipped.
 */
function shownFields(shows: string): [string, unknown][] {
  const out: [string, unknown][] = [];
  for (const m of shows.matchAll(/"([A-Za-z_]\w*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)/g)) {
    const value = JSON.parse(m[2]);
    if (typeof value === 'string' && (value.includes('...') || value.startsWith('<'))) continue;
    out.push([m[1], value]);
  }
  return out;
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
let out: string;

beforeAll(async () => {
  herald = await startTestHerald({ DELIVERY_MODE: 'sandbox', METRICS_TOKEN: README_METRICS_TOKEN });
  api = client(herald.url);
  out = mkdtempSync(path.join(tmpdir(), 'herald-readme-'));
});
afterAll(async () => {
  await herald.stop();
  rmSync(out, { recursive: true, force: true });
});

test('the README has its session blocks, each command showing its answer', () => {
  expect(sessionBlocks.length).toBeGreaterThanOrEqual(2);
  expect(sessionBlocks.join('\n')).toContain(README_EMAIL);
  // Every command shows the answer's status, which the session test checks.
  expect(expectations(sessionBlocks.join('\n')).filter((e) => e.status === undefined)).toEqual([]);
});

test('the README sessions run as written', async () => {
  // Test files run in parallel on one database and emails are unique across organizations, so the
  // session signs up with an email of its own (a re-run in `jest --watch` reuses the database too).
  const email = uniqueEmail('ada');
  const host = new URL(herald.url).host;
  const script = sessionBlocks.join('\n').replaceAll('localhost:4000', host).replaceAll(README_EMAIL, email);
  const expected = expectations(script);
  expect(expected.length).toBeGreaterThan(0);

  writeFileSync(path.join(out, 'count'), '0');
  type Failure = { code?: number | null; signal?: string | null; stderr?: string };
  const failed = await promisify(execFile)('bash', ['-c', PRELUDE + script], {
    env: {
      ...process.env,
      README_OUT: out,
      METRICS_TOKEN: README_METRICS_TOKEN,
      NODE_OPTIONS: '',
      PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`,
    },
    timeout: 60_000,
  }).then(
    () => undefined,
    (e: Failure) => e,
  );
  const calls = Number(readFileSync(path.join(out, 'count'), 'utf8'));
  const call = (n: number) => {
    const body = readFileSync(path.join(out, `${n}.body`), 'utf8');
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch {
      json = undefined;
    }
    return { status: Number(readFileSync(path.join(out, `${n}.status`), 'utf8')), body, json };
  };
  const last = calls > 0 ? call(calls) : undefined;
  if (failed) {
    throw new Error(
      `the README session failed (exit ${failed.code ?? failed.signal}) after ${calls} of ${expected.length} curl calls; ` +
        `last: ${expected[calls - 1]?.command}\n-> ${last?.status} ${last?.body}\nstderr: ${failed.stderr}`,
    );
  }
  expect(readdirSync(out).filter((f) => f.endsWith('.status'))).toHaveLength(expected.length);

  // Each command's `# -> <status> ...` comment: the status, and every concrete field it shows.
  expected.forEach((e, i) => {
    const got = call(i + 1);
    const where = `${e.command}\n-> ${got.status} ${got.body}`;
    if (e.status !== undefined) expect({ where, status: got.status }).toEqual({ where, status: e.status });
    // GraphQL answers most errors with 200: an operation of the session must have none.
    if (e.command.includes('/graphql')) expect({ where, errors: (got.json as any)?.errors }).toEqual({ where, errors: undefined });
    for (const [key, value] of shownFields(e.shows ?? '')) {
      expect({ where, key, value, shown: hasField(got.json, key, value) }).toEqual({ where, key, value, shown: true });
    }
  });

  // What the session produced, read back through the API.
  const signup = call(1).json as { token: string };
  const cred = { token: signup.token };
  const me = await api.get('/users/me', cred);
  expect(me.body).toMatchObject({ email, role: 'admin' });

  const groups = (await api.get('/groups', cred)).body as any[];
  expect(groups).toHaveLength(1);
  const contacts = (await api.get('/contacts', cred)).body as any[];
  expect(contacts).toEqual([
    // The campaign types session's contact, who joined the group an automated campaign watches.
    expect.objectContaining({ name: 'Juma', phone: '+254711000666', groups: [groups[0]._id] }),
    // The bulk session's import: one row imported, the other reported.
    expect.objectContaining({ name: 'Wanjiru', attributes: { plan: 'gold' }, tags: ['imported', 'vip'] }),
    // The personalised session's contact, who unsubscribed from email by the link of its campaign email.
    expect.objectContaining({ name: 'Peter Kamau', attributes: { plan: 'gold' }, subscriptions: expect.objectContaining({ email: expect.objectContaining({ status: 'unsubscribed', source: 'one-click' }) }) }),
    expect.objectContaining({ name: 'Grace', phone: '+254712345678', groups: [groups[0]._id] }),
  ]);

  const campaigns = (await api.get('/campaigns', cred)).body as any[];
  const byNameOf = async (list: any[], name: string) => (await api.get(`/campaigns/${list.find((c) => c.name === name)._id}`, cred)).body;
  expect(campaigns.map((c) => c.name)).toEqual(['Welcome', 'Monday digest', 'Order ready', 'Renewals 2', 'Renewals', 'Launch']);
  // The campaign types session: the digest waits for its first Monday; the welcome went to Juma, once.
  expect(await byNameOf(campaigns, 'Monday digest')).toMatchObject({ status: 'active', recurrence: { summary: 'every week on Monday at 09:00 Nairobi time' } });
  expect(await byNameOf(campaigns, 'Welcome')).toMatchObject({ status: 'active', trigger: { event: 'contact.added_to_group', groupId: groups[0]._id }, analytics: { sent: 1 } });
  const byName = async (name: string) => byNameOf(campaigns, name);
  const campaign = await byName('Launch');
  expect(campaign).toMatchObject({ status: 'completed', analytics: { failed: 0, suppressed: 0 } });
  expect(campaign.analytics.sent).toBeGreaterThanOrEqual(1);
  expect(await byName('Renewals')).toMatchObject({ status: 'completed', analytics: { sent: 2, failed: 0, suppressed: 0 } });
  // The session ends by launching the next campaign: Peter's email was suppressed, his SMS sent.
  const next = await byName('Renewals 2');
  expect(next).toMatchObject({ status: 'completed', analytics: { sent: 1, failed: 0, suppressed: 1 } });
  // Then the receipts session: the SMS reported delivered by the sandbox, the email clicked (and so opened).
  expect(await byName('Order ready')).toMatchObject({ status: 'completed', analytics: { sent: 2, delivered: 1, opened: 1, clicked: 1 } });
  // Sessions follow one another, so a call is found by what it answered, not by its place from the end.
  const answers = Array.from({ length: calls }, (_, i) => call(i + 1).json);
  const answerWith = (key: string) => answers.findLast((json) => Array.isArray(json) && json[0] && typeof json[0] === 'object' && key in json[0]);
  expect(answerWith('counted')).toEqual([expect.objectContaining({ type: 'message.clicked', recipient: 'amina@example.com' }), expect.objectContaining({ type: 'message.opened' })]);
  // Then the webhooks session: the receiver verified the signed message.sent (it prints only what verifies), and its attempt is listed.
  const received = readFileSync('/tmp/herald-webhooks.log', 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  expect(received).toEqual([expect.objectContaining({ type: 'message.sent', data: expect.objectContaining({ recipients: [{ recipient: '+254711000333', position: 1 }] }) })]);
  expect(answerWith('eventType')).toEqual([expect.objectContaining({ eventType: 'message.sent', status: 'succeeded', responseStatus: 200, response: 'thanks' })]);

  const outbox = (await api.get('/sandbox/outbox?limit=1000', cred)).body as any[];
  expect(outbox.filter((m) => m.status !== 'success')).toEqual([]);
  const grace = outbox.filter((m) => m.recipient === '+254712345678' || m.recipient === 'grace@example.com');
  const sent = (channel: string) => grace.filter((m) => m.channel === channel);
  expect(sent('sms').map((m) => m.recipient)).toEqual(['+254712345678', '+254712345678']);
  expect(sent('email').map((m) => m.recipient)).toEqual(['grace@example.com']);
  expect(sent('whatsapp').map((m) => m.recipient)).toEqual(['+254712345678']);
  // Peter: his own texts, from both campaigns' SMS and the first one's email only.
  const peter = outbox.filter((m) => m.recipient === '+254722000111' || m.recipient === 'peter@example.com').map((m) => [m.channel, m.body]);
  expect(peter).toHaveLength(3);
  expect(peter).toEqual(
    expect.arrayContaining([
      ['sms', 'Last call, Peter'],
      ['email', expect.stringContaining('<p>Hi Peter</p>')],
      ['sms', 'Hi Peter, your gold plan renews soon'],
    ]),
  );

  // The ad hoc sends of the sessions: the quick start's SMS, email and WhatsApp, and the webhooks session's SMS.
  const logs = ((await api.get('/message-logs?limit=1000', cred)).body as any[]).filter((l) => !l.campaignId || l.campaignId === campaign._id);
  expect(logs.map((l) => l.channel).sort()).toEqual(['email', 'sms', 'sms', 'sms', 'whatsapp']);
  expect(logs.filter((l) => l.campaignId === campaign._id).map((l) => l.channel)).toEqual(['sms']);
  for (const log of logs) expect(log.recipients.every((r: any) => r.status === 'success')).toBe(true);
});
