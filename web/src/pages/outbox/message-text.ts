/**
 * The readable text of an email's HTML, for showing a sandbox message without rendering its markup:
 * the HTML is parsed into an inert document (DOMParser runs no script and loads no image, such as
 * the open-tracking pixel), and only its text is taken, a line break after each block. Nothing of it
 * ever reaches the page as HTML.
 */

const BLOCKS = new Set(['P', 'DIV', 'LI', 'TR', 'H1', 'H2', 'H3', 'H4', 'H5', 'H6', 'TABLE', 'UL', 'OL', 'BLOCKQUOTE', 'PRE', 'SECTION', 'ARTICLE', 'HEADER', 'FOOTER']);

/** Whether a body looks like HTML (an email's) rather than plain text. */
export function looksLikeHtml(body: string): boolean {
  return /<([a-z][a-z0-9]*)\b[^>]*>/i.test(body);
}

export function htmlToText(html: string): string {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  let out = '';
  const walk = (node: Node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      out += (node.textContent ?? '').replace(/\s+/g, ' ');
      return;
    }
    if (!(node instanceof Element)) return;
    if (node.tagName === 'SCRIPT' || node.tagName === 'STYLE' || node.tagName === 'HEAD') return;
    if (node.tagName === 'BR') out += '\n';
    if (node.tagName === 'A') {
      node.childNodes.forEach(walk);
      const href = node.getAttribute('href');
      if (href && href !== node.textContent?.trim()) out += ` (${href})`;
      return;
    }
    node.childNodes.forEach(walk);
    if (BLOCKS.has(node.tagName)) out += '\n';
  };
  walk(doc.body);
  return out
    .split('\n')
    .map((line) => line.trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** A message as text: an email's HTML through `htmlToText`, anything else as it is. */
export const textOf = (body: string): string => (looksLikeHtml(body) ? htmlToText(body) : body);
