import { describe, expect, test } from '@jest/globals';
import { generate } from 'otplib';
import { hashRecoveryCode, matchTotp, newRecoveryCodes, newSecret, normaliseRecoveryCode, otpauthUri, timeStep } from './codes.js';

/** 10 seconds into a time step. */
const AT = new Date(Date.UTC(2030, 0, 1, 0, 0, 10));
const codeAt = (secret: string, steps: number) => generate({ secret, epoch: Math.floor(AT.getTime() / 1000) + steps * 30 });

describe('TOTP codes', () => {
  const secret = newSecret();

  test('a 160-bit base32 secret and its otpauth URI', () => {
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(otpauthUri(secret, 'ada@example.com'));
    expect(`${uri.protocol}//${uri.host}`).toBe('otpauth://totp');
    expect(decodeURIComponent(uri.pathname)).toBe('/Herald:ada@example.com');
    expect(uri.searchParams.get('secret')).toBe(secret);
    expect(uri.searchParams.get('issuer')).toBe('Herald');
  });

  test('one step either side is accepted, two are not; the step matched is answered', async () => {
    const now = timeStep(AT);
    for (const steps of [-1, 0, 1]) expect(await matchTotp(secret, await codeAt(secret, steps), AT, null)).toBe(now + steps);
    for (const steps of [-2, 2]) expect(await matchTotp(secret, await codeAt(secret, steps), AT, null)).toBeNull();
  });

  test('a step at or before the last one used is refused, however far ahead the last one is', async () => {
    const now = timeStep(AT);
    expect(await matchTotp(secret, await codeAt(secret, 0), AT, now)).toBeNull();
    expect(await matchTotp(secret, await codeAt(secret, -1), AT, now - 1)).toBeNull();
    expect(await matchTotp(secret, await codeAt(secret, 1), AT, now)).toBe(now + 1);
    expect(await matchTotp(secret, await codeAt(secret, 1), AT, now + 1)).toBeNull();
    expect(await matchTotp(secret, await codeAt(secret, 0), AT, now + 50)).toBeNull();
  });

  test('anything but six digits is not a TOTP code', async () => {
    const code = await codeAt(secret, 0);
    for (const typed of [` ${code}x`, code.slice(1), `${code}0`, '']) expect(await matchTotp(secret, typed, AT, null)).toBeNull();
  });
});

describe('recovery codes', () => {
  test('ten distinct codes of 80 bits, normalised from any case, dashes and spaces', () => {
    const codes = newRecoveryCodes();
    expect(new Set(codes).size).toBe(10);
    for (const code of codes) expect(code).toMatch(/^[a-z2-7]{4}(-[a-z2-7]{4}){3}$/);
    const plain = codes[0]!.replace(/-/g, '');
    expect(normaliseRecoveryCode(codes[0]!.toUpperCase())).toBe(plain);
    expect(normaliseRecoveryCode(` ${plain.slice(0, 8)} ${plain.slice(8)} `)).toBe(plain);
    expect(normaliseRecoveryCode('123456')).toBeNull();
    expect(normaliseRecoveryCode(`${plain}a`)).toBeNull();
    expect(hashRecoveryCode(plain)).toHaveLength(32);
    expect(hashRecoveryCode(plain).equals(hashRecoveryCode(normaliseRecoveryCode(codes[0]!)!))).toBe(true);
  });
});
