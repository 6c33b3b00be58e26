// The access log: one readable line per finished request, with its endpoint and what the limiter decided.
import type { Request, RequestHandler, Response } from 'express';

/**
 * The log line of a finished request, e.g.
 * `[B] GET /v1/bots/1 -> 200 | GET /v1/bots/:id: 1 of 2 left`,
 * `[B] GET /v1/bots/1 -> 429 | GET /v1/bots/:id: refused, retry after 1s` or
 * `[B] GET /nope -> 404 | not limited`.
 */
function accessLine(listing: string, req: Request, res: Response): string {
  const request = `[${listing}] ${req.method} ${req.originalUrl} -> ${res.statusCode}`;
  const info = req.rateLimit;
  let state: string;
  if (!info) state = 'not limited';
  else if (res.statusCode === 429) state = `${info.endpoint}: refused, retry after ${res.getHeader('Retry-After')}s`;
  else state = `${info.endpoint}: ${info.remaining} of ${info.limit} left`;
  const error = typeof res.locals.error === 'string' ? ` | error: ${res.locals.error}` : '';
  return `${request} | ${state}${error}`;
}

/** Middleware that writes the access line of every request once its answer is sent. Mount it first. */
export function accessLog(listing: string, write: (line: string) => void): RequestHandler {
  return (req, res, next) => {
    res.on('finish', () => write(accessLine(listing, req, res)));
    next();
  };
}
