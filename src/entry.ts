import { inspect } from 'node:util';
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from './config/config.js';

// What the two entry points (`npm start`: src/main.ts, `npm run worker`: src/worker.ts) share.

/** The configuration, or exit 1 naming every bad variable. */
export function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}

/**
 * On SIGINT or SIGTERM: `stop`, then exit 0 (1 when stopping failed). A second signal while
 * stopping (Ctrl-C pressed again) exits at once, with 128 + its number as a shell reports it: still
 * through `process.exit`, so that the embedded Postgres, in a process group of its own, is told to
 * stop on the way out (src/db/embedded.ts) rather than left running.
 */
export function stopOnSignals(log: Logger, what: string, stop: () => Promise<void>): void {
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, `${what} stopping at once, without draining`);
      process.exit(128 + (signal === 'SIGINT' ? 2 : 15));
    }
    stopping = true;
    log.info({ signal }, `${what} shutting down`);
    stop().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, `${what} shutdown failed`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

/** Anything thrown, as a line an operator can act on: libraries reject with bare values too. */
export function describeFailure(err: unknown): string {
  if (err instanceof Error) return err.message || inspect(err);
  if (typeof err === 'string' && err) return err;
  if (err === undefined || err === null || err === '') return 'a failure that carried no reason';
  return inspect(err, { depth: 3 });
}

/** Runs an entry point's start; a failure is printed readably and ends the process with 1. */
export function runEntry(what: string, start: () => Promise<void>): void {
  start().catch((err: unknown) => {
    console.error(`${what} failed to start: ${describeFailure(err)}`);
    process.exit(1);
  });
}
