// `npm run bench -- <name>` runs bench/<name>.ts; with no name, every bench in turn.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';

const names = process.argv.slice(2);
const all = readdirSync('bench').filter((f) => f.endsWith('.ts') && f !== 'run.ts').map((f) => f.replace(/\.ts$/, ''));
const chosen = names.length ? names : all;
const unknown = chosen.filter((n) => !all.includes(n));
if (unknown.length) {
  console.error(`unknown bench: ${unknown.join(', ')} (have: ${all.join(', ')})`);
  process.exit(2);
}
const ratios: [string, string][] = [];
for (const name of chosen) {
  console.log(`\n=== bench/${name}`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', `bench/${name}.ts`], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  process.stdout.write(run.stdout);
  const ratio = /^ratio: (.+)$/m.exec(run.stdout)?.[1] ?? `failed (exit ${run.status})`;
  ratios.push([name, ratio]);
}
if (chosen.length > 1) {
  console.log('\n| bench | ratio |\n|---|---|');
  for (const [name, ratio] of ratios) console.log(`| ${name} | ${ratio} |`);
}
