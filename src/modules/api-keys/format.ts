import { createHash, randomInt } from 'node:crypto';
import { crc32 } from 'node:zlib';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const PREFIX = 'uak_';
const BODY = 32;
const CHECKSUM = 6;
const SHAPE = new RegExp(`^${PREFIX}[0-9A-Za-z]{${BODY + CHECKSUM}}$`);

function base62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/** `uak_` + 32 random base62 characters + their CRC32 in 6 base62 characters, so scanners can spot leaks. */
export function generateApiKey(): string {
  let body = '';
  for (let i = 0; i < BODY; i++) body += BASE62[randomInt(62)];
  return `${PREFIX}${body}${base62(crc32(body), CHECKSUM)}`;
}

/** True when `value` has the key format and a matching checksum; no database round trip needed. */
export function isWellFormedApiKey(value: string): boolean {
  if (!SHAPE.test(value)) return false;
  const body = value.slice(PREFIX.length, PREFIX.length + BODY);
  return value.slice(PREFIX.length + BODY) === base62(crc32(body), CHECKSUM);
}

export const hashApiKey = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

/** The part shown in listings, enough to tell keys apart: `uak_` and 8 characters. */
export const visiblePrefix = (value: string): string => value.slice(0, PREFIX.length + 8);
