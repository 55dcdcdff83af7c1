import { describe, expect, test } from '@jest/globals';
import { LogTarget } from './types.js';

describe('a recipient at a position of a log', () => {
  test('its client id is the log id ending in the position: UUID-shaped, distinct per position, the same every time', () => {
    const logId = '0f8b2a34-1c2d-4e5f-8a9b-0123456789ab';
    const first = new LogTarget('+254712345678', logId, 1);
    const hundredth = new LogTarget('+254712345679', logId, 100);
    expect(first.clientId).toBe('0f8b2a34-1c2d-4e5f-8a9b-012300000001');
    expect(hundredth.clientId).toBe('0f8b2a34-1c2d-4e5f-8a9b-012300000064');
    expect(new LogTarget('+254712345678', logId, 1).clientId).toBe(first.clientId);
  });
});
