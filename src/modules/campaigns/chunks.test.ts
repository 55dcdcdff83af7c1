import { describe, expect, test } from '@jest/globals';
import { batchLogId, batchRange, chunkSizeFor, chunksOf } from './chunks.js';

const key = { orgId: 'o', campaignId: 'c', channel: 'sms' as const };

describe('campaign chunks', () => {
  test('small campaigns take chunks of 10 batches, large ones about 16 per channel, at most 64 batches each', () => {
    expect(chunkSizeFor(1)).toBe(10);
    expect(chunkSizeFor(160)).toBe(10);
    expect(chunkSizeFor(161)).toBe(11);
    expect(chunkSizeFor(1000)).toBe(63);
    expect(chunkSizeFor(10_000)).toBe(64);
  });

  test("a chunk's batches follow from its number and size", () => {
    expect(batchRange({ ...key, chunkNo: 0, size: 10 })).toEqual([0, 9]);
    expect(batchRange({ ...key, chunkNo: 3, size: 63 })).toEqual([189, 251]);
  });

  test('chunksOf sizes chunks by the channel’s batch count, as launch does, whichever batches are asked for', () => {
    // 1,000 batches (100,000 recipients): chunks of 63, so batches 0 and 62 share chunk 0, 63 starts chunk 1.
    expect(chunksOf(key, 1000, [62, 0, 63, 999])).toEqual([
      { ...key, chunkNo: 0, size: 63 },
      { ...key, chunkNo: 1, size: 63 },
      { ...key, chunkNo: 15, size: 63 },
    ]);
    expect(chunksOf(key, 5, [])).toEqual([]);
  });

  test('a batch log id is a version 5 UUID derived from campaign, channel and batch', () => {
    const id = batchLogId('5b1c3c1e-2f4a-4d3c-9e8b-1a2b3c4d5e6f', 'email', 7);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(batchLogId('5b1c3c1e-2f4a-4d3c-9e8b-1a2b3c4d5e6f', 'email', 7)).toBe(id);
    expect(batchLogId('5b1c3c1e-2f4a-4d3c-9e8b-1a2b3c4d5e6f', 'email', 8)).not.toBe(id);
    expect(batchLogId('5b1c3c1e-2f4a-4d3c-9e8b-1a2b3c4d5e6f', 'sms', 7)).not.toBe(id);
  });
});
