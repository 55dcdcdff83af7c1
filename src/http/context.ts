import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Context, Deps } from '../context.js';
import { credentialRefused } from '../lib/errors.js';
import type { Caller, Credentials } from '../modules/auth/caller.js';
import { createLoaders } from '../loaders.js';
import { authenticate } from '../modules/auth/authenticate.js';

declare module 'express-serve-static-core' {
  interface Request {
    ctx: Context;
  }
}

function credentials(req: Request): Credentials {
  const headerKey = req.headers['unified-api-key'];
  const query = req.query as Record<string, unknown>;
  return {
    authorization: req.headers.authorization,
    headerKey: Array.isArray(headerKey) ? headerKey.join(',') : headerKey,
    queryKey: query.apikey as string | string[] | undefined,
  };
}

/** Where a request comes from (an HTTP request, or an operation over a WebSocket) and what it carries. */
export interface RequestOrigin {
  requestId: string;
  clientIp: string;
  idempotencyKey?: string;
  /** The credential it carries, read when the request first needs its caller. */
  credentials: () => Credentials;
}

/**
 * A request's context, built once at the edge. One request counts once against its organization's
 * quota, however many operations it runs. A 401 from `authenticate` refused a credential the
 * request carried (without one, the caller is null).
 */
export function createContext(deps: Deps, origin: RequestOrigin): Context {
  let caller: Promise<Caller | null> | undefined;
  return {
    ...deps,
    requestId: origin.requestId,
    clientIp: origin.clientIp,
    loaders: createLoaders(deps.db),
    idempotencyKey: origin.idempotencyKey,
    authenticate: () =>
      (caller ??= authenticate(deps, deps.tokens, origin.credentials()).then(
        async (c) => {
          if (c) await deps.quotas.request(c.orgId);
          return c;
        },
        (err) => Promise.reject(credentialRefused(err)),
      )),
  };
}

/** Builds the request context once, for whichever door the request goes through. */
export function contextMiddleware(deps: Deps): RequestHandler {
  return (req, _res, next) => {
    req.ctx = createContext(deps, {
      requestId: String(req.id ?? randomUUID()),
      clientIp: req.ip ?? 'unknown',
      idempotencyKey: req.get('idempotency-key'),
      credentials: () => credentials(req),
    });
    next();
  };
}
