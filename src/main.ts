// `npm start`: the HTTP API (both doors, and the queue workers unless WORKERS=false).
import { configOrExit, runEntry, stopOnSignals } from './entry.js';
import { createLogger, startHerald } from './server.js';

runEntry('Herald', async () => {
  const config = configOrExit();
  const log = createLogger(config);
  const started = Date.now();
  const herald = await startHerald(config, log);
  log.info({ url: herald.url, deliveryMode: config.deliveryMode, startupMs: Date.now() - started }, 'herald listening');
  stopOnSignals(log, 'herald', herald.stop);
});
