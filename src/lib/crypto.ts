import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM: iv | tag | ciphertext, so a tampered value fails to decrypt instead of reading wrong. */
export function encryptJson(key: Buffer, value: unknown): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

export function decryptJson<T>(key: Buffer, blob: Buffer): T {
  const iv = blob.subarray(0, IV_BYTES);
  const tag = blob.subarray(IV_BYTES, IV_BYTES + TAG_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAuthTag(tag);
  const text = Buffer.concat([decipher.update(blob.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  return JSON.parse(text) as T;
}

/** `****` and the last four characters; short secrets show nothing of themselves. */
export function mask(secret: string | null | undefined): string | null {
  if (!secret) return null;
  return secret.length < 8 ? '****' : `****${secret.slice(-4)}`;
}
