import { clickUrl, openUrl, type TrackingRef } from './tracking-tokens.js';

/**
 * Open and click tracking of an HTML email (platform.md, "Receipts and engagement"): each `http(s)`
 * link of an `<a>` goes through `<PUBLIC_URL>/t/c/<token>`, which redirects to it, and a 1x1 pixel
 * `<PUBLIC_URL>/t/o/<token>` is added at the end of the body. Links that are not the reader's to
 * follow elsewhere are left alone: `mailto:`, `tel:`, `#anchors`, Herald's own unsubscribe and
 * tracking links, and a URL too long for a token.
 *
 * No HTML parser is a dependency, so `<a>` tags are found by a scan that respects quoted attribute
 * values (a `>` inside one does not end the tag) and their attributes are read as the HTML
 * tokenizer reads them: names case-insensitive, values double-, single- or un-quoted, the first of a
 * repeated attribute the one that counts. The URL a link goes to is its value with character
 * references decoded (`&amp;` is `&`).
 */

export interface TrackOptions extends TrackingRef {
  publicUrl: string;
  secret: string;
}

/** An `<a>` start tag: quoted values may hold `>`. */
const A_TAG = /<a(?=[\s/>])(?:"[^"]*"|'[^']*'|[^"'>])*>/gi;
/** One attribute of a tag (after the tag name): its name and its value in one of three forms. */
const ATTRIBUTE = /([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?/g;
const BODY_END = /<\/body\s*>/gi;

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** A URL attribute's value as the browser reads it: character references decoded, outer whitespace trimmed. */
export function decodeAttribute(value: string): string {
  return value
    .replace(/&(?:#(\d{1,7})|#x([0-9a-f]{1,6})|([a-z]+));?/gi, (whole, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
      if (dec || hex) {
        const code = dec ? parseInt(dec, 10) : parseInt(hex!, 16);
        return code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff) ? String.fromCodePoint(code) : '\ufffd';
      }
      return NAMED[name!.toLowerCase()] ?? whole;
    })
    .trim();
}

/** Whether a link is one Herald tracks. */
function trackable(url: string, publicUrl: string): boolean {
  if (!/^https?:\/\//i.test(url)) return false;
  // Herald's own links: the unsubscribe link keeps working as itself (and is not a "click").
  return !url.startsWith(`${publicUrl}/u/`) && !url.startsWith(`${publicUrl}/t/`);
}

/** `html` with its links tracked and the open pixel added (before `</body>`, else at the end). */
export function trackHtml(html: string, options: TrackOptions): string {
  const { publicUrl, secret, orgId, logId, position } = options;
  const ref = { orgId, logId, position };
  const linked = html.replace(A_TAG, (tag) => rewriteHref(tag, (raw) => {
    const url = decodeAttribute(raw);
    return trackable(url, publicUrl) ? clickUrl(publicUrl, secret, ref, url) : null;
  }));
  const pixel = `<img src="${openUrl(publicUrl, secret, ref)}" width="1" height="1" alt="" border="0">`;
  let end = -1;
  for (const m of linked.matchAll(BODY_END)) end = m.index;
  return end === -1 ? linked + pixel : linked.slice(0, end) + pixel + linked.slice(end);
}

/** The tag with its (first) `href` value replaced by what `replace` gives for it; unchanged when that is null. */
function rewriteHref(tag: string, replace: (value: string) => string | null): string {
  // Attributes start after `<a`.
  ATTRIBUTE.lastIndex = 2;
  for (let m = ATTRIBUTE.exec(tag); m; m = ATTRIBUTE.exec(tag)) {
    if (m[1]!.toLowerCase() !== 'href') continue;
    const value = m[2] ?? m[3] ?? m[4];
    if (value === undefined) return tag;
    const replaced = replace(value);
    if (replaced === null) return tag;
    // The value (with its quotes) is the end of the attribute's match; an unquoted one is quoted now.
    const quote = m[3] !== undefined ? "'" : '"';
    const end = m.index + m[0].length;
    const start = end - value.length - (m[4] !== undefined ? 0 : 2);
    return `${tag.slice(0, start)}${quote}${replaced}${quote}${tag.slice(end)}`;
  }
  return tag;
}
