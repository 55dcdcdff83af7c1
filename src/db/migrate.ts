import { readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL, fileURLToPath } from 'node:url';
import type { Knex } from 'knex';
import { distribute } from './citus.js';
import type { Db } from './database.js';

export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../migrations');

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/** Loads the timestamp-named files of `migrations/` through the module loader in use (tsx or jest). */
const source: Knex.MigrationSource<string> = {
  async getMigrations() {
    return readdirSync(MIGRATIONS_DIR)
      .filter((f) => /^\d{14}_[\w-]+\.(ts|js)$/.test(f))
      .sort();
  },
  getMigrationName: (file) => file.replace(/\.(ts|js)$/, ''),
  async getMigration(file): Promise<Migration> {
    return (await import(pathToFileURL(path.join(MIGRATIONS_DIR, file)).href)) as Migration;
  },
};

/** Applies pending migrations, then, on a Citus database, puts any table not yet in its place (`./citus.ts`). */
export async function migrateLatest(db: Db): Promise<string[]> {
  const [, applied] = (await db.migrate.latest({ migrationSource: source })) as [number, string[]];
  const moved = await distribute(db);
  return moved.length ? [...applied, `citus: ${moved.join(', ')} placed`] : applied;
}

export async function migrateRollback(db: Db, all = false): Promise<string[]> {
  const [, undone] = (await db.migrate.rollback({ migrationSource: source }, all)) as [number, string[]];
  return undone;
}
