import { describe, expect, it } from '@jest/globals';
import { readTrackingToken } from './tracking-tokens.js';
import { trackHtml } from './tracking.js';

const SECRET = 'a server secret of enough length for tests';
const PUBLIC = 'https://herald.example';
const OPTIONS = { publicUrl: PUBLIC, secret: SECRET, orgId: '0b7f7f9e-6d1a-4c84-9b55-0d0d3f2a1c11', logId: 'c0ffee00-1234-4abc-8def-0123456789ab', position: 3 };
const REF = { orgId: OPTIONS.orgId, logId: OPTIONS.logId, position: 3 };

/** The URL each tracked link of `html` redirects to, in order. */
const targets = (html: string) =>
  [...html.matchAll(/\/t\/c\/([A-Za-z0-9_-]+)/g)].map((m) => readTrackingToken(SECRET, m[1]!)?.url);

describe('trackHtml', () => {
  it('rewrites http(s) links in either quotes, any case, after other attributes, and adds the pixel before </body>', () => {
    const html = `<html><body><p><a href="https://example.com/a">A</a> <A class="btn" data-x='1' HREF='http://example.com/b?x=1&amp;y=2'>B</A>
<a title="a > b" href = "https://example.com/c" >C</a> <a href=https://example.com/d>D</a></p></BODY></html>`;
    const tracked = trackHtml(html, OPTIONS);
    expect(targets(tracked)).toEqual(['https://example.com/a', 'http://example.com/b?x=1&y=2', 'https://example.com/c', 'https://example.com/d']);
    expect(tracked).toContain(`<A class="btn" data-x='1' HREF='${PUBLIC}/t/c/`);
    expect(tracked).toContain('<a title="a > b" href = "https://herald.example/t/c/');
    expect(tracked).toMatch(/<a href="https:\/\/herald\.example\/t\/c\/[A-Za-z0-9_-]+">D<\/a>/);
    expect(tracked).toMatch(/<img src="https:\/\/herald\.example\/t\/o\/([A-Za-z0-9_-]+)" width="1" height="1" alt="" border="0"><\/BODY><\/html>$/);
    const pixel = /\/t\/o\/([A-Za-z0-9_-]+)/.exec(tracked)![1]!;
    expect(readTrackingToken(SECRET, pixel)).toEqual({ ...REF, kind: 'open' });
    expect(readTrackingToken(SECRET, /\/t\/c\/([A-Za-z0-9_-]+)/.exec(tracked)![1]!)).toMatchObject({ ...REF, kind: 'click' });
  });

  it('leaves mailto:, tel:, anchors, relative links, Herald\'s own links and lookalike attributes alone', () => {
    const html = [
      '<a href="mailto:hi@example.com">m</a>',
      "<a href='tel:+254712345678'>t</a>",
      '<a href="#top">anchor</a>',
      '<a href="/relative">r</a>',
      `<a href="${PUBLIC}/u/abcDEF">Unsubscribe</a>`,
      '<a href="{{ unsubscribe_url }}">Unsubscribe</a>',
      '<a data-href="https://example.com/no" name="x">no href</a>',
      '<abbr title="https://example.com/">abbr</abbr>',
      '<a href="javascript:alert(1)">js</a>',
      '<a>bare</a>',
    ].join('');
    const tracked = trackHtml(html, OPTIONS);
    expect(tracked.slice(0, html.length)).toBe(html);
    expect(targets(tracked)).toEqual([]);
  });

  it('counts only the first href of a tag, and appends the pixel to a fragment without </body>', () => {
    const tracked = trackHtml('<p><a href="https://example.com/1" href="https://example.com/2">x</a></p>', OPTIONS);
    expect(targets(tracked)).toEqual(['https://example.com/1']);
    expect(tracked).toContain('href="https://example.com/2"');
    expect(tracked).toMatch(/<\/p><img src="[^"]+\/t\/o\/[^"]+"[^>]*>$/);
  });

  it('decodes character references as a browser reads the attribute', () => {
    const tracked = trackHtml('<a href=" https://x.test/?a=1&amp;b=2&#38;c=&#x33;&quot; ">x</a><a href="https://x.test/?copy&unknown;">y</a>', OPTIONS);
    expect(targets(tracked)).toEqual(['https://x.test/?a=1&b=2&c=3"', 'https://x.test/?copy&unknown;']);
  });

  it('reads tags as a browser does: links in comments, scripts and styles are not links, and the pixel goes before the real </body>', () => {
    const html = '<body><!-- <a href="https://example.com/c"> </body> --><script>var s = \'<a href="https://example.com/s">\';</script><style>a[href="https://example.com/y"]{}</style><a href="https://example.com/real">r</a></body>';
    const tracked = trackHtml(html, OPTIONS);
    expect(targets(tracked)).toEqual(['https://example.com/real']);
    expect(tracked).toContain('<!-- <a href="https://example.com/c"> </body> -->');
    expect(tracked).toMatch(/<\/a><img src="[^"]+" width="1" height="1" alt="" border="0"><\/body>$/);
    const after = trackHtml('<body><p>x</p></body><a href="https://example.com/late">late</a>', OPTIONS);
    expect(targets(after)).toEqual(['https://example.com/late']);
    expect(after).toMatch(/^<body><p>x<\/p><img [^>]+><\/body><a href="https:\/\/herald\.example\/t\/c\/[^"]+">late<\/a>$/);
  });
});
