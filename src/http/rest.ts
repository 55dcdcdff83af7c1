import { pipeline } from 'node:stream/promises';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type { JsonPage, Page, PageRequest } from '../db/pagination.js';
import type { Streamed } from '../lib/download.js';
import { methodNotAllowed, unsupportedMediaType } from '../lib/errors.js';
import { readUpload } from './upload.js';
import { parse, pageArgs } from '../lib/validation.js';
import type { Operation } from '../operation.js';

type Method = 'get' | 'post' | 'put' | 'delete';

/** One documented path: how a request becomes an operation's input and params. */
export interface Route {
  method: Method;
  path: string;
  op: Operation<any, any>;
  status?: number;
  /** What the operation validates: the JSON body by default. */
  input?: (req: Request) => unknown;
  /** A list: `limit`/`cursor` are read from the query and the page is answered with paging headers. */
  list?: boolean;
  /** Turns the operation's result into the documented response body (for a `stream` route, the `Streamed` body). */
  view?: (result: any) => unknown;
  /**
   * The answer is streamed to the client as it reads it (a `Streamed`): `true`, a file (a
   * `Download`) sent as an attachment; `'answer'`, the route's documented JSON answer, written as
   * it is produced.
   */
  stream?: true | 'answer';
  /** The media type of the file a `stream: true` route answers, for the API's description; CSV unless said. */
  streamType?: 'text/csv' | 'application/json';
  /** The request uploads a file (`text/csv`, or `multipart/form-data` with a `file` part): its fields are the input, the file `params.file`. */
  upload?: boolean;
  /** Error statuses its method and path do not imply: a 404 for an id the body names. */
  errors?: number[];
}

const PAGE_KEYS = new Set(['limit', 'cursor']);

/** The query string without the `apikey` credential (a download's filters: paging means nothing there). */
export const queryParams = (req: Request) => Object.fromEntries(Object.entries(req.query as Record<string, unknown>).filter(([k]) => k !== 'apikey'));

/** A list's filters: the query string without paging and the `apikey` credential. */
export const queryFilters = (req: Request) =>
  Object.fromEntries(Object.entries(req.query as Record<string, unknown>).filter(([k]) => !PAGE_KEYS.has(k) && k !== 'apikey'));

function pageFrom(req: Request): PageRequest {
  const query = req.query as Record<string, unknown>;
  return parse(pageArgs, Object.fromEntries(Object.entries(query).filter(([k]) => PAGE_KEYS.has(k))));
}

function nextLink(req: Request, cursor: string): string {
  const url = new URL(req.originalUrl, `${req.protocol}://${req.get('host') ?? 'localhost'}`);
  url.searchParams.delete('apikey');
  url.searchParams.set('cursor', cursor);
  return `<${url.pathname}${url.search}>; rel="next"`;
}

/** The body types read as JSON: `application/json` (any charset the parser knows) and `+json` types. */
export const JSON_TYPES = ['application/json', 'application/*+json'];

/**
 * A request body, when there is one, must be JSON: another type is refused (415) rather than read as
 * no body at all. A request without a body (no content, or a length of 0) needs no content type.
 */
export const requireJson: RequestHandler = (req, _res, next) => {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  next(hasBody && !req.is(JSON_TYPES) ? unsupportedMediaType('application/json') : undefined);
};

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** Answers a path's other methods: OPTIONS with its `Allow`, anything else 405 with it. */
export function otherMethods(allow: Iterable<string>): RequestHandler {
  const methods = [...allow].sort((a, b) => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b));
  return (req, res, next) => {
    if (req.method === 'OPTIONS') {
      res.set('Allow', methods.join(', ')).status(204).end();
      return;
    }
    next(methodNotAllowed(req.method, methods));
  };
}

/**
 * A path of the table called with a method it lacks: 405 with the methods of every table path that
 * matches it (`/users/me` is also `/users/:id`), found by the router's own matching. Paths no route
 * knows fall through, to 404.
 */
function methodsOfTable(router: Router, routes: Route[]) {
  const byPath = new Map<string, Set<string>>();
  for (const route of routes) byPath.set(route.path, (byPath.get(route.path) ?? new Set()).add(route.method.toUpperCase()));
  for (const [path, methods] of byPath) {
    router.all(path, (_req, res, next) => {
      const allow: Set<string> = (res.locals.allow ??= new Set<string>());
      methods.forEach((m) => allow.add(m));
      next();
    });
  }
  router.use((req, res, next) => (res.locals.allow ? otherMethods(res.locals.allow as Set<string>)(req, res, next) : next()));
}

/** RFC 6266's `filename` parameter, kept to characters that need no quoting rules. */
const attachment = (filename: string) => `attachment; filename="${filename.replace(/[^\w.-]/g, '_')}"`;

/**
 * Sends a streamed answer: a file as an attachment (`filename`), or the answer itself. Its first
 * chunk is awaited before the status line, so that what fails before it (the stream's first query,
 * a send's first log) is the usual JSON error; a failure after it destroys the response, which the
 * client sees as a body cut short (a download unfinished, JSON that does not parse), never as a
 * complete one. The stream is read as the client takes it; a client that goes away destroys it,
 * which ends its reading (the work behind it decides whether that ends the work too).
 */
async function sendStreamed(res: Response, status: number, streamed: Streamed): Promise<void> {
  const chunks = streamed.stream[Symbol.asyncIterator]();
  let first: IteratorResult<unknown>;
  try {
    first = await chunks.next();
  } catch (err) {
    streamed.stream.destroy();
    throw err;
  }
  res.status(status).set({ 'Content-Type': streamed.contentType, 'Cache-Control': 'no-store' });
  if (streamed.filename !== undefined) res.set('Content-Disposition', attachment(streamed.filename));
  async function* body() {
    if (first.done) return;
    yield first.value;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
  }
  try {
    await pipeline(body, res);
  } catch (err) {
    // The client went away: nothing to answer, nothing went wrong here.
    if ((err as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') return;
    throw err;
  } finally {
    streamed.stream.destroy();
  }
}

/** Mounts the route table: each line calls the same operation the GraphQL resolvers call. */
export function restRouter(routes: Route[]): Router {
  const router = Router();
  for (const route of routes) {
    router[route.method](route.path, route.upload ? [] : requireJson, async (req: Request, res: Response) => {
      const params: Record<string, unknown> = route.list ? { ...req.params, ...pageFrom(req) } : { ...req.params };
      let input = route.input ? route.input(req) : req.body;
      if (route.upload) {
        const upload = await readUpload(req);
        input = upload.fields;
        params.file = upload.file;
        // A refused upload's answer goes out at once; the rest of the file is read and dropped.
        res.on('finish', () => upload.file.stream.resume());
      }
      const result = await route.op(req.ctx, input, params);
      if (route.stream) return sendStreamed(res, route.status ?? 200, (route.view ? route.view(result) : result) as Streamed);
      if (route.list) {
        const page = result as Page<unknown> | JsonPage;
        res.setHeader('X-Total-Count', String(page.totalCount));
        if (page.nextCursor) res.setHeader('Link', nextLink(req, page.nextCursor));
        // A page Postgres wrote as JSON goes as it is.
        if ('json' in page) res.status(route.status ?? 200).type('application/json').send(page.json);
        else res.status(route.status ?? 200).json(route.view ? page.items.map(route.view) : page.items);
        return;
      }
      res.status(route.status ?? 200).json(route.view ? route.view(result) : result);
    });
  }
  methodsOfTable(router, routes);
  return router;
}
