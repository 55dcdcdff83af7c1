import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { Db } from '../db/database.js';
import { decryptJson } from '../lib/crypto.js';

/**
 * DKIM: an organization's signing keys per sending domain (`dkim_keys`), and what signing an email
 * needs of them. Keys are 2048-bit RSA (nodemailer signs rsa-sha256, relaxed/relaxed); the record
 * to publish is `v=DKIM1; k=rsa; p=<the public key, base64 DER>` at `<selector>._domainkey.<domain>`.
 */

/** A key as an email is signed with it. */
export interface DkimSigner {
  domain: string;
  selector: string;
  /** Parsed once: nodemailer signs with it as given, and a PEM would be parsed again for every message. */
  privateKey: KeyObject;
}

/** The headers signed: the RFC's list with the unsubscribe headers, so a relay cannot strip or alter them unseen. */
export const DKIM_HEADERS =
  'From:Sender:Reply-To:Subject:Date:Message-ID:To:Cc:MIME-Version:Content-Type:Content-Transfer-Encoding:' +
  'In-Reply-To:References:List-Id:List-Unsubscribe:List-Unsubscribe-Post';

/** A new RSA key pair: the private key (PEM) and the DNS record that publishes the public one. */
export function newDkimKey(): { privateKey: string; record: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return { privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, record: `v=DKIM1; k=rsa; p=${der.toString('base64')}` };
}

/** Where a key's record is published. */
export const dkimName = (selector: string, domain: string) => `${selector}._domainkey.${domain}`;

/** The organization's keys, decrypted, for signing. */
export async function dkimSigners(db: Db, config: Pick<Config, 'credentialsKey'>, orgId: string): Promise<DkimSigner[]> {
  const rows = (await db('dkim_keys').where({ organization_id: orgId }).orderBy('created_at').select('domain', 'selector', 'private_key')) as { domain: string; selector: string; private_key: Buffer }[];
  return rows.map((r) => ({ domain: r.domain, selector: r.selector, privateKey: createPrivateKey(decryptJson<string>(config.credentialsKey, r.private_key)) }));
}

/** The key an email from `from` is signed with: its domain's, else its nearest parent domain's (relaxed alignment). */
export function signerFor(signers: readonly DkimSigner[] | undefined, from: string | undefined): DkimSigner | undefined {
  if (!signers?.length || !from) return undefined;
  let domain = from.slice(from.lastIndexOf('@') + 1).toLowerCase();
  for (;;) {
    const found = signers.find((s) => s.domain === domain);
    if (found) return found;
    const dot = domain.indexOf('.');
    if (dot < 0 || domain.indexOf('.', dot + 1) < 0) return undefined;
    domain = domain.slice(dot + 1);
  }
}
