import { randomUUID } from 'node:crypto';
import { expressMiddleware } from '@as-integrations/express5';
import express, { type Express } from 'express';
import helmet from 'helmet';
import { pinoHttp } from 'pino-http';
import type { Deps } from '../context.js';
import { ideHandler, ideStatic } from '../graphql/ide.js';
import { createApollo } from '../graphql/server.js';
import { HttpError } from '../lib/errors.js';
import { consentRouter } from '../modules/consent/routes.js';
import { trackingRouter } from '../modules/receipts/tracking-routes.js';
import { receiptsRouter } from '../modules/receipts/webhooks.js';
import { consoleRouter } from './console.js';
import { docsRouter } from './docs.js';
import { contextMiddleware } from './context.js';
import { errorHandler, notFoundHandler } from './errors.js';
import { httpMetrics, metricsEndpoint } from './metrics.js';
import { JSON_TYPES, otherMethods, requireJson, restRouter } from './rest.js';
import { API_INDEX } from './public-paths.js';
import { routes } from './routes.js';

const REQUEST_ID = /^[\w.:-]{1,100}$/;

/** Removes credentials from logged URLs: `?apikey=` values and export links' `?token=` never reach the logs. */
export const redactUrl = (url: string | undefined) => url?.replace(/([?&](?:apikey|token)=)[^&#]*/gi, '$1[REDACTED]');

export async function createApp(deps: Deps): Promise<{ app: Express; close: () => Promise<void> }> {
  const app = express();
  app.disable('x-powered-by');
  // Express hashes every response body for a weak ETag (a 1,000-contact page is ~360 KB of SHA-1
  // per request) that no API client of ours revalidates with.
  app.set('etag', false);
  app.set('trust proxy', deps.config.trustProxy);
  app.set('query parser', 'simple');

  app.use(httpMetrics);
  app.use(
    pinoHttp({
      logger: deps.log,
      genReqId: (req, res) => {
        const given = req.headers['x-request-id'];
        const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
        res.setHeader('X-Request-Id', id);
        return id;
      },
      serializers: {
        req: (req) => ({ id: req.id, method: req.method, url: redactUrl(req.url), remoteAddress: req.remoteAddress }),
        res: (res) => ({ statusCode: res.statusCode }),
      },
      customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
      autoLogging: { ignore: (req) => req.url === '/health' || req.url === '/ready' || req.url === '/metrics' },
    }),
  );
  app.use(helmet());
  // The process's metrics, for a scraper holding METRICS_TOKEN; without one, /metrics is 404 here.
  if (deps.config.metricsToken) app.get('/metrics', metricsEndpoint(deps.config.metricsToken)).all('/metrics', otherMethods(['GET']));
  // Public unsubscribe pages: before the JSON parser and the request context, so the token is
  // verified before any body is read and no credential is looked for.
  app.use(consentRouter(deps), receiptsRouter(deps), trackingRouter(deps));
  // The API description and its reference page (public, read-only).
  app.use(docsRouter(deps.config));
  // The console: its assets, and its page for browser navigations nothing above answered.
  app.use(consoleRouter());
  app.use(express.json({ limit: '15mb', type: JSON_TYPES }));
  app.use(contextMiddleware(deps));

  // An API client's `GET /` (a browser's got the console above): what Herald is and where its parts are.
  app.get('/', (_req, res) => {
    res.json(API_INDEX);
  });
  app.all('/', otherMethods(['GET']));
  app.get('/health', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/ready', async (_req, res) => {
    try {
      await deps.db.raw('SELECT 1');
      res.json({ status: 'ready' });
    } catch {
      const e = new HttpError(503, 'Database unavailable');
      res.status(503).json(e.toBody());
    }
  });
  app.all(['/health', '/ready'], otherMethods(['GET']));

  const { apollo, errorHandler: graphqlErrors } = await createApollo(deps.config, deps.log);
  const graphqlMethods = otherMethods(['GET', 'POST']);
  app.use(ideStatic);
  app.use('/graphql', (req, res, next) => (req.method === 'GET' || req.method === 'POST' ? next() : graphqlMethods(req, res, next)));
  app.get('/graphql', ideHandler());
  app.post('/graphql', requireJson);
  app.use('/graphql', expressMiddleware(apollo, { context: async ({ req }) => req.ctx }));
  // Whatever is refused before Apollo (body, content type, method) is answered as GraphQL too.
  app.use('/graphql', graphqlErrors);

  app.use(restRouter(routes));
  app.use(notFoundHandler);
  app.use(errorHandler);
  return { app, close: () => apollo.stop() };
}
