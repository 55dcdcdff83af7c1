import { createHash } from 'node:crypto';
import type { Channel } from '../../delivery/types.js';

/**
 * Batches (of 100 recipients, one log each) handled by one job: fewer jobs, locks and round trips.
 * A large campaign is cut into about `CHUNKS_PER_CHANNEL` chunks of up to `MAX_BATCHES_PER_CHUNK`
 * batches (a job's fixed cost, a few round trips, is then spread over more recipients), a smaller
 * one into chunks of `MIN_BATCHES_PER_CHUNK`. Fewer, larger chunks mean fewer jobs, claims and settle
 * commits (each of which updates the campaign's row). The lease is renewed while a chunk sends, so
 * its size is not bounded by `CAMPAIGN_LEASE_SECONDS`; the maximum bounds what a worker that dies
 * mid-chunk leaves to be sent again by the next one.
 */
const MIN_BATCHES_PER_CHUNK = 10;
const MAX_BATCHES_PER_CHUNK = 64;
const CHUNKS_PER_CHANNEL = 16;

/** Batches per chunk for a channel of `batches` batches: part of a chunk's identity, the same at launch and in the sweeper. */
export const chunkSizeFor = (batches: number) =>
  Math.min(MAX_BATCHES_PER_CHUNK, Math.max(MIN_BATCHES_PER_CHUNK, Math.ceil(batches / CHUNKS_PER_CHANNEL)));

/** One job's worth of a campaign: batches `chunkNo * size` to `chunkNo * size + size - 1` of one channel. */
export interface ChunkRef {
  orgId: string;
  campaignId: string;
  channel: Channel;
  chunkNo: number;
  /** Batches per chunk (`chunkSizeFor` the channel's batch count). */
  size: number;
}

/** The first and last batch numbers of a chunk. */
export function batchRange(ref: ChunkRef): [number, number] {
  return [ref.chunkNo * ref.size, ref.chunkNo * ref.size + ref.size - 1];
}

/** The distinct chunks holding `batchNos` of a channel with `batches` batches in all, in order. */
export function chunksOf(key: Pick<ChunkRef, 'orgId' | 'campaignId' | 'channel'>, batches: number, batchNos: readonly number[]): ChunkRef[] {
  const size = chunkSizeFor(batches);
  const chunkNos = [...new Set(batchNos.map((n) => Math.floor(n / size)))].sort((a, b) => a - b);
  return chunkNos.map((chunkNo) => ({ ...key, chunkNo, size }));
}

/**
 * The log of one campaign batch has an id derived from the batch (a name-based, version 5 UUID), so
 * however often a batch is claimed, settling writes its one log: each recipient ends with exactly
 * one entry.
 */
export function batchLogId(campaignId: string, channel: Channel, batchNo: number): string {
  const h = createHash('sha1').update(`campaign-batch:${campaignId}:${channel}:${batchNo}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
