import type { ErrorRequestHandler, RequestHandler } from 'express';
import { HttpError, notFound, toHttpError } from '../lib/errors.js';

/** Body-parser failures are the client's: bad JSON is 400, too large is 413, wrong charset is 415. */
function fromBodyParser(err: { type?: string; status?: number }): HttpError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return new HttpError(400, 'Malformed JSON in request body');
    case 'entity.too.large':
      return new HttpError(413, 'Request body is too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError(415, 'Unsupported request body encoding');
    case 'request.aborted':
      return new HttpError(400, 'Request aborted');
    default:
      return err.status && err.status >= 400 && err.status < 500 ? new HttpError(err.status, 'Bad request') : null;
  }
}

export const notFoundHandler: RequestHandler = (_req, _res, next) => next(notFound());

/** The one place REST errors become `{ statusCode, message, error }`, with the headers their status calls for. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const httpError = fromBodyParser(err) ?? toHttpError(err);
  if (httpError.statusCode === 503) req.log.warn({ err: { message: (err as Error).message } }, 'database unavailable');
  else if (httpError.statusCode >= 500) req.log.error({ err }, 'request failed');
  if (res.headersSent) return res.end();
  res.set(httpError.headers());
  res.status(httpError.statusCode).json(httpError.toBody());
};
