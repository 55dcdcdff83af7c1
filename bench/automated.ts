// Issue 18's figure: 10,000 contacts (BENCH_CONTACTS) imported from CSV into a group that an
// automated campaign (trigger `contact.added_to_group`, no delay) watches, timed from the upload's
// first byte until every one of them has been sent (the runs' `sent` and `failed` sum to the
// contacts), against doing it by hand: the same upload into a group, then a plain campaign to the
// group, timed from the upload until the campaign completes. Each round imports new contacts.
// Prints `ratio: <by hand / automated>`; the goal is the automated sends within 2x (>= 0.5). The
// part after the import (automated sends against the plain campaign alone) is printed too.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freshDatabase, median, signup, startProcess, summary } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 10_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

const db = await freshDatabase('automated');
const herald = await startProcess(
  'src/main.ts',
  {
    DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'sandbox',
    JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  },
  4731,
  '/ready',
);
const pool = new pg.Pool({ connectionString: db.url, max: 2 });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

try {
  const { token, orgId } = await signup(herald.url);
  const auth = { authorization: `Bearer ${token}` };
  const json = { ...auth, 'content-type': 'application/json' };
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${herald.url}${path}`, { method: 'POST', headers: json, body: JSON.stringify(body) });
    if (res.status >= 300) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { _id: string; status: string };
  };

  /** Until `ready` (a query of the campaigns table) answers true. */
  async function until(sql: string, params: unknown[]) {
    for (const start = Date.now(); Date.now() - start < 300_000; await sleep(10)) {
      if ((await pool.query(sql, params)).rows[0].done) return;
    }
    throw new Error(`timed out: ${sql}`);
  }

  const rowsFor = (label: string, offset: number) =>
    Array.from({ length: CONTACTS }, (_, i) => `Person ${label}-${i},+2547${String(10_000_000 + offset + i * 2 + 1).slice(-8)}`).join('\n');
  /** Uploads CSV into a group; answers the import's id. */
  async function upload(groupId: string, rows: string) {
    const res = await fetch(`${herald.url}/contacts/import?groups=${groupId}`, { method: 'POST', headers: { ...auth, 'content-type': 'text/csv' }, body: `name,phone\n${rows}\n` });
    if (res.status !== 202) throw new Error(`import: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { _id: string })._id;
  }
  const importDone = (id: string) => until(`SELECT status = 'completed' AS done FROM contact_imports WHERE organization_id = $1 AND id = $2`, [orgId, id]);
  const sms = { sms: { content: 'Welcome, {{ contact.name }}' } };

  const automated: number[] = [];
  const manual: number[] = [];
  const sendsOnly: number[] = [];
  const plainOnly: number[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    // Automated: the upload, and the campaign sends to each contact the import put in its group.
    const watched = await post('/groups', { name: `Watched ${round}`, color: 'bg-blue-500' });
    const campaign = await post('/campaigns', { name: `Welcome ${round}`, type: 'automated', channels: ['sms'], messages: sms, trigger: { event: 'contact.added_to_group', groupId: watched._id } });
    await post(`/campaigns/${campaign._id}/launch`, undefined);
    const t0 = performance.now();
    const first = await upload(watched._id, rowsFor(`a${round}`, round * CONTACTS * 4));
    await importDone(first);
    const imported = performance.now() - t0;
    await until(`SELECT coalesce(sum(sent + failed), 0) >= $3 AS done FROM campaigns WHERE organization_id = $1 AND parent_id = $2`, [orgId, campaign._id, CONTACTS]);
    const tAutomated = performance.now() - t0;
    await sleep(2000);

    // By hand: the same upload into a group, then a plain campaign to it.
    const plainGroup = await post('/groups', { name: `Plain ${round}`, color: 'bg-blue-500' });
    const t1 = performance.now();
    await importDone(await upload(plainGroup._id, rowsFor(`p${round}`, round * CONTACTS * 4 + CONTACTS * 2)));
    const t2 = performance.now();
    const plain = await post('/campaigns', { name: `Plain ${round}`, type: 'targeted', channels: ['sms'], messages: sms, recipients: { groups: [plainGroup._id] } });
    await post(`/campaigns/${plain._id}/launch`, undefined);
    await until(`SELECT status = 'completed' AS done FROM campaigns WHERE organization_id = $1 AND id = $2`, [orgId, plain._id]);
    const tManual = performance.now() - t1;
    const tPlain = performance.now() - t2;
    await sleep(2000);
    if (round === 0) continue;
    automated.push(tAutomated);
    manual.push(tManual);
    sendsOnly.push(tAutomated - imported);
    plainOnly.push(tPlain);
    console.log(
      `  round ${round}: automated ${tAutomated.toFixed(0)} ms (import ${imported.toFixed(0)}, then sends ${(tAutomated - imported).toFixed(0)}); ` +
        `import then plain campaign ${tManual.toFixed(0)} ms (campaign ${tPlain.toFixed(0)})`,
    );
  }
  const [a, m] = [median(automated), median(manual)];
  console.log(
    `${CONTACTS} contacts: imported and sent by the automated campaign ${a.toFixed(0)} ms; imported, then a plain campaign ${m.toFixed(0)} ms: ` +
      `${(a / m).toFixed(2)}x (goal <= 2x). After the import: automated sends ${median(sendsOnly).toFixed(0)} ms, plain campaign ${median(plainOnly).toFixed(0)} ms`,
  );
  summary({ goal: '>= 0.5', spread: ['automated', automated, 'by-hand', manual, 'ms'] });
  console.log(`ratio: ${(m / a).toFixed(3)}`);
} finally {
  await pool.end();
  await herald.stop();
  await db.stop();
}
