import { describe, expect, it } from '@jest/globals';
import { readUnsubscribeToken, unsubscribeToken, unsubscribeUrl } from './unsubscribe-tokens.js';

const SECRET = 'a server secret of enough length for tests';
const ORG = '0b7f7f9e-6d1a-4c84-9b55-0d0d3f2a1c11';
const CONTACT = 'c0ffee00-1234-4abc-8def-0123456789ab';

describe('unsubscribe tokens', () => {
  it('names the organization, channel and contact, or an address', () => {
    expect(readUnsubscribeToken(SECRET, unsubscribeToken(SECRET, { orgId: ORG, channel: 'sms', contactId: CONTACT }))).toEqual({
      orgId: ORG,
      channel: 'sms',
      contactId: CONTACT,
    });
    expect(readUnsubscribeToken(SECRET, unsubscribeToken(SECRET, { orgId: ORG, channel: 'email', address: 'ünï@example.com' }))).toEqual({
      orgId: ORG,
      channel: 'email',
      address: 'ünï@example.com',
    });
    expect(unsubscribeUrl('https://herald.example', SECRET, { orgId: ORG, channel: 'whatsapp', contactId: CONTACT })).toMatch(
      /^https:\/\/herald\.example\/u\/[A-Za-z0-9_-]+$/,
    );
  });

  it('a campaign message\'s link also names the campaign, for a contact or an address', () => {
    const CAMPAIGN = '5ca1ab1e-0000-4000-8000-00000000beef';
    expect(readUnsubscribeToken(SECRET, unsubscribeToken(SECRET, { orgId: ORG, channel: 'email', campaignId: CAMPAIGN, contactId: CONTACT }))).toEqual({
      orgId: ORG,
      channel: 'email',
      campaignId: CAMPAIGN,
      contactId: CONTACT,
    });
    expect(readUnsubscribeToken(SECRET, unsubscribeToken(SECRET, { orgId: ORG, channel: 'sms', campaignId: CAMPAIGN, address: '+254712345678' }))).toEqual({
      orgId: ORG,
      channel: 'sms',
      campaignId: CAMPAIGN,
      address: '+254712345678',
    });
  });

  it('refuses a token altered anywhere, signed with another secret, truncated or not base64url', () => {
    const token = unsubscribeToken(SECRET, { orgId: ORG, channel: 'email', contactId: CONTACT });
    for (let i = 0; i < token.length; i++) {
      const altered = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      const read = readUnsubscribeToken(SECRET, altered);
      // A change in the last character's unused low bits decodes to the same bytes: still the same token.
      if (read) expect(read).toEqual({ orgId: ORG, channel: 'email', contactId: CONTACT });
    }
    expect(readUnsubscribeToken('another secret', token)).toBeNull();
    expect(readUnsubscribeToken(SECRET, token.slice(0, -2))).toBeNull();
    expect(readUnsubscribeToken(SECRET, `${token}=`)).toBeNull();
    expect(readUnsubscribeToken(SECRET, '')).toBeNull();
    expect(readUnsubscribeToken(SECRET, 'x'.repeat(10_000))).toBeNull();
  });
});
