// POST /notifications/send-to-all (sms) to 5,000 contacts, Herald in live delivery mode, through an
// organization whose only SMS provider is an `smpp` one, into the fake SMSC (tests/fakes/smpp-server.ts,
// in its own process), against a bare `smpp` client bound once as a transceiver submitting the same
// 5,000 messages (same text, same destinations, data_coding 0) with at most the same window of
// submit_sm outstanding. Time from request to answer (every recipient settled and logged) vs time
// until every submit_sm_resp is back with status 0. Prints `ratio: <Herald msg/s / loop msg/s>`;
// the goal is >= 0.50.
//   BENCH_CONTACTS (5000), BENCH_ROUNDS (11), BENCH_WINDOW (10); LATENCY_MS=5 makes the SMSC answer
//   each submit_sm that late (bench/lib/peer-server.ts), so that the rate shows whether the window
//   is kept full (at best WINDOW / LATENCY_MS per ms).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import smpp from 'smpp';
import { compareTimed, cpuNow, freshDatabase, median, signup, startProcess, summary, type Database, type Proc } from './lib/harness.js';

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 5_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const WINDOW = Number(process.env.BENCH_WINDOW ?? 10);
const MESSAGE = 'Hello from the Herald benchmark: your code is 123456.';
const SOURCE = 'HERALD';

type Stats = { messages: number; destinations: number; texts: string[]; received: number; binds: number; sessions: number; maxOutstanding: number };

// Whatever is started is stopped, whatever fails (a start included): no process or data directory stays behind.
const started: { smsc?: Proc; db?: Database; herald?: Proc; pool?: pg.Pool; link?: smpp.Session } = {};
try {
  const smsc = (started.smsc = await startProcess('bench/lib/peer-server.ts', { PEER: 'smpp' }, 4781));
  const account = (await fetch(`${smsc.url}/info`).then((r) => r.json())) as { host: string; port: number; systemId: string; password: string };
  const stats = () => fetch(`${smsc.url}/stats`).then((r) => r.json() as Promise<Stats>);
  const resetSmsc = () => fetch(`${smsc.url}/reset`, { method: 'POST' });
  const db = (started.db = await freshDatabase('smpp'));
  const env = {
    DATABASE_URL: db.url, LOG_LEVEL: 'silent', NODE_ENV: 'production', DELIVERY_MODE: 'live', BLOCK_PRIVATE_HOSTS: 'false',
    SEND_CONCURRENCY: '8', JWT_SECRET: randomBytes(32).toString('hex'), CREDENTIALS_KEY: randomBytes(32).toString('hex'),
  };
  const herald = (started.herald = await startProcess('src/main.ts', env, 4782, '/ready'));
  const pool = (started.pool = new pg.Pool({ connectionString: db.url, max: 2 }));
  const { token, orgId } = await signup(herald.url);
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  // No SMS credentials: the smpp provider is the organization's only SMS provider.
  const created = await fetch(`${herald.url}/providers`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({
      type: 'smpp', name: 'Bench SMSC',
      settings: { host: account.host, port: account.port, systemId: account.systemId, sourceAddr: SOURCE, window: WINDOW },
      secrets: { password: account.password },
    }),
  });
  if (created.status !== 201) throw new Error(`provider: ${created.status} ${await created.text()}`);
  const providers = (await fetch(`${herald.url}/providers?channel=sms`, { headers: auth }).then((r) => r.json())) as { type: string; enabled: boolean }[];
  if (providers.filter((p) => p.enabled !== false).map((p) => p.type).join() !== 'smpp') throw new Error(`sms providers: ${JSON.stringify(providers)}`);
  await pool.query('UPDATE organization_credits SET credits = 1e9 WHERE organization_id = $1', [orgId]);
  await pool.query(
    `INSERT INTO contacts (organization_id, name, phone)
     SELECT $1, 'Contact ' || i, '+2547' || lpad((10000000 + i)::text, 8, '0') FROM generate_series(1, $2) AS i`,
    [orgId, CONTACTS],
  );
  const destinations = Array.from({ length: CONTACTS }, (_, i) => `2547${String(10000000 + i + 1).padStart(8, '0')}`);

  // The bare client: bound once, as Herald's session is (Nagle off, as Herald's socket is too).
  const session = (started.link = smpp.connect({ host: account.host, port: account.port }));
  session.socket.setNoDelay(true);
  // A link lost later fails the run under way instead of leaving it waiting.
  let failRun: (err: Error) => void = () => {};
  session.on('error', (err: Error) => failRun(err));
  session.on('close', () => failRun(new Error('smpp-loop: the SMSC closed the connection')));
  await new Promise<void>((resolve, reject) => {
    failRun = reject;
    session.on('connect', () =>
      session.bind_transceiver({ system_id: account.systemId, password: account.password, interface_version: 0x34 }, (resp) =>
        resp.command_status === 0 ? resolve() : reject(new Error(`bind: status ${resp.command_status}`)),
      ),
    );
  });
  // The same submit_sm Herald writes: alphanumeric sender (TON 5, NPI 0), international destination,
  // a receipt requested, the text encoded once as GSM 03.38 with data_coding 0.
  const text = smpp.encodings.ASCII.encode(MESSAGE);
  const common = { source_addr: SOURCE, source_addr_ton: 5, source_addr_npi: 0, dest_addr_ton: 1, dest_addr_npi: 1, registered_delivery: 1, data_coding: 0 };
  const bare = (to: string[]) =>
    new Promise<void>((resolve, reject) => {
      failRun = reject;
      let next = 0;
      let done = 0;
      let failed = 0;
      const fill = () => {
        while (next < to.length && next - done < WINDOW) {
          const destination = to[next++]!;
          session.submit_sm({ ...common, destination_addr: destination, short_message: text }, (resp) => {
            done++;
            if (resp.command_status !== 0) failed++;
            if (done === to.length) return failed ? reject(new Error(`bare: ${failed} of ${to.length} refused`)) : resolve();
            fill();
          });
        }
      };
      fill();
    });

  const expectAll = async (who: string) => {
    const s = await stats();
    if (s.messages !== CONTACTS || s.destinations !== CONTACTS || s.received !== CONTACTS || s.texts.join() !== `0:${MESSAGE}` || s.maxOutstanding > WINDOW) {
      throw new Error(`${who}: SMSC got ${JSON.stringify(s)}, expected ${CONTACTS}`);
    }
    await resetSmsc();
  };
  const sendToAll = () => fetch(`${herald.url}/notifications/send-to-all`, { method: 'POST', headers: auth, body: JSON.stringify({ type: 'sms', message: MESSAGE, to: 'all' }) });

  // One untimed full run each (binding Herald's session); the bare loop needs a few to reach its pace (JIT).
  const w = await sendToAll();
  const warm = (await w.json()) as { status: string; error?: string }[];
  if (!w.ok || warm.some((o) => o.status !== 'success')) throw new Error(`warm-up: ${w.status} ${JSON.stringify(warm).slice(0, 300)}`);
  await expectAll('herald warm-up');
  for (let i = 0; i < 3; i++) {
    await bare(destinations);
    await expectAll('smpp-loop warm-up');
  }

  // CPU per message of each contender's side (from /proc), which says where a round's time went:
  // Herald's process and Postgres, or this process's loop; and the SMSC's, alike for both.
  const cpu: Record<string, { sender: number[]; postgres: number[]; smsc: number[] }> = {};
  const measured = async <T>(name: string, work: () => Promise<T>): Promise<T> => {
    const [h0, s0, l0] = [cpuNow(herald.child.pid!), cpuNow(smsc.child.pid!).herald, process.cpuUsage()];
    const result = await work();
    const [h1, s1, l1] = [cpuNow(herald.child.pid!), cpuNow(smsc.child.pid!).herald, process.cpuUsage(l0)];
    const perMessage = (ms: number) => (ms * 1000) / CONTACTS;
    const c = (cpu[name] ??= { sender: [], postgres: [], smsc: [] });
    c.sender.push(perMessage(name === 'herald' ? h1.herald - h0.herald : (l1.user + l1.system) / 1000));
    c.postgres.push(perMessage(h1.postgres - h0.postgres));
    c.smsc.push(perMessage(s1 - s0));
    return result;
  };

  console.log(`smpp: send-to-all to ${CONTACTS} contacts into a fake SMSC over SMPP; window ${WINDOW}; ${ROUNDS} rounds`);
  const results = await compareTimed(
    [
      {
        name: 'herald',
        run: async () => {
          const { res, outcomes, ms } = await measured('herald', async () => {
            const t0 = performance.now();
            const res = await sendToAll();
            const outcomes = (await res.json()) as { status: string }[];
            return { res, outcomes, ms: performance.now() - t0 };
          });
          if (!res.ok || outcomes.length !== CONTACTS || outcomes.some((o) => o.status !== 'success')) throw new Error(`herald: ${res.status} ${JSON.stringify(outcomes).slice(0, 300)}`);
          await expectAll('herald');
          return ms;
        },
      },
      {
        name: 'smpp-loop',
        run: async () => {
          const ms = await measured('smpp-loop', async () => {
            const t0 = performance.now();
            await bare(destinations);
            return performance.now() - t0;
          });
          await expectAll('smpp-loop');
          return ms;
        },
      },
    ],
    ROUNDS,
    CONTACTS,
  );
  const h = median(results.herald!);
  const b = median(results['smpp-loop']!);
  console.log(`herald     median ${h.toFixed(0)} msg/s; smpp-loop median ${b.toFixed(0)} msg/s (window ${WINDOW})`);
  for (const [name, c] of Object.entries(cpu)) {
    const postgres = name === 'herald' ? `, Postgres ${median(c.postgres).toFixed(1)}` : '';
    console.log(`cpu per message (medians, µs): ${name} ${median(c.sender).toFixed(1)}${postgres}; SMSC ${median(c.smsc).toFixed(1)}`);
  }
  summary({ goal: '>= 0.50', spread: ['herald', results.herald!, 'baseline', results['smpp-loop']!, 'msg/s'] });
  console.log(`ratio: ${(h / b).toFixed(3)}`);
} finally {
  started.link?.destroy();
  await started.pool?.end();
  await started.herald?.stop();
  await started.smsc?.stop();
  await started.db?.stop();
}
