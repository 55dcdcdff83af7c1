/**
 * The email editor's HTML and the Liquid in it. The rich-text editor keeps text as text, so
 * `{{ contact.firstName }}` and a tag inside a paragraph (`{% if %}...{% endif %}`) pass through it,
 * but it writes HTML of its own schema (paragraphs, headings, lists, links, bold, italic): markup it
 * does not know (a table, a style, a Liquid tag between blocks) is rewritten. `roundTrips` says
 * whether a text comes back from the editor as it went in, so that such a text stays in Source.
 */
import { generateHTML, generateJSON } from '@tiptap/react';
import { EMAIL_EXTENSIONS } from './extensions';

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", nbsp: ' ' };

/**
 * The editor's HTML with the entities its serializer put inside Liquid markup decoded: Liquid reads
 * `{% if points > 100 %}` as written, never `{% if points &gt; 100 %}`.
 */
export function liquidSafe(html: string): string {
  return html.replace(/\{\{[\s\S]*?\}\}|\{%[\s\S]*?%\}/g, (tag) => tag.replace(/&(amp|lt|gt|quot|#39|nbsp);/g, (_, name: string) => ENTITIES[name]!));
}

/** What the editor writes for `html`: the text loaded into it and written out again. */
export function throughEditor(html: string): string {
  return liquidSafe(generateHTML(generateJSON(html, EMAIL_EXTENSIONS), EMAIL_EXTENSIONS));
}

/** The same tag for the markup the editor writes another way. */
const SAME_TAG: Record<string, string> = { b: 'strong', i: 'em' };

/**
 * A form of HTML that two texts share when a browser reads them alike: tags and attributes in one
 * order, white space collapsed, and a list item's lone paragraph (the editor's way to write any
 * list item) as the item's own text.
 */
function canonical(html: string): string {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  doc.querySelectorAll('li > p:only-child').forEach((p) => p.replaceWith(...p.childNodes));
  const write = (node: Node): string => {
    if (node.nodeType === Node.TEXT_NODE) return (node.textContent ?? '').replace(/\s+/g, ' ');
    if (node.nodeType !== Node.ELEMENT_NODE) return `<!${node.nodeName}>`;
    const el = node as Element;
    const tag = SAME_TAG[el.localName] ?? el.localName;
    const attributes = [...el.attributes].map((a) => `${a.name}="${a.value}"`).sort().join(' ');
    return `<${tag}${attributes ? ` ${attributes}` : ''}>${[...el.childNodes].map(write).join('')}</${tag}>`;
  };
  return [...doc.head.childNodes, ...doc.body.childNodes]
    .map(write)
    .join('')
    .replace(/\s*(<[^>]*>)\s*/g, '$1')
    .trim();
}

/** Whether `html` comes back from the editor as a browser would read it going in. */
export function roundTrips(html: string): boolean {
  if (!html.trim()) return true;
  try {
    return canonical(throughEditor(html)) === canonical(html);
  } catch {
    return false;
  }
}
