import { loadConfig } from '../config/config.js';
import { createDb } from '../db/database.js';
import { startEmbeddedPostgres } from '../db/embedded.js';
import { migrateLatest, migrateRollback } from '../db/migrate.js';
import path from 'node:path';
import { pino } from 'pino';
import { migrateQueue } from '../jobs/queue.js';

/** `npm run migrate` applies pending migrations; `npm run migrate -- down` undoes the last batch. */
const config = loadConfig();
const embedded = config.databaseUrl ? null : await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'));
const db = createDb(config.databaseUrl ?? embedded!.url, 2);
try {
  const names = process.argv[2] === 'down' ? await migrateRollback(db) : await migrateLatest(db);
  if (process.argv[2] !== 'down') await migrateQueue(config.databaseUrl ?? embedded!.url, pino({ level: 'warn' }));
  console.log(names.length ? names.join('\n') : 'Already up to date');
} finally {
  await db.destroy();
  await embedded?.stop();
}
