import { describe, expect, it } from '@jest/globals';
import type { Channel } from '../../delivery/types.js';
import { leftChannel, subscriptionsOf, unsubscribedOf } from './service.js';

describe('consent', () => {
  it('shows every channel, subscribed unless the stored object has its entry', () => {
    const at = '2026-01-05T09:30:00.000Z';
    expect(subscriptionsOf({ sms: { at, source: 'one-click' } })).toEqual({
      email: { status: 'subscribed', unsubscribedAt: null, source: null },
      sms: { status: 'unsubscribed', unsubscribedAt: at, source: 'one-click' },
      whatsapp: { status: 'subscribed', unsubscribedAt: null, source: null },
    });
    expect(subscriptionsOf({})).toEqual(subscriptionsOf(null));
  });

  it('a new contact stores only the channels it starts out of', () => {
    const at = new Date('2026-01-05T09:30:00.000Z');
    expect(unsubscribedOf({ email: 'unsubscribed', sms: 'subscribed' }, 'api', at)).toEqual({ email: { at: '2026-01-05T09:30:00.000Z', source: 'api' } });
    expect(unsubscribedOf(undefined, 'api', at)).toEqual({});
  });

  it('writes SQL only for the known channels', () => {
    expect(leftChannel('whatsapp')).toContain("(contacts.unsubscribed -> 'whatsapp') IS NOT NULL");
    expect(() => leftChannel("email') IS NULL OR ('x" as Channel)).toThrow('unknown channel');
  });
});
