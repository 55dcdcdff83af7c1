// `npm run worker`: queue workers only, no HTTP. Any number of these share one database with the API.
import { configOrExit, runEntry, stopOnSignals } from './entry.js';
import { createLogger, openRuntime } from './server.js';

runEntry('Herald worker', async () => {
  const config = configOrExit();
  const log = createLogger(config);
  const runtime = await openRuntime(config, log, true);
  log.info({ concurrency: config.workerConcurrency, metrics: runtime.metrics?.url }, 'herald worker running');
  stopOnSignals(log, 'worker', runtime.close);
});
