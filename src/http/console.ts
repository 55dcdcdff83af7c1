import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import express, { Router } from 'express';
import { treeHash } from '../lib/tree-hash.js';

/** The repository root, where `web/` and its build live. */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CONSOLE_DIST = path.join(ROOT, 'web/dist');
const STAMP_FILE = 'build.json';
/** What the nonce placeholder of the built page (web/vite.config.ts `html.cspNonce`) is replaced in. */
const NONCE_PLACEHOLDER = /HERALD_CSP_NONCE/g;
/** The assets the build compresses, and the types they are served as. */
const CONTENT_TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/** The console build's inputs under `root`: its sources (with the generated documents) and the locked packages. */
export const consoleInputsHash = (root = ROOT) => treeHash(root, ['web/index.html', 'web/vite.config.ts', 'web/src', 'package-lock.json'], ['node_modules', 'dist']);

/** Written by `npm run build:web` next to the build: which inputs it was built from. */
export function writeConsoleStamp(root = ROOT): void {
  compressAssets(path.join(root, 'web/dist/assets'));
  const stamp = { inputs: consoleInputsHash(root), builtAt: new Date().toISOString() };
  writeFileSync(path.join(root, 'web/dist', STAMP_FILE), JSON.stringify(stamp, null, 2));
}

/** A `.gz` beside every script and stylesheet of the build (served by `precompressed`). */
function compressAssets(dir: string): void {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    if (CONTENT_TYPES[path.extname(name)]) writeFileSync(path.join(dir, `${name}.gz`), gzipSync(readFileSync(path.join(dir, name)), { level: 9 }));
  }
}

/** Why the console under `root` cannot be served as built (missing, or built from other sources), or null. */
export function consoleBuildProblem(root = ROOT): string | null {
  const dist = path.join(root, 'web/dist');
  const stampFile = path.join(dist, STAMP_FILE);
  if (!existsSync(stampFile) || !existsSync(path.join(dist, 'index.html'))) {
    return 'The console is not built: run `npm install` (it builds web/), or `npm run build:web`.';
  }
  const { inputs } = JSON.parse(readFileSync(stampFile, 'utf8')) as { inputs?: string };
  if (inputs !== consoleInputsHash(root)) return 'The console build is stale (web/ changed since it was built): run `npm run build:web`.';
  return null;
}

/**
 * The gzip copy the build wrote beside a script or stylesheet (`<name>.gz`), for clients that accept
 * gzip: the console's first load is a third of its raw size, without compressing per request.
 */
function precompressed(dir: string): express.RequestHandler {
  return (req, res, next) => {
    const type = CONTENT_TYPES[path.extname(req.path)];
    const file = path.join(dir, path.normalize(req.path));
    if (!type || !file.startsWith(dir + path.sep) || !req.acceptsEncodings('gzip') || !existsSync(`${file}.gz`)) return next();
    res.setHeader('Content-Type', type);
    res.setHeader('Content-Encoding', 'gzip');
    res.setHeader('Vary', 'Accept-Encoding');
    res.sendFile(`${file}.gz`, { immutable: true, maxAge: '365d' });
  };
}

/** Paths a browser may open that are not the console's: the IDE, probes, the public pages, and downloads (a contacts export link). */
const NOT_CONSOLE = /^\/(graphql|health|ready|openapi\.json|docs|metrics|assets|contacts\/export)(\/|$)/;

/** The policy of the console's page: scripts and styles from Herald or carrying this response's nonce. */
function consolePolicy(nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}'`,
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * The console: its hashed assets (cached for good), and its page for every browser navigation
 * (`Accept` preferring HTML over JSON) that no other part of Herald answers, so `/contacts` in the
 * address bar is the contacts page while API clients asking the same path get JSON. Without a
 * build (a test run that never built it) the page says how to build it.
 */
export function consoleRouter(): Router {
  const router = Router();
  router.use('/assets', precompressed(path.join(CONSOLE_DIST, 'assets')));
  router.use('/assets', express.static(path.join(CONSOLE_DIST, 'assets'), { immutable: true, maxAge: '365d', index: false, fallthrough: false }));
  let page: string | null = null;
  // A middleware, not a route: a route on every path would make Express answer OPTIONS everywhere.
  router.use((req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (NOT_CONSOLE.test(req.path) || req.accepts(['application/json', 'text/html']) !== 'text/html') return next();
    page ??= existsSync(path.join(CONSOLE_DIST, 'index.html')) ? readFileSync(path.join(CONSOLE_DIST, 'index.html'), 'utf8') : null;
    if (!page) {
      res.status(503).type('text').send('The console is not built: run `npm install` (it builds web/), or `npm run build:web`.\n');
      return;
    }
    res.locals.route = 'console';
    const nonce = randomBytes(16).toString('base64');
    res.setHeader('Content-Security-Policy', consolePolicy(nonce));
    res.setHeader('Cache-Control', 'no-store');
    res.type('html').send(page.replace(NONCE_PLACEHOLDER, nonce));
  });
  return router;
}
