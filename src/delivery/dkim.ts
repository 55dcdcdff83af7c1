import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { decryptJson } from '../lib/crypto.js';

/**
 * DKIM: an organization's signing keys per sending domain (`dkim_keys`), their DNS records, and
 * which keys sign an email. A key is 2048-bit RSA (rsa-sha256) or Ed25519 (ed25519-sha256, RFC
 * 8463); its record, `v=DKIM1; k=<rsa|ed25519>; p=<public key>`, is published at
 * `<selector>._domainkey.<domain>`. How a message gets signed is `dkim-sign.ts`.
 */

export const DKIM_ALGORITHMS = ['rsa', 'ed25519'] as const;
export type DkimAlgorithm = (typeof DKIM_ALGORITHMS)[number];

/** A key as an email is signed with it. */
export interface DkimSigner {
  domain: string;
  selector: string;
  algorithm: DkimAlgorithm;
  /** Parsed once: a PEM would be parsed again for every message. */
  privateKey: KeyObject;
}

/** The headers signed: the RFC's list with the unsubscribe headers, so a relay cannot strip or alter them unseen. */
export const DKIM_HEADERS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:' +
  'In-Reply-To:References:List-Id:List-Unsubscribe:List-Unsubscribe-Post';

/**
 * A record's `p=`: an RSA key as its DER SubjectPublicKeyInfo (RFC 6376 §3.6.1), an Ed25519 key as
 * its raw 32 bytes (RFC 8463 §4; its SPKI form is what verifiers refuse).
 */
function publicKeyData(publicKey: KeyObject, algorithm: DkimAlgorithm): string {
  if (algorithm === 'rsa') return publicKey.export({ type: 'spki', format: 'der' }).toString('base64');
  return Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64');
}

/** A new key pair: the private key (PKCS#8 PEM) and the DNS record that publishes the public one. */
export function newDkimKey(algorithm: DkimAlgorithm): { privateKey: string; record: string } {
  const { privateKey, publicKey } = algorithm === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ed25519');
  return { privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, record: `v=DKIM1; k=${algorithm}; p=${publicKeyData(publicKey, algorithm)}` };
}

/** What a DKIM record publishes: the key type (`k=`, RSA when absent) and the key (`p=`, spaces removed; empty when revoked). */
export function parseDkimRecord(text: string): { keyType: string; publicKey: string } {
  const tags = new Map<string, string>();
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s+/g, ''));
  }
  return { keyType: (tags.get('k') || 'rsa').toLowerCase(), publicKey: tags.get('p') ?? '' };
}

/** Where a key's record is published. */
export const dkimName = (selector: string, domain: string) => `${selector}._domainkey.${domain}`;

/** The organization's keys, decrypted, for signing. */
export async function dkimSigners(db: Db, config: Pick<Config, 'credentialsKey'>, orgId: string): Promise<DkimSigner[]> {
  const rows = (await db('dkim_keys').where({ organization_id: orgId }).orderBy('created_at').select('domain', 'selector', 'algorithm', 'private_key')) as {
    domain: string;
    selector: string;
    algorithm: DkimAlgorithm;
    private_key: Buffer;
  }[];
  return rows.map((r) => ({ domain: r.domain, selector: r.selector, algorithm: r.algorithm, privateKey: createPrivateKey(decryptJson<string>(config.credentialsKey, r.private_key)) }));
}

/**
 * The keys an email from `from` is signed with: every key of its domain, else of its nearest parent
 * domain that has keys (relaxed alignment). A domain with an RSA and an Ed25519 key signs with both,
 * so verifiers that know only RSA still find a signature they can check.
 */
export function signersFor(signers: readonly DkimSigner[] | undefined, from: string | undefined): readonly DkimSigner[] {
  if (!signers?.length || !from) return [];
  let domain = from.slice(from.lastIndexOf('@') + 1).toLowerCase();
  for (;;) {
    const found = signers.filter((s) => s.domain === domain);
    if (found.length) return found;
    const dot = domain.indexOf('.');
    if (dot < 0 || domain.indexOf('.', dot + 1) < 0) return [];
    domain = domain.slice(dot + 1);
  }
}
