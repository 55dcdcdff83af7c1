import { createRequire } from 'node:module';
import path from 'node:path';
import express, { Router } from 'express';
import type { Config } from '../config/config.js';
import { toolPageCsp } from '../lib/csp.js';
import { openApiDocument } from './openapi.js';
import { otherMethods } from './rest.js';
import { routes } from './routes.js';

/**
 * The API description and its reference page: `GET /openapi.json` (generated once, at the first
 * ask) and `/docs`, Swagger UI from the npm package's own files (no CDN: it works offline), its
 * start-up script a file of ours so that no inline script is needed. The package stays at 5.32:
 * from 5.33 on, Swagger UI stops rendering a description of more than about 124 operations after
 * the first few (Herald's has more; `tests/browser/openapi.browser.test.ts` counts them all).
 */

const SWAGGER_UI = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Herald REST API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="icon" href="/docs/assets/favicon-32x32.png">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/start.js"></script>
</body>
</html>
`;

const START = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const CSP = toolPageCsp();

export function docsRouter(config: Pick<Config, 'publicUrl'>): Router {
  const router = Router();
  let document: string | null = null;
  router.get('/openapi.json', (_req, res) => {
    document ??= JSON.stringify(openApiDocument(routes, config));
    res.type('application/json').send(document);
  });
  router.all('/openapi.json', otherMethods(['GET']));
  router.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', CSP);
    res.type('html').send(PAGE);
  });
  router.get('/docs/start.js', (_req, res) => {
    res.type('text/javascript').send(START);
  });
  router.use('/docs/assets', express.static(SWAGGER_UI, { index: false, maxAge: '1d' }));
  return router;
}
