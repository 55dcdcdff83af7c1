import { describe, expect, it } from '@jest/globals';
import { clickUrl, MAX_TRACKED_URL_BYTES, openUrl, readTrackingToken, trackingToken } from './tracking-tokens.js';

const SECRET = 'a server secret of enough length for tests';
const REF = { orgId: '0b7f7f9e-6d1a-4c84-9b55-0d0d3f2a1c11', logId: 'c0ffee00-1234-4abc-8def-0123456789ab', position: 100 };

describe('tracking tokens', () => {
  it('name the organization, log and position, and for a click the URL', () => {
    expect(readTrackingToken(SECRET, trackingToken(SECRET, REF)!)).toEqual({ ...REF, kind: 'open' });
    const url = 'https://example.com/ünï?a=1&b=2#top';
    expect(readTrackingToken(SECRET, trackingToken(SECRET, REF, url)!)).toEqual({ ...REF, kind: 'click', url });
    expect(openUrl('https://herald.example', SECRET, REF)).toMatch(/^https:\/\/herald\.example\/t\/o\/[A-Za-z0-9_-]+$/);
    expect(clickUrl('https://herald.example', SECRET, REF, url)).toMatch(/^https:\/\/herald\.example\/t\/c\/[A-Za-z0-9_-]+$/);
  });

  it('refuse a token altered anywhere, signed with another secret, truncated, padded or too long', () => {
    const token = trackingToken(SECRET, REF, 'https://example.com/')!;
    for (let i = 0; i < token.length; i++) {
      const altered = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
      const read = readTrackingToken(SECRET, altered);
      // A change in the last character's unused low bits decodes to the same bytes: still the same token.
      if (read) expect(read).toEqual({ ...REF, kind: 'click', url: 'https://example.com/' });
    }
    expect(readTrackingToken('another secret', token)).toBeNull();
    expect(readTrackingToken(SECRET, token.slice(0, -2))).toBeNull();
    expect(readTrackingToken(SECRET, token.slice(0, 20))).toBeNull();
    expect(readTrackingToken(SECRET, `${token}=`)).toBeNull();
    expect(readTrackingToken(SECRET, '')).toBeNull();
    expect(readTrackingToken(SECRET, 'x'.repeat(10_000))).toBeNull();
  });

  it('are not signed with the unsubscribe links key: one kind cannot pass for the other', async () => {
    const { unsubscribeToken, readUnsubscribeToken } = await import('./unsubscribe-tokens.js');
    const unsubscribe = unsubscribeToken(SECRET, { orgId: REF.orgId, channel: 'email', contactId: REF.logId });
    expect(readTrackingToken(SECRET, unsubscribe)).toBeNull();
    expect(readUnsubscribeToken(SECRET, trackingToken(SECRET, REF)!)).toBeNull();
  });

  it('carry URLs of bounded length only', () => {
    expect(trackingToken(SECRET, REF, `https://example.com/${'a'.repeat(MAX_TRACKED_URL_BYTES)}`)).toBeNull();
    const longest = `https://example.com/${'a'.repeat(MAX_TRACKED_URL_BYTES - 20)}`;
    expect(readTrackingToken(SECRET, trackingToken(SECRET, REF, longest)!)).toMatchObject({ url: longest });
    expect(() => trackingToken(SECRET, { ...REF, position: 0 })).toThrow(RangeError);
  });
});
