// `npm start`: the HTTP API (both doors, and the queue workers unless WORKERS=false).
import { configOrExit, runEntry, stopOnSignals } from './entry.js';
import { consoleBuildProblem } from './http/console.js';
import { createLogger, readyLine, startHerald } from './server.js';

runEntry('Herald', async () => {
  const config = configOrExit();
  // The console is part of the service: refuse to start without it rather than serve a broken one.
  const problem = consoleBuildProblem();
  if (problem) {
    console.error(problem);
    process.exit(1);
  }
  const log = createLogger(config);
  const started = Date.now();
  // A signal while it starts stops it once started: its first lanes may already be running jobs.
  const starting = startHerald(config, log);
  stopOnSignals(log, 'herald', async () => (await starting).stop());
  const herald = await starting;
  log.info({ url: herald.url, metrics: herald.metricsUrl, deliveryMode: config.deliveryMode, startupMs: Date.now() - started }, 'herald listening');
  // Someone at a terminal gets where to go in words too; a log collector keeps the JSON line alone.
  if (process.stdout.isTTY) console.log(readyLine(herald.url));
});
