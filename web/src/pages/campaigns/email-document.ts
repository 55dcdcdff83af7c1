/**
 * An email's rendered body as the document of a sandboxed preview frame (`<iframe sandbox=""
 * srcDoc>`: no script runs in it, and it reaches nothing of the console). The frame inherits the
 * console's Content-Security-Policy, which takes no inline style but one carrying the page's nonce:
 * the email's `style` attributes become rules of one such `<style>`, its own `<style>` elements get
 * the nonce, and images from other hosts (which the policy refuses) are left out and counted.
 */

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A `style` attribute's declarations, each made `!important`: a rule then weighs as the attribute did. */
function important(style: string): string {
  return style
    .split(/;(?![^(]*\))/)
    .map((d) => d.trim())
    .filter((d) => d.includes(':'))
    .map((d) => (/!\s*important$/i.test(d) ? d : `${d} !important`))
    .join('; ');
}

const BASE = 'body { margin: 12px; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 14px; line-height: 1.5; color: #212529; overflow-wrap: anywhere; } img { max-width: 100%; }';

export interface EmailDocument {
  srcDoc: string;
  /** Images the preview leaves out: their address is another host's. */
  remoteImages: number;
}

export function emailDocument(body: string, html: boolean, nonce: string): EmailDocument {
  if (!html) {
    return { srcDoc: `<!doctype html><html><head><style nonce="${nonce}">${BASE} body { white-space: pre-wrap; }</style></head><body>${escapeHtml(body)}</body></html>`, remoteImages: 0 };
  }
  const doc = new DOMParser().parseFromString(body, 'text/html');
  const rules: string[] = [];
  doc.querySelectorAll('[style]').forEach((el, i) => {
    el.setAttribute('data-herald-style', String(i));
    rules.push(`[data-herald-style="${i}"] { ${important(el.getAttribute('style') ?? '')} }`);
    el.removeAttribute('style');
  });
  doc.querySelectorAll('style').forEach((el) => el.setAttribute('nonce', nonce));
  let remoteImages = 0;
  doc.querySelectorAll('img[src]').forEach((img) => {
    const src = img.getAttribute('src') ?? '';
    if (/^data:/i.test(src)) return;
    remoteImages++;
    img.removeAttribute('src');
  });
  const head = doc.head;
  const base = doc.createElement('base');
  // A link opens nowhere (the sandbox allows no new window) rather than inside the frame.
  base.setAttribute('target', '_blank');
  head.prepend(base);
  const style = doc.createElement('style');
  style.setAttribute('nonce', nonce);
  style.textContent = `${BASE}\n${rules.join('\n')}`;
  head.prepend(style);
  return { srcDoc: `<!doctype html>${doc.documentElement.outerHTML}`, remoteImages };
}
