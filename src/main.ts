import { inspect } from 'node:util';
import { ConfigError, loadConfig } from './config/config.js';
import { createLogger, startHerald } from './server.js';

async function main(): Promise<void> {
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
  const started = Date.now();
  const herald = await startHerald(config, log);
  log.info({ url: herald.url, deliveryMode: config.deliveryMode, startupMs: Date.now() - started }, 'herald listening');

  const shutdown = (signal: string) => {
    log.info({ signal }, 'shutting down');
    herald.stop().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}

/** Anything thrown, as a line an operator can act on: libraries reject with bare values too. */
function describeFailure(err: unknown): string {
  if (err instanceof Error) return err.message || inspect(err);
  if (typeof err === 'string' && err) return err;
  if (err === undefined || err === null || err === '') return 'a failure that carried no reason';
  return inspect(err, { depth: 3 });
}

main().catch((err) => {
  console.error(`Herald failed to start: ${describeFailure(err)}`);
  process.exit(1);
});
