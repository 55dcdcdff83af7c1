import { Readable } from 'node:stream';
import type { Knex } from 'knex';
import type { AuthedContext } from '../../context.js';
import { run } from '../../db/statements.js';
import { tenant } from '../../db/tenant.js';
import { badRequest, conflict, payloadTooLarge, validationFailed } from '../../lib/errors.js';
import { unknownGroups } from '../contacts/service.js';
import { listOf, operation } from '../../operation.js';
import { toImportDto } from './dto.js';
import { importJob } from './jobs.js';
import { importOptions, layoutOf } from './options.js';
import type { StoredOptions } from './runner.js';
import { cancelImport, importChanged, type ImportRow } from './sql.js';
import { record } from '../audit/record.js';

const READ = { role: 'any', apiKeys: true } as const;
const WRITE = { role: 'admin', apiKeys: true } as const;

/** The largest file an import takes (platform.md). */
export const MAX_FILE_BYTES = 100 * 1024 * 1024;
/** The file is stored in pieces of this size, each a row, so neither side holds it whole. */
const CHUNK_BYTES = 1024 * 1024;
/** The bytes read before the header row is judged: a header longer than this is refused with the rest. */
const HEAD_BYTES = 64 * 1024;

/**
 * The pieces stored between two collections of V8's young generation. An upload allocates little
 * but buffers (the socket's, each piece, the driver's copy of it), and V8 frees a dead buffer only
 * when it collects: left to itself it waited for 64 MiB of them, a file of 1,000,000 rows raising
 * the process's memory by that much. A young collection every few pieces frees them (about a
 * millisecond each, with `npm start`'s `--expose-gc`; without it, nothing is asked).
 */
const YOUNG_COLLECTION_CHUNKS = 4;
const collectYoung = () => (globalThis as { gc?: (options: { type: 'minor' }) => void }).gc?.({ type: 'minor' });

/** The file of an import, as either door gives it. */
export interface ImportFile {
  stream: Readable;
  name: string | null;
}

/** Reads a stream in pieces of at least `size` bytes (the last may be shorter). */
async function* piecesOf(stream: Readable, size: number): AsyncGenerator<Buffer> {
  let held: Buffer[] = [];
  let heldBytes = 0;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    held.push(buf);
    heldBytes += buf.length;
    while (heldBytes >= size) {
      const all = Buffer.concat(held);
      yield all.subarray(0, size);
      held = [all.subarray(size)];
      heldBytes = all.length - size;
    }
  }
  if (heldBytes) yield Buffer.concat(held);
}

/**
 * Stores the file in the transaction that creates the import: its pieces as they arrive, the header
 * judged from the first one (a bad mapping is a 400 before the rest is read), the size limit kept
 * as it goes (413). The import exists, queued, only once all of it is stored.
 */
async function storeFile(trx: Knex.Transaction, ctx: AuthedContext, file: ImportFile, write: (head: string) => Promise<string>): Promise<{ importId: string; bytes: number }> {
  let importId: string | null = null;
  let bytes = 0;
  let seq = 0;
  for await (const piece of piecesOf(file.stream, CHUNK_BYTES)) {
    bytes += piece.length;
    if (bytes > MAX_FILE_BYTES) throw payloadTooLarge(`file must be at most ${MAX_FILE_BYTES / 1024 / 1024} MiB`);
    importId ??= await write(piece.subarray(0, HEAD_BYTES).toString('utf8'));
    await trx('contact_import_chunks').insert({ organization_id: ctx.caller.orgId, import_id: importId, seq: seq++, data: piece });
    if (seq % YOUNG_COLLECTION_CHUNKS === 0) collectYoung();
  }
  if (!importId) throw validationFailed([{ field: 'file', message: 'file is empty' }]);
  return { importId, bytes };
}

/**
 * `POST /contacts/import` and `startContactImport`: stores the file and queues its import; answers
 * the import at once (202), queued. The import runs in the job queue (`runner.ts`).
 */
export const start = operation({
  access: WRITE,
  input: importOptions,
  async check(ctx, input) {
    return unknownGroups(tenant(ctx.db, ctx.caller.orgId), input.groups);
  },
  async run(ctx, options, { file }: { file: ImportFile }) {
    const orgId = ctx.caller.orgId;
    let created: ImportRow | undefined;
    const { importId, bytes } = await ctx.db.transaction(async (trx) => {
      const result = await storeFile(trx, ctx, file, async (head) => {
        const layout = layoutOf(head, options);
        const stored: StoredOptions = { matchBy: layout.matchBy, existing: options.existing, groups: [...new Set(options.groups)], tags: [...new Set(options.tags)], delimiter: layout.delimiter, layout };
        [created] = (await trx('contact_imports')
          .insert({
            organization_id: orgId,
            status: 'queued',
            options: JSON.stringify(stored),
            file_name: file.name,
            file_bytes: 0,
            columns: layout.columns.map((c) => c.header),
            created_by_user_id: ctx.caller.userId,
            created_by_api_key_id: ctx.caller.apiKeyId,
          })
          .returning('*')) as ImportRow[];
        return created!.id;
      });
      await trx('contact_imports').where({ organization_id: orgId, id: result.importId }).update({ file_bytes: result.bytes });
      const details = { fileName: file.name, bytes: result.bytes, existing: options.existing };
      await record(trx, ctx, { action: 'contact_import.started', resourceType: 'contact_import', resourceId: result.importId, details });
      return result;
    });
    await ctx.queue.add(importJob(orgId, importId));
    // Answered as written: a worker may already have taken it.
    return toImportDto({ ...created!, file_bytes: String(bytes) });
  },
});

export const get = operation({
  access: READ,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    return toImportDto(await tenant(ctx.db, ctx.caller.orgId).owned<ImportRow>('contact_imports', id));
  },
});

export const list = listOf(READ, 'contact_imports', ['contact_imports.*'], toImportDto);

/** `POST /contact-imports/:id/cancel`: a queued import never starts; a running one stops after the batch under way (batches merged stay). */
export const cancel = operation({
  access: WRITE,
  async run(ctx, _input: undefined, { id }: { id: string }) {
    const current = await tenant(ctx.db, ctx.caller.orgId).owned<ImportRow>('contact_imports', id, ['status']);
    const canceled = await ctx.db.transaction(async (trx) => {
      const [moved] = await run(trx, cancelImport, { orgId: ctx.caller.orgId, importId: id, now: new Date() });
      if (!moved) throw conflict(`Import is ${current.status} and can no longer be canceled`);
      await run(trx, importChanged, { orgId: ctx.caller.orgId, importId: id });
      await record(trx, ctx, { action: 'contact_import.canceled', resourceType: 'contact_import', resourceId: id, details: { fileName: moved.file_name } });
      return moved;
    });
    return toImportDto(canceled);
  },
});

/** The GraphQL door's file: CSV text given in the mutation. */
export function textFile(csv: string, name: string | null): ImportFile {
  if (!csv) throw badRequest('csv must not be empty');
  return { stream: Readable.from([Buffer.from(csv, 'utf8')]), name };
}
