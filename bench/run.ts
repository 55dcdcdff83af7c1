// `npm run bench -- <name>` runs bench/<name>.ts; with no name, every bench in turn, then one
// markdown table. Each bench ends with `ratio: <number>` (higher is better) and may print, before it:
//   goal: >= 0.80                               the ratio it aims for
//   p99: herald=12.3ms baseline=9.8ms           median p99 latencies
//   spread: herald=700-760 baseline=790-830 req/s   min-max over rounds
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

/** Goals of benches written before the `goal:` line existed (from their headers). */
const KNOWN_GOALS: Record<string, string> = { campaign: '>= 0.5' };

const names = process.argv.slice(2);
const all = readdirSync('bench').filter((f) => f.endsWith('.ts') && f !== 'run.ts').map((f) => f.replace(/\.ts$/, ''));
const chosen = names.length ? names : all;
const unknown = chosen.filter((n) => !all.includes(n));
if (unknown.length) {
  console.error(`unknown bench: ${unknown.join(', ')} (have: ${all.join(', ')})`);
  process.exit(2);
}
const rows: string[][] = [];
for (const name of chosen) {
  console.log(`\n=== bench/${name}`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', `bench/${name}.ts`], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  process.stdout.write(run.stdout);
  const line = (key: string) => new RegExp(`^${key}: (.+)$`, 'm').exec(run.stdout)?.[1]?.trim();
  const ratio = run.status === 0 ? line('ratio') : undefined;
  const goal = line('goal') ?? KNOWN_GOALS[name];
  const target = goal && /^(>=|<=)\s*([\d.]+)/.exec(goal);
  const met = ratio === undefined || !target ? '-' : (target[1] === '>=' ? Number(ratio) >= Number(target[2]) : Number(ratio) <= Number(target[2])) ? 'yes' : 'no';
  rows.push([name, ratio ?? (run.status === 0 ? "no ratio line" : `failed (exit ${run.status})`), goal ?? '-', met, line('p99') ?? '-', line('spread') ?? '-']);
}
if (chosen.length > 1) {
  console.log('\n| bench | ratio | goal | met? | p99 (median) | spread (min-max) |\n|---|---|---|---|---|---|');
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
}
