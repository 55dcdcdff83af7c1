import { describe, expect, test } from '@jest/globals';
import { expandRecipients, pendingRecipientsJson, settledRecipientsJson } from './log-recipients.js';

describe('the stored form of log recipients', () => {
  test('a pending log stores valid recipients as bare addresses and invalid ones as failed objects', () => {
    const json = pendingRecipientsJson([{ recipient: '+254712345678' }, { recipient: 'nope', invalid: 'Invalid phone number' }]);
    expect(JSON.parse(json)).toEqual(['+254712345678', { recipient: 'nope', status: 'failed', error: 'Invalid phone number' }]);
    expect(expandRecipients(JSON.parse(json), false)).toEqual([
      { recipient: '+254712345678', status: 'pending' },
      { recipient: 'nope', status: 'failed', error: 'Invalid phone number' },
    ]);
  });

  test('a settled log stores successes as bare addresses and reads them back as success', () => {
    const outcomes = [
      { recipient: 'a@example.com', status: 'success' },
      { recipient: 'b@fail.invalid', status: 'failed', error: 'Mailbox unavailable' },
    ];
    const stored = JSON.parse(settledRecipientsJson(outcomes));
    expect(stored).toEqual(['a@example.com', outcomes[1]]);
    expect(expandRecipients(stored, true)).toEqual(outcomes);
  });

  test('addresses that need JSON escaping survive the round trip', () => {
    const odd = 'quote"back\\slash@example.com';
    expect(expandRecipients(JSON.parse(pendingRecipientsJson([{ recipient: odd }])), false)).toEqual([{ recipient: odd, status: 'pending' }]);
    expect(JSON.parse(pendingRecipientsJson([]))).toEqual([]);
  });
});
