import { Logger, type LogLevel } from 'graphile-worker';
import type { Logger as PinoLogger } from 'pino';

/** graphile-worker's logs through pino; its per-job chatter (info about every job) stays at debug. */
export function quietLogger(log: PinoLogger): Logger {
  const child = log.child({ component: 'queue' });
  return new Logger(() => (level: LogLevel, message: string, meta?: unknown) => {
    if (level === 'error') child.error({ meta }, message);
    else if (level === 'warning') child.warn({ meta }, message);
    else child.debug({ meta }, message);
  });
}
