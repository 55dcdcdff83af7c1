import { describe, expect, test } from '@jest/globals';
import { macOf, sameText, seal, unseal, uuidBytes, uuidOf } from './signed-tokens.js';

const SECRET = 'a-server-secret-long-enough-for-hs256-0123456789';
const limits = { maxLength: 100, minBody: 1 };

describe('signed tokens', () => {
  test('a sealed body opens under its purpose and secret only', () => {
    const token = seal(SECRET, 'one', Buffer.from('hello'));
    expect(unseal(SECRET, 'one', token, limits)?.toString()).toBe('hello');
    expect(unseal(SECRET, 'two', token, limits)).toBeNull();
    expect(unseal(`${SECRET}x`, 'one', token, limits)).toBeNull();
  });

  test('an altered, truncated, too long or not base64url token opens to nothing', () => {
    const token = seal(SECRET, 'one', Buffer.from('hello'));
    const flipped = Buffer.from(token, 'base64url');
    flipped[0]! ^= 1;
    expect(unseal(SECRET, 'one', flipped.toString('base64url'), limits)).toBeNull();
    expect(unseal(SECRET, 'one', token.slice(0, -2), limits)).toBeNull();
    expect(unseal(SECRET, 'one', token, { maxLength: token.length - 1, minBody: 1 })).toBeNull();
    expect(unseal(SECRET, 'one', token, { maxLength: 100, minBody: 6 })).toBeNull();
    expect(unseal(SECRET, 'one', `${token}=`, limits)).toBeNull();
  });

  test('purposes have their own keys; helpers round-trip', () => {
    expect(macOf(SECRET, 'one', 'x').equals(macOf(SECRET, 'two', 'x'))).toBe(false);
    expect(sameText('abc', 'abc')).toBe(true);
    expect(sameText('abc', 'abd')).toBe(false);
    expect(sameText('abc', 'abcd')).toBe(false);
    const id = '0f8b2a34-1c2d-4e5f-8a9b-0123456789ab';
    expect(uuidOf(uuidBytes(id))).toBe(id);
  });
});
