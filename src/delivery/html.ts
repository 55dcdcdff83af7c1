/**
 * Whether an email's text is HTML (providers.md, "Email": a message containing markup is sent as
 * HTML with a plain-text alternative): the one test the SMTP adapter, tracking and sends share.
 */

/** Any opening or closing tag, `<br/>` or a comment; a bare `a < b` is not markup. */
const MARKUP = /<\/?[a-z][a-z0-9-]*(\s[^<>]*)?\/?>|<!--/i;

export function isMarkup(body: string): boolean {
  return MARKUP.test(body);
}
