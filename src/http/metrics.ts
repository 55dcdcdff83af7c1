import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Request, RequestHandler, Response } from 'express';
import { IDE_STATIC_PATH } from '../graphql/ide.js';
import { HttpError, unauthorized } from '../lib/errors.js';
import { httpRequestDuration, METRICS_CONTENT_TYPE, metricsText, secondsSince, statusClass } from '../lib/metrics.js';

/**
 * `/metrics` (platform.md): the process's metrics in the Prometheus text format, on the API port
 * behind `METRICS_TOKEN`, or on a listener of its own at `METRICS_PORT` (`serveMetrics`, which the
 * worker process has too), and the HTTP request histogram every request is recorded in.
 */

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** Paths served as files, recorded as one route each. */
const STATIC_PREFIXES = ['/assets/', '/docs/assets/', IDE_STATIC_PATH];

/**
 * The route a request is recorded under: the template of the Express route that answered it
 * (`/contacts/:id`, never the id), `/graphql`, a static prefix (`/assets/*`), what a handler outside
 * the routes named in `res.locals.route` (the console page), or `unmatched`.
 */
export function routeTemplate(req: Request, res: Response): string {
  const pathname = req.originalUrl.split('?', 1)[0]!;
  if (pathname === '/graphql') return '/graphql';
  const route = req.route as { path?: string | string[] } | undefined;
  if (route?.path !== undefined) {
    const paths = Array.isArray(route.path) ? route.path : [route.path];
    // Of a route on several paths, the one whose fixed part the request starts with.
    const path = paths.find((p) => typeof p === 'string' && pathname.startsWith(req.baseUrl + p.split(/[:*]/, 1)[0])) ?? paths[0];
    if (typeof path === 'string') return req.baseUrl + path;
  }
  const prefix = STATIC_PREFIXES.find((p) => pathname.startsWith(p));
  if (prefix) return `${prefix}*`;
  return typeof res.locals.route === 'string' ? res.locals.route : 'unmatched';
}

/** Records every answered request in `herald_http_request_duration_seconds`. */
export const httpMetrics: RequestHandler = (req, res, next) => {
  const start = process.hrtime.bigint();
  res.once('finish', () => {
    httpRequestDuration.observe(
      { method: METHODS.has(req.method) ? req.method : 'other', route: routeTemplate(req, res), status: statusClass(res.statusCode) },
      secondsSince(start),
    );
  });
  next();
};

const digest = (value: string) => createHash('sha256').update(value).digest();

/** `GET /metrics` on the API port: `Authorization: Bearer <METRICS_TOKEN>`, compared in constant time, else 401. */
export function metricsEndpoint(token: string): RequestHandler {
  const expected = digest(token);
  return async (req, res, next) => {
    const header = req.headers.authorization;
    const given = header && /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
    if (!header) return next(new HttpError(401, 'Authentication required: send Authorization: Bearer <METRICS_TOKEN>'));
    if (!given || !timingSafeEqual(digest(given), expected)) return next(new HttpError(401, unauthorized().message, { credentialRefused: true }));
    try {
      res.set({ 'Content-Type': METRICS_CONTENT_TYPE, 'Cache-Control': 'no-store' }).send(await metricsText());
    } catch (err) {
      next(err);
    }
  };
}

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/**
 * A plain HTTP listener for `METRICS_PORT` that answers `GET /metrics` without a credential (the
 * port is meant to be reachable by the scraper alone) and 404 to anything else.
 */
export async function serveMetrics(port: number, host: string): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics') return void res.writeHead(404, { 'Content-Type': 'text/plain' }).end('Not found: metrics are at /metrics\n');
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' }).end();
    metricsText().then(
      (text) => res.writeHead(200, { 'Content-Type': METRICS_CONTENT_TYPE, 'Cache-Control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500, { 'Content-Type': 'text/plain' }).end('Metrics could not be collected\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const { port: bound } = server.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
