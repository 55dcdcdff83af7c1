import { triggerSql } from '../campaigns/triggers.js';
import { statement } from '../../db/statements.js';
import { notified, PROGRESS_CHANNEL } from '../../delivery/sql/progress.js';

/**
 * The named statements of contact imports. Each is one organization's, filtered by its
 * `organization_id` (on Citus, one shard; the staging rows, the contacts and their groups are
 * colocated), with times passed in rather than read from a volatile clock.
 */

/**
 * A change of an import is announced on the campaigns' channel (payload `<organizationId>:<importId>`):
 * the API process's one listener hands it to the `contactImportProgress` subscribers of that id.
 */
export const IMPORT_PROGRESS_CHANNEL = PROGRESS_CHANNEL;

/**
 * Announces a change of the import, on the commit of the transaction it runs in; run after each
 * statement below that answered a row. A statement of its own, which reads no table: on Citus it
 * runs on the coordinator, where the API processes listen. A step of the statement that changed the
 * import ran on the worker holding the import's shard (the statement is routed there whole), and a
 * worker neither reaches the listeners nor may prepare a transaction that notified.
 */
export const importChanged = statement<{ orgId: string; importId: string }, { notified: string }>(
  'herald_contact_import_changed',
  `SELECT ${notified(`:orgId::text || ':' || :importId::text`, IMPORT_PROGRESS_CHANNEL)}`,
);

export interface ImportRow {
  organization_id: string;
  id: string;
  status: ImportStatus;
  options: Record<string, unknown>;
  file_name: string | null;
  file_bytes: string;
  columns: string[];
  created_by_user_id: string | null;
  created_by_api_key_id: string | null;
  staged: boolean;
  rows_total: number | null;
  rows_read: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  errors: { line: number; column?: string; message: string }[];
  merged_through: string | null;
  leased_until: Date | null;
  attempts: number;
  failure: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
}

export type ImportStatus = 'queued' | 'running' | 'completed' | 'failed' | 'canceled';

/**
 * A worker takes the import: a queued one, or a running one whose worker's lease ran out. A second
 * import of the organization cannot run beside one (the partial unique index refuses it: 23505).
 */
export const claimImport = statement<{ orgId: string; importId: string; now: Date; leasedUntil: Date }, ImportRow>(
  'herald_contact_import_claim',
  `UPDATE contact_imports
   SET status = 'running', leased_until = :leasedUntil, attempts = attempts + 1, started_at = coalesce(started_at, :now), updated_at = :now
   WHERE organization_id = :orgId AND id = :importId
     AND (status = 'queued' OR (status = 'running' AND leased_until < :now))
   RETURNING *`,
);

/**
 * Progress while the file is read, and the lease renewed; no row when the import is no longer this
 * worker's (canceled, or taken over by another worker: `attempts` is the claim's number).
 */
export const stagingProgress = statement<{ orgId: string; importId: string; attempt: number; rowsRead: number; now: Date; leasedUntil: Date }, { status: string }>(
  'herald_contact_import_staging_progress',
  `UPDATE contact_imports SET rows_read = :rowsRead, leased_until = :leasedUntil, updated_at = :now
   WHERE organization_id = :orgId AND id = :importId AND status = 'running' AND attempts = :attempt
   RETURNING id, status`,
);

/** The file is in the staging table (in the transaction of its `COPY`); no row when the import is no longer running. */
export const markStaged = statement<{ orgId: string; importId: string; attempt: number; rows: number; failed: number; errors: string; now: Date; leasedUntil: Date }, { status: string }>(
  'herald_contact_import_staged',
  `UPDATE contact_imports
   SET staged = true, rows_total = :rows, rows_read = :rows, failed = :failed, errors = :errors::jsonb, leased_until = :leasedUntil, updated_at = :now
   WHERE organization_id = :orgId AND id = :importId AND status = 'running' AND attempts = :attempt
   RETURNING id, status`,
);

/** The import, locked for a batch (a cancel waits for the batch, and the batch sees a cancel made before it). */
export const lockImport = statement<{ orgId: string; importId: string }, ImportRow>(
  'herald_contact_import_lock',
  `SELECT * FROM contact_imports WHERE organization_id = :orgId AND id = :importId FOR UPDATE`,
);

/**
 * The last match key of the next batch: the `:size`-th staged row after `:after` in key order, or the
 * last key when fewer remain (null when none do). Every row of one key is in the same batch.
 */
export const batchEnd = statement<{ orgId: string; importId: string; after: string; size: number }, { upto: string | null; rows: string; keys: string }>(
  'herald_contact_import_batch_end',
  `WITH upto AS (
     SELECT coalesce(
       (SELECT match_key FROM contact_import_rows
        WHERE organization_id = :orgId AND import_id = :importId AND match_key > :after
        ORDER BY match_key OFFSET :size - 1 LIMIT 1),
       (SELECT max(match_key) FROM contact_import_rows WHERE organization_id = :orgId AND import_id = :importId AND match_key > :after)
     ) AS upto
   )
   SELECT upto.upto, count(r.line) AS rows, count(DISTINCT r.match_key) AS keys
   FROM upto LEFT JOIN contact_import_rows r
     ON r.organization_id = :orgId AND r.import_id = :importId AND r.match_key > :after AND r.match_key <= upto.upto
   GROUP BY upto.upto`,
);

/** The batch's rows, one per match key (the file's last row of it wins). */
const BATCH = `batch AS (
  SELECT DISTINCT ON (match_key) * FROM contact_import_rows
  WHERE organization_id = :orgId AND import_id = :importId AND match_key > :after AND match_key <= :upto
  ORDER BY match_key, line DESC
)`;

/**
 * A contact of the organization with the row's match key: by email when the key is one (it holds
 * `@`), else by phone (`rows.ts` keys a row by its `matchBy` field, else by its other one). Each arm
 * is one of the two indexed lookups; a `#<line>` key matches no phone.
 */
const matches = (contact: string) =>
  `${contact}.organization_id = :orgId AND (
     (strpos(b.match_key, '@') > 0 AND lower(${contact}.email) = b.match_key) OR (strpos(b.match_key, '@') = 0 AND ${contact}.phone = b.match_key))`;

/** Tags with the import's own added, each once, in first-seen order. */
const withTags = (tags: string) => `ARRAY(SELECT t FROM unnest(${tags} || :tags::text[]) WITH ORDINALITY AS u(t, n) GROUP BY t ORDER BY min(n))`;

/**
 * The import's `matchBy`: which field a row is keyed by first (`rows.ts`). The statements match on
 * what each key is, whichever it was; each `matchBy` has its statements by name all the same.
 */
export type MatchBy = 'email' | 'phone';

interface BatchParams {
  orgId: string;
  importId: string;
  after: string;
  upto: string;
}

/** Existing contacts updated from their row (a cell left empty keeps the stored value; attributes merge; tags and groups add). */
export const updateMatched = (by: MatchBy) =>
  statement<BatchParams & { tags: string[]; groups: string[]; now: Date }, { id: string; match_key: string; leaves: string[] }>(
    `herald_contact_import_update_${by}`,
    `WITH ${BATCH},
     updated AS (
       UPDATE contacts c
       SET name = coalesce(b.name, c.name),
           email = coalesce(b.email, c.email),
           phone = coalesce(b.phone, c.phone),
           country_code = coalesce(b.country_code, c.country_code),
           company = coalesce(b.company, c.company),
           tags = ${withTags('c.tags || b.tags')},
           attributes = c.attributes || b.attributes,
           -- A zone the row gives is the contact's own; one taken from a new phone follows it, unless the contact has its own.
           time_zone = CASE WHEN b.time_zone_set THEN b.time_zone WHEN c.time_zone_set OR b.phone IS NULL THEN c.time_zone ELSE b.time_zone END,
           time_zone_set = c.time_zone_set OR b.time_zone_set,
           updated_at = :now
       FROM batch b
       WHERE ${matches('c')}
       RETURNING c.id, c.created_at, b.match_key, b.leaves
     ),
     joined AS (
       INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at)
       SELECT :orgId, updated.id, g, updated.created_at FROM updated CROSS JOIN unnest(:groups::uuid[]) AS g
       ON CONFLICT DO NOTHING
       RETURNING contact_id, group_id
     ),
     fired AS (${triggerSql('joined', 'contact.added_to_group')})
     SELECT id, match_key, leaves FROM updated WHERE (SELECT count(*) FROM joined) >= 0`,
  );

/** How many of the batch's keys match an existing contact (left alone: `existing` is `skip`). */
export const countMatched = (by: MatchBy) =>
  statement<BatchParams, { matched: string }>(
    `herald_contact_import_count_matched_${by}`,
    `WITH ${BATCH}
     SELECT count(*) AS matched FROM batch b WHERE EXISTS (SELECT 1 FROM contacts c WHERE ${matches('c')})`,
  );

/**
 * New contacts from the batch's rows that match none, in key order with their time-ordered ids; a
 * row without a name creates nothing (`nameless` reports it). Contacts that the row says left a
 * channel are created without it, as a create through the API with its consent does, and their
 * consent history says so.
 */
export const insertUnmatched = (by: MatchBy) =>
  statement<BatchParams & { tags: string[]; groups: string[]; now: Date; left: string }, { created: string }>(
    `herald_contact_import_insert_${by}`,
    `WITH ${BATCH},
     created AS (
       INSERT INTO contacts (organization_id, id, name, email, phone, country_code, company, tags, attributes, unsubscribed, time_zone, time_zone_set, created_at, updated_at)
       SELECT :orgId, b.id, b.name, b.email, b.phone, b.country_code, b.company, ${withTags('b.tags')}, b.attributes,
              coalesce((SELECT jsonb_object_agg(ch, :left::jsonb) FROM unnest(b.leaves) AS ch), '{}'::jsonb), b.time_zone, b.time_zone_set, :now, :now
       FROM batch b
       WHERE b.name IS NOT NULL AND NOT EXISTS (SELECT 1 FROM contacts c WHERE ${matches('c')})
       ORDER BY b.match_key
       RETURNING id, created_at
     ),
     history AS (
       INSERT INTO consent_changes (organization_id, contact_id, channel, status, source, at)
       SELECT :orgId, created.id, ch, 'unsubscribed', 'import', :now
       FROM created JOIN batch b ON b.id = created.id CROSS JOIN unnest(b.leaves) AS ch
     ),
     joined AS (
       INSERT INTO contact_groups (organization_id, contact_id, group_id, contact_created_at)
       SELECT :orgId, created.id, g, created.created_at FROM created CROSS JOIN unnest(:groups::uuid[]) AS g
       RETURNING contact_id, group_id
     ),
     by_creation AS (${triggerSql('(SELECT id AS contact_id FROM created)', 'contact.created')}),
     by_group AS (${triggerSql('joined', 'contact.added_to_group')})
     SELECT count(*) AS created FROM created WHERE (SELECT count(*) FROM joined) >= 0`,
  );

/** The batch's rows that would create a contact but have no name (checked after the inserts: they still match nothing). */
export const nameless = (by: MatchBy) =>
  statement<BatchParams, { line: number }>(
    `herald_contact_import_nameless_${by}`,
    `WITH ${BATCH}
     SELECT b.line FROM batch b WHERE b.name IS NULL AND NOT EXISTS (SELECT 1 FROM contacts c WHERE ${matches('c')}) ORDER BY b.line LIMIT 1000`,
  );

/** A batch is merged: the resume point and the counters move with it, in its transaction (under `lockImport`'s lock). */
export const batchMerged = statement<
  { orgId: string; importId: string; upto: string; created: number; updated: number; skipped: number; failed: number; errors: string; now: Date; leasedUntil: Date },
  { status: string }
>(
  'herald_contact_import_batch_merged',
  `UPDATE contact_imports
   SET merged_through = :upto, created = created + :created, updated = updated + :updated, skipped = skipped + :skipped,
       failed = failed + :failed,
       errors = CASE WHEN jsonb_array_length(errors) >= 1000 THEN errors
                     ELSE errors || (SELECT coalesce(jsonb_agg(e), '[]'::jsonb) FROM (SELECT e FROM jsonb_array_elements(:errors::jsonb) AS e LIMIT 1000 - jsonb_array_length(errors)) x) END,
       leased_until = :leasedUntil, updated_at = :now
   WHERE organization_id = :orgId AND id = :importId AND status = 'running'
   RETURNING id, status`,
);

/** The import ends (`completed` or `failed`) unless it was canceled, or taken over, meanwhile. */
export const finishImport = statement<{ orgId: string; importId: string; attempt: number; status: ImportStatus; failure: string | null; now: Date }, { status: string }>(
  'herald_contact_import_finish',
  `UPDATE contact_imports SET status = :status, failure = :failure, finished_at = :now, leased_until = NULL, updated_at = :now
   WHERE organization_id = :orgId AND id = :importId AND status = 'running' AND attempts = :attempt
   RETURNING id, status`,
);

/**
 * A worker that stops mid-import gives its lease up: the import stays running, and the job's retry
 * (on any worker) claims it at once and resumes after the last whole batch.
 */
export const releaseImport = statement<{ orgId: string; importId: string; attempt: number; now: Date }, { id: string }>(
  'herald_contact_import_release',
  `UPDATE contact_imports SET leased_until = :now, updated_at = :now
   WHERE organization_id = :orgId AND id = :importId AND status = 'running' AND attempts = :attempt
   RETURNING id`,
);

/** A queued or running import is canceled: a running one stops before its next batch (the one under way rolls back or ends first). */
export const cancelImport = statement<{ orgId: string; importId: string; now: Date }, ImportRow>(
  'herald_contact_import_cancel',
  `UPDATE contact_imports SET status = 'canceled', finished_at = :now, leased_until = NULL, updated_at = :now
   WHERE organization_id = :orgId AND id = :importId AND status IN ('queued', 'running')
   RETURNING *`,
);

/** The file and the staging rows of an import that ended: nothing reads them again. */
export const dropStaging = statement<{ orgId: string; importId: string }, { dropped: string }>(
  'herald_contact_import_drop_staging',
  `WITH rows AS (DELETE FROM contact_import_rows WHERE organization_id = :orgId AND import_id = :importId RETURNING 1),
        chunks AS (DELETE FROM contact_import_chunks WHERE organization_id = :orgId AND import_id = :importId RETURNING 1)
   SELECT (SELECT count(*) FROM rows) + (SELECT count(*) FROM chunks) AS dropped`,
);

/**
 * The bytes of a stored chunk come back in slices of this size, rows of one statement: a slice's
 * text on the wire (hex, twice its size) stays under V8's large-object size, so it is collected as
 * soon as it is parsed, where a whole chunk's 2 MiB text was held until a full collection and a file
 * of 1,000,000 rows left tens of megabytes of them behind at a time.
 */
const CHUNK_SLICE_BYTES = 48 * 1024;

/** One stored piece of the file, in slices (in order). */
export const readChunk = statement<{ orgId: string; importId: string; seq: number }, { data: Buffer }>(
  'herald_contact_import_read_chunk',
  `SELECT substring(c.data FROM s.at FOR ${CHUNK_SLICE_BYTES}) AS data
   FROM contact_import_chunks c, generate_series(1, length(c.data), ${CHUNK_SLICE_BYTES}) AS s(at)
   WHERE c.organization_id = :orgId AND c.import_id = :importId AND c.seq = :seq
   ORDER BY s.at`,
);

/** The oldest queued import of the organization, to start when the one running ends. */
export const nextQueued = statement<{ orgId: string }, { id: string }>(
  'herald_contact_import_next_queued',
  `SELECT id FROM contact_imports WHERE organization_id = :orgId AND status = 'queued' ORDER BY created_at, id LIMIT 1`,
);
