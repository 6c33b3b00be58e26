// The Express middleware: match → client → ban → grant → consume → headers → next(), 429 or 403.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { REJECTED } from './client.js';
import { UNLIMITED } from './grants.js';
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

/** The middleware, with the means to lift a ban. */
export interface ListingLimitsMiddleware extends RequestHandler {
  /** Lifts the ban of a client key as reported to `onBan`, and forgets its refusals. Resolves true when it was banned. */
  unban(key: string): Promise<boolean>;
}

const MESSAGE = 'You are sending too many requests, please slow down';

/** The 429 body of the original service, which its clients parse, with the seconds to wait. */
export function limitedBody(retryAfter: number): string {
  return `{"success":false,"code":429,"message":"${MESSAGE}","retryAfter":${retryAfter}}`;
}

function sendJson(res: Response, status: number, body: string, retryAfter?: number): void {
  res.statusCode = status;
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(body);
}

const UNAUTHORIZED = '{"success":false,"code":401,"message":"The Authorization token is not valid"}';

function bannedBody(until: number, retryAfter: number): string {
  const message = 'You are banned from this API for circumventing its rate limits';
  return `{"success":false,"code":403,"message":"${message}","bannedUntil":"${new Date(until).toISOString()}","retryAfter":${retryAfter}}`;
}

/** Sends what the request gets; resolves true when it may go on to the next handler. */
async function limit(config: Config, base: CompiledEndpoint, req: Request, res: Response, next: NextFunction): Promise<boolean> {
  if (config.skip && (await config.skip(req))) return true;
  const client = await config.identify(req);
  if (client === REJECTED) {
    sendJson(res, 401, UNAUTHORIZED);
    return false;
  }
  if (config.bans && !config.shadow) {
    const until = await config.bans.bannedUntil(client);
    if (until !== undefined) {
      const retryAfter = retryAfterSeconds(until - Date.now());
      sendJson(res, 403, bannedBody(until, retryAfter), retryAfter);
      return false;
    }
  }
  let compiled = base;
  if (config.grant) {
    const granted = await config.grant(client, req, base);
    if (granted === UNLIMITED) return true;
    compiled = granted;
  }

  let result: RateLimiterRes;
  let allowed = true;
  try {
    result = await compiled.limiter.consume(client.key);
  } catch (rejection) {
    // rate-limiter-flexible rejects with its result when the limit is hit, and with an Error when the store fails.
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    result = rejection;
    allowed = false;
  }
  if (config.bans) await config.bans.sawToken(client, req);

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
  if (allowed) return true;

  const retryAfter = retryAfterSeconds(result.msBeforeNext);
  config.onLimit?.({ ...info, retryAfter, client: { kind: client.kind, key: client.key }, shadow: config.shadow }, req);
  if (config.shadow) return true;
  if (config.bans) await config.bans.strike(client, req);
  if (config.handler) {
    config.handler(req, res, next, { ...info, retryAfter });
    return false;
  }
  sendJson(res, 429, limitedBody(retryAfter), retryAfter);
  return false;
}

/** Warns once that clients behind a proxy share one counter, when requests carry X-Forwarded-For but `trust proxy` is off. */
function forwardedWarning(): (req: Request) => void {
  let warned = false;
  return (req) => {
    if (warned || req.headers['x-forwarded-for'] === undefined || req.app?.get('trust proxy')) return;
    warned = true;
    process.emitWarning(
      "listing-limits: requests carry X-Forwarded-For but the app's 'trust proxy' setting is off, so req.ip is the proxy's address and every client behind the proxy shares one counter. Set app.set('trust proxy', ...) to your proxies.",
      { code: 'LISTING_LIMITS_TRUST_PROXY' },
    );
  };
}

/**
 * Express middleware that enforces a limits table: listing `'A'` or `'B'` of the contract, or custom rows.
 * Validates everything at once and throws a `ListingLimitsError` naming the field when the configuration
 * cannot work. Requests that match no row pass through untouched.
 */
export function listingLimits(
  listing: ListingName | readonly EndpointRow[],
  options?: ListingLimitsOptions,
): ListingLimitsMiddleware {
  const config = configure(listing, options);
  const warn = forwardedWarning();
  // Marks requests this instance has counted, so that mounting it twice on one request path counts once.
  const counted = Symbol('listing-limits counted');
  const middleware = function listingLimitsMiddleware(req: Request, res: Response, next: NextFunction) {
    const compiled = config.match(req.method, req.path);
    const marks = req as unknown as Record<symbol, boolean>;
    if (!compiled || marks[counted]) return next();
    marks[counted] = true;
    warn(req);
    limit(config, compiled, req, res, next).then((goOn) => {
      if (goOn) next();
    }, next);
  };
  return Object.assign(middleware, {
    unban: async (key: string) => (config.bans ? config.bans.unban(key) : false),
  });
}
