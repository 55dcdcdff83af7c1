import type { Knex } from 'knex';

/**
 * Contact imports (platform.md, "Contacts in bulk").
 *
 * - `contact_imports`: one per uploaded file: its options, where it stands, its counters and the
 *   first 1,000 row errors. `queued` until a worker claims it; at most one `running` per
 *   organization (the partial unique index: a second import waits its turn); a worker holds it
 *   under a lease (`leased_until`) and a worker that dies leaves it to the next once the lease ends.
 *   `merged_through` is the last match key merged: a batch commits with it, so an import taken over
 *   resumes after the last whole batch.
 * - `contact_import_chunks`: the file as uploaded, 1 MiB per row, written in the upload's
 *   transaction; dropped when the import ends.
 * - `contact_import_rows`: the staging table. The file's valid rows, parsed, normalised and copied
 *   in (`COPY`) in one transaction, then merged into `contacts` in batches of match keys, in key
 *   order (all the rows of one address are in one batch, the last one wins); dropped when the import
 *   ends. No foreign key: its check, row by row, doubled the time of the `COPY` (the import's runner
 *   is the only writer, and drops them).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE contact_imports (
      organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
      id uuid NOT NULL DEFAULT gen_random_uuid(),
      status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'running', 'completed', 'failed', 'canceled')),
      options jsonb NOT NULL,
      file_name text,
      file_bytes bigint NOT NULL,
      columns text[] NOT NULL,
      created_by_user_id uuid,
      created_by_api_key_id uuid,
      staged boolean NOT NULL DEFAULT false,
      rows_total integer,
      rows_read integer NOT NULL DEFAULT 0,
      created integer NOT NULL DEFAULT 0,
      updated integer NOT NULL DEFAULT 0,
      skipped integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      errors jsonb NOT NULL DEFAULT '[]',
      merged_through text,
      leased_until timestamptz,
      attempts integer NOT NULL DEFAULT 0,
      failure text,
      created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      started_at timestamptz,
      finished_at timestamptz,
      updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
      PRIMARY KEY (organization_id, id)
    )`);
  await knex.raw('CREATE INDEX contact_imports_org_created_idx ON contact_imports (organization_id, created_at DESC, id DESC)');
  await knex.raw(`CREATE UNIQUE INDEX contact_imports_one_running_idx ON contact_imports (organization_id) WHERE status = 'running'`);
  await knex.raw(`CREATE INDEX contact_imports_unfinished_idx ON contact_imports (organization_id, created_at) WHERE status IN ('queued', 'running')`);
  await knex.raw(`
    CREATE TABLE contact_import_chunks (
      organization_id uuid NOT NULL,
      import_id uuid NOT NULL,
      seq integer NOT NULL,
      data bytea NOT NULL,
      PRIMARY KEY (organization_id, import_id, seq),
      FOREIGN KEY (organization_id, import_id) REFERENCES contact_imports (organization_id, id) ON DELETE CASCADE
    )`);
  await knex.raw(`
    CREATE TABLE contact_import_rows (
      organization_id uuid NOT NULL,
      import_id uuid NOT NULL,
      line integer NOT NULL,
      match_key text NOT NULL,
      id uuid NOT NULL,
      name text,
      email text,
      phone text,
      country_code text,
      company text,
      tags text[],
      attributes jsonb NOT NULL,
      leaves text[] NOT NULL,
      PRIMARY KEY (organization_id, import_id, line)
    )`);
  await knex.raw('CREATE INDEX contact_import_rows_key_idx ON contact_import_rows (organization_id, import_id, match_key, line DESC)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP TABLE contact_import_rows');
  await knex.raw('DROP TABLE contact_import_chunks');
  await knex.raw('DROP TABLE contact_imports');
}
