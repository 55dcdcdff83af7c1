import type { ErrorRequestHandler, RequestHandler } from 'express';
import { fromExpress, notFound, toHttpError } from '../lib/errors.js';

export const notFoundHandler: RequestHandler = (_req, _res, next) => next(notFound());

/** The one place REST errors become `{ statusCode, message, error }`, with the headers their status calls for. */
export const errorHandler: ErrorRequestHandler = (err, req, res, _next) => {
  const httpError = fromExpress(err) ?? toHttpError(err);
  if (httpError.statusCode === 503) req.log.warn({ err: { message: (err as Error).message } }, 'database unavailable');
  else if (httpError.statusCode >= 500) req.log.error({ err }, 'request failed');
  if (res.headersSent) return res.end();
  res.set(httpError.headers());
  res.status(httpError.statusCode).json(httpError.toBody());
};
