import { createHash } from 'node:crypto';
import type { Channel } from '../../delivery/types.js';

/**
 * The log of one campaign batch has an id derived from the batch (a name-based, version 5 UUID), so
 * however often a batch is claimed, settling writes its one log: each recipient ends with exactly
 * one entry.
 */
export function batchLogId(campaignId: string, channel: Channel, batchNo: number): string {
  const h = createHash('sha1').update(`campaign-batch:${campaignId}:${channel}:${batchNo}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
