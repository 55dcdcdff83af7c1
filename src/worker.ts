// `npm run worker`: queue workers only, no HTTP. Any number of these share one database with the API.
import { configOrExit, runEntry, stopOnSignals } from './entry.js';
import { createLogger, openRuntime } from './server.js';

runEntry('Herald worker', async () => {
  const config = configOrExit();
  const log = createLogger(config);
  // A signal while it starts stops it once started: its first lanes may already be running jobs.
  const opening = openRuntime(config, log, true);
  stopOnSignals(log, 'worker', async () => (await opening).close());
  const runtime = await opening;
  log.info({ concurrency: config.workerConcurrency, metrics: runtime.metrics?.url }, 'herald worker running');
});
