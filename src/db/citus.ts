import type { Knex } from 'knex';
import type { Db } from './database.js';
import { LAYOUT, TENANT_COLUMN } from './layout.js';

/**
 * Herald's distribution step: on a database with the `citus` extension, puts every table where
 * `LAYOUT` says it lives; elsewhere it does nothing. It runs after every migration (`migrateLatest`)
 * and is idempotent: tables already in place are left alone, so it acts on a fresh database, on one
 * a new migration added a table to, and on a single-node Herald database being moved onto Citus
 * (rows are copied to the shards).
 *
 * Citus accepts a foreign key only between tables already in their final places (a local table may
 * not reference a distributed one, nor the reverse), so the keys touching the tables it moves are
 * dropped first and added again after, all in one transaction: a failure leaves the schema as it was.
 */

interface Placement {
  relname: string;
  /** `h` hash-distributed, `n` not (a reference table, or a Citus local table), null: plain Postgres. */
  partmethod: string | null;
  /** `t` a reference table's two-phase replication, `s` otherwise. */
  repmodel: string | null;
  autoconverted: boolean | null;
}

export async function isCitus(db: Db | Knex.Transaction): Promise<boolean> {
  const { rows } = await db.raw("SELECT 1 FROM pg_extension WHERE extname = 'citus'");
  return rows.length > 0;
}

const wanted = (table: string, p: Placement): boolean => {
  if ((LAYOUT.tenant as readonly string[]).includes(table)) return p.partmethod === 'h';
  if ((LAYOUT.reference as readonly string[]).includes(table)) return p.partmethod === 'n' && p.repmodel === 't';
  // A Citus local table added on purpose: one that Citus added by itself may be turned back.
  return p.partmethod === 'n' && p.repmodel === 's' && p.autoconverted === false;
};

/** Lays Herald's tables out on a Citus cluster; answers the tables it moved (none when not on Citus). */
export async function distribute(db: Db): Promise<string[]> {
  if (!(await isCitus(db))) return [];
  const placed = new Map((await placements(db)).map((p) => [p.relname, p]));
  const all = [...LAYOUT.reference, ...LAYOUT.coordinator, ...LAYOUT.tenant];
  const pending = all.filter((t) => placed.has(t) && !wanted(t, placed.get(t)!));
  if (!pending.length) return [];

  if (LAYOUT.coordinator.some((t) => pending.includes(t))) {
    const { rows } = await db.raw('SELECT 1 FROM pg_dist_node WHERE groupid = 0');
    if (!rows.length) {
      throw new Error(
        "Citus: the coordinator is not in the cluster's metadata; run SELECT citus_set_coordinator_host('<its host>', <its port>) on it, then migrate again",
      );
    }
  }

  await db.transaction(async (trx) => {
    // Distributing tables that hold rows, and adding keys across them, one shard at a time: Citus
    // refuses parallel work on a table after a reference table changed in the same transaction.
    await trx.raw("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'");
    // The one trigger a tenant table has, the audit log's append-only guard (it only raises and reads
    // no table), goes to the shards with it; Citus refuses a table with triggers otherwise.
    await trx.raw('SET LOCAL citus.enable_unsafe_triggers TO on');
    const keys = await foreignKeys(trx, pending);
    for (const k of keys) await trx.raw(`ALTER TABLE ${q(k.table)} DROP CONSTRAINT ${q(k.name)}`);
    // A table Citus added by itself for a key may have gone back to plain Postgres with the key.
    const now = new Map((await placements(trx)).map((p) => [p.relname, p]));
    const undistribute = async (table: string) => {
      if (now.get(table)?.partmethod) await trx.raw('SELECT undistribute_table(?)', [table]);
    };

    for (const table of LAYOUT.reference.filter((t) => pending.includes(t))) {
      await undistribute(table);
      await trx.raw('SELECT create_reference_table(?)', [table]);
    }
    for (const table of LAYOUT.coordinator.filter((t) => pending.includes(t))) {
      await undistribute(table);
      await trx.raw('SELECT citus_add_local_table_to_metadata(?)', [table]);
    }
    // Colocated with a tenant table already distributed, or with the first one distributed here.
    let anchor: string = LAYOUT.tenant.find((t) => placed.get(t)?.partmethod === 'h') ?? 'default';
    for (const table of LAYOUT.tenant.filter((t) => pending.includes(t))) {
      await undistribute(table);
      await trx.raw('SELECT create_distributed_table(?, ?, colocate_with => ?)', [table, TENANT_COLUMN, anchor]);
      anchor = table;
    }

    for (const k of keys) await trx.raw(`ALTER TABLE ${q(k.table)} ADD CONSTRAINT ${q(k.name)} ${k.definition}`);
  });
  return pending;
}

/** Where each of Herald's tables is now. */
async function placements(db: Db | Knex.Transaction): Promise<Placement[]> {
  const { rows } = await db.raw(
    `SELECT c.relname, p.partmethod, p.repmodel, p.autoconverted
     FROM pg_class c
     JOIN pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_dist_partition p ON p.logicalrelid = c.oid
     WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')`,
  );
  return rows as Placement[];
}

/** The foreign keys from or to any of `tables`, with what re-creates them. */
async function foreignKeys(trx: Knex.Transaction, tables: string[]): Promise<{ table: string; name: string; definition: string }[]> {
  const { rows } = await trx.raw(
    `SELECT rel.relname AS table, con.conname AS name, pg_get_constraintdef(con.oid) AS definition
     FROM pg_constraint con
     JOIN pg_class rel ON rel.oid = con.conrelid
     JOIN pg_class ref ON ref.oid = con.confrelid
     JOIN pg_namespace n ON n.oid = rel.relnamespace
     WHERE con.contype = 'f' AND n.nspname = current_schema() AND (rel.relname = ANY(?) OR ref.relname = ANY(?))
     ORDER BY rel.relname, con.conname`,
    [tables, tables],
  );
  return rows;
}

const q = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;
