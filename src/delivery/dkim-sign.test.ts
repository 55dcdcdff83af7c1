import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import nodemailer from 'nodemailer';
import type { SendMailOptions } from 'nodemailer/lib/mailer';
import type { DkimSigner } from './dkim.js';
import { dkimMailOptions, signWithDkimKeys } from './dkim-sign.js';

/*
 * The signatures this module makes, checked by another implementation: mailauth's verifier in its
 * strict mode (RFC 6376, RFC 8463 to the letter), over messages nodemailer builds from arbitrary
 * text, with the blanks, line ends, 8-bit text and trailing empty lines canonicalization is about.
 */

const rsaPair = generateKeyPairSync('rsa', { modulusLength: 2048 });
const edPair = generateKeyPairSync('ed25519');
const signers: DkimSigner[] = [
  { domain: 'example.com', selector: 'rsa1', algorithm: 'rsa', privateKey: rsaPair.privateKey },
  { domain: 'example.com', selector: 'ed1', algorithm: 'ed25519', privateKey: edPair.privateKey },
];
const records: Record<string, string> = {
  'rsa1._domainkey.example.com': `v=DKIM1; k=rsa; p=${rsaPair.publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`,
  'ed1._domainkey.example.com': `v=DKIM1; k=ed25519; p=${Buffer.from(edPair.publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')}`,
};

const transport = nodemailer.createTransport({ streamTransport: true, buffer: true });
transport.use('stream', signWithDkimKeys);

/** mailauth's verdict on each signature of `raw`: `[selector, algorithm, result]`. */
async function verdicts(raw: Buffer): Promise<string[][]> {
  const resolver = async (name: string) => {
    if (!records[name]) throw Object.assign(new Error('none'), { code: 'ENOTFOUND' });
    return [[records[name]]];
  };
  const { results } = await dkimVerify(raw, { strict: true, resolver } as Parameters<typeof dkimVerify>[1]);
  return results.map((r: any) => [r.selector, r.algo, r.status.result]);
}

/** A message signed with `keys`, as the SMTP connection delivers it: every bare CR or LF a CRLF. */
const signed = async (mail: SendMailOptions, keys: readonly DkimSigner[] = signers) => {
  const { message } = await transport.sendMail({ from: 'Ada <ada@example.com>', to: 'reader@example.org', ...mail, ...dkimMailOptions(keys) });
  return Buffer.from((message as Buffer).toString('latin1').replace(/\r\n?|\n/g, '\r\n'), 'latin1');
};

test('an RSA and an Ed25519 signature over arbitrary text both pass', async () => {
  const text = fc.string({ unit: fc.constantFrom('a', 'é', '€', ' ', '\t', '\n', '\r', '\r\n', '  ', '.', 'x'.repeat(90)), maxLength: 60 });
  await fc.assert(
    fc.asyncProperty(text, text, text, fc.boolean(), async (subject, body, html, withHtml) => {
      const raw = await signed({ subject, text: body, ...(withHtml && { html: `<p>${html}</p>` }), list: { unsubscribe: 'https://example.com/u' } });
      expect(await verdicts(raw)).toEqual([
        ['rsa1', 'rsa-sha256', 'pass'],
        ['ed1', 'ed25519-sha256', 'pass'],
      ]);
    }),
    { numRuns: 60 },
  );
});

test('the signed fields are the listed ones the message has, attachments and all', async () => {
  const raw = await signed({
    subject: 'Report',
    html: '<p>See   the file.</p>\n\n\n',
    attachments: [{ filename: 'r.csv', content: 'a,b\n1,2\n' }],
    headers: { 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    list: { unsubscribe: 'https://example.com/u' },
  });
  expect(await verdicts(raw)).toEqual([
    ['rsa1', 'rsa-sha256', 'pass'],
    ['ed1', 'ed25519-sha256', 'pass'],
  ]);
  const header = raw.toString('latin1').split('\r\n\r\n')[0]!.replace(/\r\n[ \t]+/g, ' ');
  const h = /DKIM-Signature: [^\r]*\bh=([^;]+);/.exec(header)![1]!.split(':');
  expect(h).toEqual(['from', 'subject', 'date', 'message-id', 'to', 'mime-version', 'content-type', 'list-unsubscribe', 'list-unsubscribe-post']);
  // Tampering with a signed field breaks both.
  const altered = Buffer.from(raw.toString('latin1').replace('Subject: Report', 'Subject: Rep0rt'), 'latin1');
  expect((await verdicts(altered)).map(([, , result]) => result)).toEqual(['fail', 'fail']);
});

test('a key that cannot sign fails the message instead of sending it unsigned', async () => {
  const broken: DkimSigner = { domain: 'example.com', selector: 'ed1', algorithm: 'ed25519', privateKey: edPair.publicKey };
  await expect(signed({ subject: 'Hi', text: 'Hello' }, [broken])).rejects.toThrow();
});
