import type { Readable } from 'node:stream';

/**
 * What an operation answers when its response is a file rather than JSON (a route marked `stream`):
 * sent with its type as an attachment named `filename`, read from `stream` as the client takes it.
 * The stream does its first work (its first chunk) before anything is sent, so that a failure there
 * is still answered as an error; one after that ends the response unfinished.
 */
export interface Download {
  contentType: string;
  filename: string;
  stream: Readable;
}
