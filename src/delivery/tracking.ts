import { QuoteType, Tokenizer } from 'htmlparser2';
import { clickUrl, openUrl, type TrackingRef } from './tracking-tokens.js';

/**
 * Open and click tracking of an HTML email (platform.md, "Receipts and engagement"): each `http(s)`
 * link of an `<a>` goes through `<PUBLIC_URL>/t/c/<token>`, which redirects to it, and a 1x1 pixel
 * `<PUBLIC_URL>/t/o/<token>` is added before the body's end. Links that are not the reader's to
 * follow elsewhere are left alone: `mailto:`, `tel:`, `#anchors`, relative links, Herald's own
 * unsubscribe and tracking links, and a URL too long for a token.
 *
 * The HTML is read by htmlparser2's tokenizer, as a browser reads it (comments, `<script>` and
 * `<style>` are not tags; attribute names are case-insensitive; the first of a repeated attribute
 * counts; character references in a value are decoded). Only the `href` values it rewrites are
 * changed, in place: everything else of the message stays as it was written.
 */

export interface TrackOptions extends TrackingRef {
  publicUrl: string;
  secret: string;
}

/** Whether a link is one Herald tracks. */
function trackable(url: string, publicUrl: string): boolean {
  if (!/^https?:\/\//i.test(url)) return false;
  // Herald's own links: the unsubscribe link keeps working as itself (and is not a "click").
  return !url.startsWith(`${publicUrl}/u/`) && !url.startsWith(`${publicUrl}/t/`);
}

/** A replacement of `html.slice(start, end)`. */
interface Edit {
  start: number;
  end: number;
  text: string;
}

const noop = () => {};

/** `html` with its links tracked and the open pixel added (before the last `</body>`, else at the end). */
export function trackHtml(html: string, options: TrackOptions): string {
  const { publicUrl, secret, orgId, logId, position } = options;
  const ref = { orgId, logId, position };
  const edits: Edit[] = [];
  let bodyEnd = -1;
  // The tag being read, its attribute being read, and whether the tag's first href was seen.
  let tag = '';
  let attribute = '';
  let attributeEnd = 0;
  let value = '';
  let hrefSeen = false;

  const tokenizer = new Tokenizer(
    { decodeEntities: true },
    {
      onopentagname(start, end) {
        tag = html.slice(start, end).toLowerCase();
        hrefSeen = false;
      },
      onattribname(start, end) {
        attribute = html.slice(start, end).toLowerCase();
        attributeEnd = end;
        value = '';
      },
      onattribdata(start, end) {
        value += html.slice(start, end);
      },
      onattribentity(codepoint) {
        value += String.fromCodePoint(codepoint);
      },
      onattribend(quote, end) {
        if (tag !== 'a' || attribute !== 'href' || hrefSeen) return;
        hrefSeen = true;
        const url = value.trim();
        const tracked = quote !== QuoteType.NoValue && trackable(url, publicUrl) ? clickUrl(publicUrl, secret, ref, url) : null;
        if (tracked === null) return;
        // The value (with its quotes) runs from after the `=` and any space to `end`; an unquoted one is quoted now.
        let start = html.indexOf('=', attributeEnd) + 1;
        while (/\s/.test(html[start]!)) start++;
        const mark = quote === QuoteType.Single ? "'" : '"';
        edits.push({ start, end, text: `${mark}${tracked.replace(/&/g, '&amp;')}${mark}` });
      },
      onclosetag(start, end) {
        // `start` is the name's: the tag begins at its `</`.
        if (html.slice(start, end).toLowerCase() === 'body') bodyEnd = html.lastIndexOf('<', start);
      },
      oncdata: noop,
      oncomment: noop,
      ondeclaration: noop,
      onend: noop,
      onopentagend: noop,
      onprocessinginstruction: noop,
      onselfclosingtag: noop,
      ontext: noop,
      ontextentity: noop,
    },
  );
  tokenizer.write(html);
  tokenizer.end();

  const pixel = `<img src="${openUrl(publicUrl, secret, ref)}" width="1" height="1" alt="" border="0">`;
  edits.push({ start: bodyEnd === -1 ? html.length : bodyEnd, end: bodyEnd === -1 ? html.length : bodyEnd, text: pixel });
  let out = '';
  let at = 0;
  // In the order of the text (a link after `</body>` comes after the pixel).
  for (const edit of edits.sort((a, b) => a.start - b.start)) {
    out += html.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return out + html.slice(at);
}
