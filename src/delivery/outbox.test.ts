import { describe, expect, test } from '@jest/globals';
import { eventData, eventDataJson } from './outbox.js';

describe("an event's data as delivered", () => {
  const log = { settled_recipients: ['+254700000001', { recipient: '+254700000002', status: 'failed', error: 'Rejected' }], settled_provider_ids: ['p1', null] };
  const none = { settled_recipients: null, settled_provider_ids: null };

  test("a message event's stored data (as Postgres writes jsonb) gets its log's recipients, and stays valid JSON", () => {
    const stored = '{"test": false, "logId": "L1", "channel": "sms", "campaignId": "C1"}';
    const sent = eventDataJson('message.sent', stored, log);
    expect(JSON.parse(sent)).toEqual({ test: false, logId: 'L1', channel: 'sms', campaignId: 'C1', recipients: [{ recipient: '+254700000001', position: 1, providerMessageId: 'p1' }] });
    expect(JSON.parse(eventDataJson('message.failed', stored, log)).recipients).toEqual([{ recipient: '+254700000002', position: 2, error: 'Rejected' }]);
    // The recipients come last, after the stored keys in their order, as the API's parsed path shows them too.
    const order = ['test', 'logId', 'channel', 'campaignId', 'recipients'];
    expect(Object.keys(JSON.parse(sent) as object)).toEqual(order);
    const shown = eventData('message.sent', { test: false, logId: 'L1', channel: 'sms', campaignId: 'C1' }, log);
    expect(Object.keys(shown)).toEqual(order);
    expect(shown.recipients).toEqual([{ recipient: '+254700000001', position: 1, providerMessageId: 'p1' }]);
  });

  test('empty data, and an event of no settled log, which is delivered as stored', () => {
    expect(JSON.parse(eventDataJson('message.sent', '{}', log))).toEqual({ recipients: [{ recipient: '+254700000001', position: 1, providerMessageId: 'p1' }] });
    expect(eventDataJson('campaign.completed', '{"name": "Spring"}', none)).toBe('{"name": "Spring"}');
  });
});
