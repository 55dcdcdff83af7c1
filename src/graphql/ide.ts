import { createHash } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ruruHTML } from 'ruru/server';
import { serveStatic } from 'ruru/static';
import { toolPageCsp } from '../lib/csp.js';

export const IDE_STATIC_PATH = '/ruru-static/';

const DEFAULT_QUERY = `# Herald's GraphQL IDE. Send your credential in the Headers tab below, either
#   { "Authorization": "Bearer <token from signup or login>" }
# or
#   { "UNIFIED-API-Key": "uak_..." }
query Me {
  me {
    _id
    email
    role
    organization { name credits }
  }
}
`;

/** GraphiQL (the ruru distribution) from local files only: no CDN, works offline. */
export function idePage(): { html: string; csp: string } {
  const html = ruruHTML({
    endpoint: '/graphql',
    staticPath: IDE_STATIC_PATH,
    clientConfig: { defaultQuery: DEFAULT_QUERY, isHeadersEditorEnabled: true, showPersistHeadersSettings: true } as Parameters<typeof ruruHTML>[0]["clientConfig"],
  });
  // The page's inline scripts are allowed by their hashes, so the rest of the policy stays strict.
  const hashes = [...html.matchAll(/<script(?: type="module")?>([\s\S]*?)<\/script>/g)].map(
    (m) => `'sha256-${createHash('sha256').update(m[1]!, 'utf8').digest('base64')}'`,
  );
  const csp = toolPageCsp(hashes, ["worker-src 'self' blob:"]);
  return { html, csp };
}

export const ideStatic = serveStatic(IDE_STATIC_PATH) as unknown as RequestHandler;

/** A browser asking for `/graphql` (HTML, no query) gets the IDE; API clients fall through to Apollo. */
export function ideHandler(): RequestHandler {
  const page = idePage();
  return (req, res, next) => {
    const wantsHtml = req.method === 'GET' && req.accepts(['application/json', 'text/html']) === 'text/html';
    if (!wantsHtml || req.query.query !== undefined) return next();
    res.setHeader('Content-Security-Policy', page.csp);
    res.type('html').send(page.html);
  };
}
