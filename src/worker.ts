// `npm run worker`: queue workers only, no HTTP. Any number of these share one database with the API.
import { ConfigError, loadConfig } from './config/config.js';
import { createLogger, openRuntime } from './server.js';

let config;
try {
  config = loadConfig();
} catch (err) {
  if (err instanceof ConfigError) {
    console.error(err.message);
    process.exit(1);
  }
  throw err;
}
const log = createLogger(config);
const runtime = await openRuntime(config, log, true);
log.info({ concurrency: config.workerConcurrency }, 'herald worker running');
const shutdown = (signal: string) => {
  log.info({ signal }, 'worker shutting down');
  runtime.close().then(
    () => process.exit(0),
    (err) => {
      log.error({ err }, 'worker shutdown failed');
      process.exit(1);
    },
  );
};
process.once('SIGINT', () => shutdown('SIGINT'));
process.once('SIGTERM', () => shutdown('SIGTERM'));
