import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { Request } from 'express';
import { authenticationRequired, unsupportedMediaType, validationFailed } from '../lib/errors.js';

/** A file a request uploads, with the fields that came with it. */
export interface Upload {
  /** The query string (a `text/csv` body) or the form fields before the file (`multipart/form-data`). */
  fields: Record<string, unknown>;
  file: { stream: Readable; name: string | null };
}

export const UPLOAD_TYPES = ['text/csv', 'multipart/form-data'];

const withoutCredential = (query: Record<string, unknown>) => Object.fromEntries(Object.entries(query).filter(([k]) => k !== 'apikey'));

/**
 * The file of an upload route, read as it arrives: a `text/csv` body is the file, its options in the
 * query string; a `multipart/form-data` body gives its options as fields, then the file in a part
 * named `file` (fields after it are not read). The credential is verified before a byte of the body
 * is parsed. Nothing here holds the file: the operation reads the stream.
 */
export async function readUpload(req: Request): Promise<Upload> {
  if (!(await req.ctx.authenticate())) throw authenticationRequired();
  if (req.is('text/csv')) return { fields: withoutCredential(req.query as Record<string, unknown>), file: { stream: req, name: null } };
  if (!req.is('multipart/form-data')) throw unsupportedMediaType('text/csv or multipart/form-data');
  return new Promise<Upload>((resolve, reject) => {
    const fields: Record<string, unknown> = withoutCredential(req.query as Record<string, unknown>);
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { files: 1, fields: 20, fieldSize: 64 * 1024, parts: 22 } });
    } catch {
      reject(validationFailed([{ field: 'file', message: 'file must be sent in a multipart body with a boundary' }]));
      return;
    }
    let settled = false;
    parser.on('field', (name, value) => {
      if (!settled) fields[name] = value;
    });
    parser.on('file', (name, stream, info) => {
      if (settled || name !== 'file') {
        stream.resume();
        return;
      }
      settled = true;
      resolve({ fields, file: { stream, name: info.filename || null } });
    });
    parser.on('error', (err) => {
      if (!settled) reject(validationFailed([{ field: 'file', message: `file must be sent in a well-formed multipart body: ${(err as Error).message}` }]));
    });
    parser.on('close', () => {
      if (!settled) reject(validationFailed([{ field: 'file', message: 'file is required: send it in a part named "file"' }]));
    });
    req.pipe(parser);
  });
}
