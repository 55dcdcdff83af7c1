import { createHash, sign } from 'node:crypto';
import { pipeline, Transform, type TransformCallback } from 'node:stream';
import type { MailMessage, PluginCallback } from 'nodemailer/lib/mailer';
import { DKIM_HEADERS, type DkimSigner } from './dkim.js';

/**
 * Signing an email with its domain's DKIM keys, rsa-sha256 or ed25519-sha256 (RFC 8463), relaxed/
 * relaxed, over the `DKIM_HEADERS` the message has: every key of the domain in one pass over the
 * message, one body hash for all, through the transport's stream plugin `signWithDkimKeys`.
 * nodemailer's own signer knows RSA alone; mailauth's takes no KeyObject and parses the key again
 * for every message, which costs more than the signature. The tests verify these signatures with
 * mailauth, in its strict mode.
 */

/** The message field that hands the keys to the stream plugin. */
const SIGNERS = 'heraldDkimSigners';

/** The `sendMail` fields that sign a message with `signers` (the From domain's keys): none when there are none. */
export const dkimMailOptions = (signers: readonly DkimSigner[]): { [SIGNERS]?: readonly DkimSigner[] } => (signers.length ? { [SIGNERS]: signers } : {});

/** The transport's `stream` plugin: a message that carries keys is signed on its way out. */
export function signWithDkimKeys(mail: MailMessage, done: PluginCallback): void {
  const signers = (mail.data as { [SIGNERS]?: readonly DkimSigner[] })[SIGNERS];
  if (signers) mail.message.processFunc((input) => pipeline(input, new DkimSigning(signers), () => {}));
  done();
}

/** Reads the whole message, then writes its DKIM-Signature headers and the message. */
class DkimSigning extends Transform {
  readonly #chunks: Buffer[] = [];

  constructor(private readonly signers: readonly DkimSigner[]) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#chunks.push(chunk);
    done();
  }

  override _flush(done: TransformCallback): void {
    const message = Buffer.concat(this.#chunks);
    try {
      this.push(dkimSignatures(message, this.signers));
    } catch (err) {
      // An email is never sent unsigned, or signed by some of its keys only.
      return done(err as Error);
    }
    this.push(message);
    done();
  }
}

const SIGNED_NAMES = DKIM_HEADERS.toLowerCase().split(':');

/** A header field's value in relaxed canonicalization (RFC 6376 §3.4.2): unfolded, each run of blanks one space, none at the ends. */
const relaxedValue = (value: string) => value.replace(/\r\n/g, '').replace(/[ \t]+/g, ' ').trim();

/** The body in relaxed canonicalization (RFC 6376 §3.4.4): no blanks at line ends, each run of blanks one space, no empty lines at the end. */
function relaxedBody(body: string): string {
  const canonical = body.replace(/[ \t]+(?=\r\n|$)/g, '').replace(/[ \t]+/g, ' ').replace(/(?:\r\n)+$/, '');
  return canonical ? `${canonical}\r\n` : '';
}

/**
 * The DKIM-Signature header lines of `message`, one per key. Bytes are read as latin1 so that 8-bit
 * text is hashed as it was written; line ends as the SMTP connection sends them, every bare CR or LF
 * a CRLF (nodemailer leaves a 7bit body's own line ends as they were given).
 */
export function dkimSignatures(message: Buffer, signers: readonly DkimSigner[]): string {
  const text = message.toString('latin1').replace(/\r\n?|\n/g, '\r\n');
  const split = text.indexOf('\r\n\r\n');
  const head = split < 0 ? `${text}\r\n` : text.slice(0, split + 2);
  const fields = head
    .split(/\r\n(?![ \t])/)
    .filter(Boolean)
    .map((field) => ({ name: field.slice(0, field.indexOf(':')).trim().toLowerCase(), value: field.slice(field.indexOf(':') + 1) }));
  // Of a field given more than once, the last is signed (RFC 6376 §5.4.2).
  const signed = SIGNED_NAMES.flatMap((name) => {
    const field = fields.findLast((f) => f.name === name);
    return field ? [`${name}:${relaxedValue(field.value)}\r\n`] : [];
  });
  const names = SIGNED_NAMES.filter((name) => fields.some((f) => f.name === name)).join(':');
  const bodyHash = createHash('sha256')
    .update(relaxedBody(split < 0 ? '' : text.slice(split + 4)), 'latin1')
    .digest('base64');
  const t = Math.floor(Date.now() / 1000);
  return signers
    .map(({ domain, selector, algorithm, privateKey }) => {
      const header = `DKIM-Signature: v=1; a=${algorithm}-sha256; c=relaxed/relaxed; d=${domain}; s=${selector}; t=${t};\r\n h=${names};\r\n bh=${bodyHash};\r\n b=`;
      const data = `${signed.join('')}dkim-signature:${relaxedValue(header.slice(header.indexOf(':') + 1))}`;
      // Ed25519 signs the SHA-256 digest of the data (RFC 8463 §3); RSA hashes the data itself.
      const signature = algorithm === 'ed25519' ? sign(null, createHash('sha256').update(data, 'latin1').digest(), privateKey) : sign('sha256', Buffer.from(data, 'latin1'), privateKey);
      return `${header}${signature.toString('base64').replace(/.{72}(?=.)/g, '$&\r\n ')}\r\n`;
    })
    .join('');
}
