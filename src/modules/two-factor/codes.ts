import { createHash, randomBytes } from 'node:crypto';
import { generateSecret, generateURI, verify } from 'otplib';

/**
 * The codes of two-factor authentication, written once here: TOTP (RFC 6238 with the authenticator
 * apps' parameters: SHA-1, 6 digits, 30-second steps, a 160-bit secret in base32) through otplib,
 * and the recovery codes.
 */

export const PERIOD_SECONDS = 30;
/** Steps accepted either side of the current one: a phone's clock a little off, a code typed as it changed. */
const WINDOW_STEPS = 1;
export const RECOVERY_CODE_COUNT = 10;
const ISSUER = 'Herald';

const TOTP_SHAPE = /^\d{6}$/;
/** 16 base32 characters (80 random bits), written in four groups: `abcd-efgh-ijkl-mnop`. */
const RECOVERY_SHAPE = /^[a-z2-7]{16}$/;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

export const newSecret = (): string => generateSecret();

/** The `otpauth://totp/...` URI an authenticator app reads from a QR code: issuer Herald, labelled with the email. */
export const otpauthUri = (secret: string, email: string): string =>
  generateURI({ issuer: ISSUER, label: email, secret, algorithm: 'sha1', digits: 6, period: PERIOD_SECONDS });

/** The time step of `at`: what `last_used_step` records. */
export const timeStep = (at: Date): number => Math.floor(at.getTime() / 1000 / PERIOD_SECONDS);

/**
 * The time step whose code `code` is, within one step of `at`'s and later than `afterStep` (the step
 * of the last code accepted: a code is never accepted twice, nor one older than it); null otherwise.
 */
export async function matchTotp(secret: string, code: string, at: Date, afterStep: number | null): Promise<number | null> {
  if (!TOTP_SHAPE.test(code)) return null;
  // otplib refuses an `afterTimeStep` past its window: then no code can be accepted anyway.
  if (afterStep !== null && afterStep >= timeStep(at) + WINDOW_STEPS) return null;
  const result = await verify({
    secret,
    token: code,
    epoch: Math.floor(at.getTime() / 1000),
    epochTolerance: WINDOW_STEPS * PERIOD_SECONDS,
    ...(afterStep !== null ? { afterTimeStep: afterStep } : {}),
  });
  return result.valid && 'timeStep' in result ? result.timeStep : null;
}

/** Whether `code` is written as a TOTP code (six digits), as opposed to a recovery code. */
export const isTotpShaped = (code: string): boolean => TOTP_SHAPE.test(code);

/** Ten new recovery codes, as shown to the user once. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const bytes = randomBytes(16);
    // 16 characters of 5 bits each, from 16 random bytes (the low 5 bits of each).
    const chars = [...bytes].map((b) => BASE32[b & 31]).join('');
    return chars.match(/.{4}/g)!.join('-');
  });
}

/** A recovery code as typed (any case, with or without its dashes or spaces), in its stored form; null when it can not be one. */
export function normaliseRecoveryCode(code: string): string | null {
  const plain = code.toLowerCase().replace(/[\s-]/g, '');
  return RECOVERY_SHAPE.test(plain) ? plain : null;
}

/** What is stored of a recovery code: SHA-256 of its normalised form (80 random bits need no slow hash). */
export const hashRecoveryCode = (normalised: string): Buffer => createHash('sha256').update(normalised, 'utf8').digest();
