import { describe, expect, test } from '@jest/globals';
import { batchLogId } from './batch-log.js';

describe('campaign batch logs', () => {
  test('a batch log id is a version 5 UUID derived from campaign, channel and batch', () => {
    const id = batchLogId('5b1c3c1e-2f4a-4d3c-9e8b-1a2b3c4d5e6f', 'email', 7);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(batchLogId('5b1c3c1e-2f4a-4d3c-9e8b-1a2b3c4d5e6f', 'email', 7)).toBe(id);
    expect(batchLogId('5b1c3c1e-2f4a-4d3c-9e8b-1a2b3c4d5e6f', 'email', 8)).not.toBe(id);
    expect(batchLogId('5b1c3c1e-2f4a-4d3c-9e8b-1a2b3c4d5e6f', 'sms', 7)).not.toBe(id);
  });
});
