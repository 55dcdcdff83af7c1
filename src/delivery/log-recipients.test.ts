import { describe, expect, test } from '@jest/globals';
import { expandRecipients, pendingRecipientsJson, settledOutcomesJson, settledRecipientsJson, type SettledOutcome, type StoredRecipient } from './log-recipients.js';

const settledOutcomes = (stored: StoredRecipient[], providerIds: (string | null)[] | null, sent: boolean) => JSON.parse(settledOutcomesJson(stored, providerIds, sent)) as SettledOutcome[];

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

  test("a settled log's sent and failed recipients, as its message events carry them: positions from 1, provider ids by position", () => {
    const stored = [
      'a@example.com',
      { recipient: 'b@fail.invalid', status: 'failed', error: 'Mailbox unavailable' },
      { recipient: 'c@example.com', status: 'success' },
      { recipient: 'd@example.com', status: 'failed' },
      'e@example.com',
    ];
    expect(settledOutcomes(stored, ['p1', null, 'p3', null, null], true)).toEqual([
      { recipient: 'a@example.com', position: 1, providerMessageId: 'p1' },
      { recipient: 'c@example.com', position: 3, providerMessageId: 'p3' },
      { recipient: 'e@example.com', position: 5 },
    ]);
    expect(settledOutcomes(stored, null, true).map((r) => Object.keys(r))).toEqual([['recipient', 'position'], ['recipient', 'position'], ['recipient', 'position']]);
    expect(settledOutcomes(stored, null, false)).toEqual([
      { recipient: 'b@fail.invalid', position: 2, error: 'Mailbox unavailable' },
      { recipient: 'd@example.com', position: 4, error: null },
    ]);
    expect(settledOutcomes([], null, true)).toEqual([]);
  });

  test('the outcomes as JSON text are what JSON.stringify makes of them, escapes included', () => {
    const stored = ['+254700000001', { recipient: 'q"uote\\@example.com', status: 'failed', error: 'line\nbreak "quoted" \u2028' }, { recipient: 'c@example.com', status: 'success' }];
    const ids = ['id "1"', null, 'p3'];
    expect(settledOutcomesJson(stored, ids, true)).toBe(
      JSON.stringify([
        { recipient: '+254700000001', position: 1, providerMessageId: 'id "1"' },
        { recipient: 'c@example.com', position: 3, providerMessageId: 'p3' },
      ]),
    );
    expect(settledOutcomesJson(stored, ids, false)).toBe(JSON.stringify([{ recipient: 'q"uote\\@example.com', position: 2, error: 'line\nbreak "quoted" \u2028' }]));
    expect(settledOutcomesJson(['a@example.com'], null, false)).toBe('[]');
  });
});
