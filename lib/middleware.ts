// The Express middleware: match → key → consume → headers → next() or 429.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { StoreUnavailableError } from './errors.js';
import { retryAfterSeconds, setRateLimitHeaders } from './headers.js';
import type { EndpointRow, ListingName } from './listings.js';
import {
  type CompiledEndpoint,
  type Config,
  configure,
  type ListingLimitsOptions,
  type RateLimitInfo,
} from './options.js';

declare global {
  namespace Express {
    interface Request {
      /** Set by listing-limits on every counted request. */
      rateLimit?: RateLimitInfo;
    }
  }
}

const MESSAGE = 'You are sending too many requests, please slow down';

/** The 429 body of the original service, which its clients parse, with the seconds to wait. */
export function limitedBody(retryAfter: number): string {
  return `{"success":false,"code":429,"message":"${MESSAGE}","retryAfter":${retryAfter}}`;
}

/** The 503 of a store that fails closed, in the shape of the 429 body. */
const UNAVAILABLE_BODY =
  '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}';

/** A store that could not count: fail open (the request passes, uncounted, without headers) or closed (503). */
function storeUnavailable(error: StoreUnavailableError, res: Response, next: NextFunction): void {
  if (error.mode === 'open') return next();
  res.statusCode = 503;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(UNAVAILABLE_BODY);
}

async function consume(config: Config, compiled: CompiledEndpoint, req: Request, res: Response, next: NextFunction) {
  if (config.skip && (await config.skip(req))) return next();
  const client = await config.key(req);
  if (typeof client !== 'string' || client === '') {
    throw new TypeError(
      `listingLimits: options.key returned ${JSON.stringify(client)}; it must return a non-empty string.`,
    );
  }
  let result: RateLimiterRes;
  let allowed = true;
  try {
    result = await compiled.limiter.consume(client);
  } catch (rejection) {
    // rate-limiter-flexible rejects with its result when the limit is hit, and with an Error when the store fails.
    if (rejection instanceof StoreUnavailableError) return storeUnavailable(rejection, res, next);
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    result = rejection;
    allowed = false;
  }
  const { endpoint } = compiled;
  const now = Date.now();
  const remaining = allowed ? result.remainingPoints : 0;
  const info: RateLimitInfo = {
    endpoint: endpoint.name,
    limit: endpoint.limit,
    remaining,
    resetTime: new Date(now + Math.max(result.msBeforeNext, 0)),
  };
  req.rateLimit = info;
  if (config.headers) setRateLimitHeaders(res, compiled.headers, remaining, result.msBeforeNext, now);
  if (allowed) return next();

  const retryAfter = retryAfterSeconds(result.msBeforeNext);
  if (config.handler) return config.handler(req, res, next, { ...info, retryAfter });
  res.statusCode = 429;
  res.setHeader('Retry-After', String(retryAfter));
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(limitedBody(retryAfter));
}

/**
 * Express middleware that enforces a limits table: listing `'A'` or `'B'` of the contract, or custom rows.
 * Validates everything at once and throws a `ListingLimitsError` naming the field when the configuration
 * cannot work. Requests that match no row pass through untouched.
 */
export function listingLimits(
  listing: ListingName | readonly EndpointRow[],
  options?: ListingLimitsOptions,
): RequestHandler {
  const config = configure(listing, options);
  // Marks requests this instance has counted, so that mounting it twice on one request path counts once.
  const counted = Symbol('listing-limits counted');
  return function listingLimitsMiddleware(req, res, next) {
    const compiled = config.match(req.method, req.path);
    const marks = req as unknown as Record<symbol, boolean>;
    if (!compiled || marks[counted]) return next();
    marks[counted] = true;
    consume(config, compiled, req, res, next).catch(next);
  };
}
