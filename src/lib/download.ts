import { Readable } from 'node:stream';

/**
 * What an operation answers when its response is streamed (a route marked `stream`), read from
 * `stream` as the client takes it and sent with its type: a file, sent as an attachment named
 * `filename`, or, without one, the answer itself. The stream does its first work (its first chunk)
 * before anything is sent, so that a failure there is still answered as an error; one after that
 * ends the response unfinished.
 */
export interface Streamed {
  contentType: string;
  filename?: string;
  stream: Readable;
}

/** A streamed file (`GET /contacts/export`, a person's data). */
export interface Download extends Streamed {
  filename: string;
}

/** An answer that comes a part at a time, each part some of its items, in order. */
export type Parts<T> = AsyncIterable<readonly T[]>;

/**
 * A JSON array written from its parts as they come: `[`, each part's items, `]`, a chunk per part
 * (the first holds the bracket and the first part's items, so that the first part is produced
 * before anything is sent). The same text as the whole array's `JSON.stringify`.
 */
export function jsonArray(parts: Parts<unknown>): Streamed {
  async function* chunks() {
    let started = false;
    for await (const part of parts) {
      let text = '';
      for (const item of part) {
        text += `${started ? ',' : '['}${JSON.stringify(item)}`;
        started = true;
      }
      if (text) yield Buffer.from(text);
    }
    yield Buffer.from(started ? ']' : '[]');
  }
  return { contentType: 'application/json; charset=utf-8', stream: Readable.from(chunks(), { objectMode: false, highWaterMark: 1 }) };
}

/** Every item of `parts`, in order: an answer read whole (GraphQL's). */
export async function collect<T>(parts: Parts<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const part of parts) for (const item of part) items.push(item);
  return items;
}
