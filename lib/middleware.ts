// The Express middleware: match → client → ban → grant → consume → headers → next(), 429 or 403.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { type Client, REJECTED } from './client.js';
import { StoreUnavailableError } from './errors.js';
import { UNLIMITED } from './grants.js';
import { retryAfterSeconds, setRateLimitHeaders } from './headers.js';
import type { EndpointRow, ListingName } from './listings.js';
import { MemoryLimiter } from './memory.js';
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

/** The 503 of a store that fails closed, in the shape of the 429 body. */
const UNAVAILABLE_BODY =
  '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}';

/**
 * An error on the request path: a store that could not count fails open (the request passes, uncounted,
 * without headers) or closed (503); anything else goes to the app's error handler.
 */
function failed(error: unknown, res: Response, next: NextFunction): void {
  if (!(error instanceof StoreUnavailableError)) return next(error);
  if (error.mode === 'open') return next();
  sendJson(res, 503, UNAVAILABLE_BODY);
}

const UNAUTHORIZED = '{"success":false,"code":401,"message":"The Authorization token is not valid"}';

/** The 403 of a banned client: when the ban ends, to the second (rounded up), and the seconds until then. */
function bannedBody(until: number, retryAfter: number): string {
  const message = 'You are banned from this API for circumventing its rate limits';
  const end = new Date(Math.ceil(until / 1000) * 1000).toISOString();
  return `{"success":false,"code":403,"message":"${message}","bannedUntil":"${end}","retryAfter":${retryAfter}}`;
}

/**
 * Answers a counted request from the store's result: headers and `req.rateLimit`, then, over the limit,
 * `onLimit` and the 429 (or the `handler`). Returns true when the request goes on to the next handler.
 */
function respond(
  config: Config,
  compiled: CompiledEndpoint,
  client: Client,
  req: Request,
  res: Response,
  next: NextFunction,
  result: RateLimiterRes,
  allowed: boolean,
): boolean {
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
  if (config.handler) {
    config.handler(req, res, next, { ...info, retryAfter });
    return false;
  }
  sendJson(res, 429, limitedBody(retryAfter), retryAfter);
  return false;
}

/** `respond` for the direct path, then next() when the request goes on; an error in between goes to `failed`. */
function answer(
  config: Config,
  compiled: CompiledEndpoint,
  client: Client,
  req: Request,
  res: Response,
  next: NextFunction,
  result: RateLimiterRes,
  allowed: boolean,
): void {
  let goOn: boolean;
  try {
    goOn = respond(config, compiled, client, req, res, next, result, allowed);
  } catch (error) {
    failed(error, res, next);
    return;
  }
  if (goOn) next();
}

/** rate-limiter-flexible resolves with its result, and rejects with it when the limit is hit or with an Error when the store fails. */
function consume(compiled: CompiledEndpoint, key: string): Promise<[RateLimiterRes, boolean]> {
  return compiled.limiter.consume(key).then(
    (result) => [result, true],
    (rejection: unknown) => {
      if (rejection instanceof RateLimiterRes) return [rejection, false];
      throw rejection;
    },
  );
}

/** The whole request path, for configurations with async steps: skip, authenticate, bans, grants. */
async function limit(config: Config, base: CompiledEndpoint, req: Request, res: Response, next: NextFunction): Promise<boolean> {
  if (config.skip && (await config.skip(req))) return true;
  const client = await config.identify(req);
  if (client === REJECTED) {
    sendJson(res, 401, UNAUTHORIZED);
    return false;
  }
  const { bans } = config;
  if (bans && !config.shadow) {
    const until = await bans.bannedUntil(client);
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
  const [result, allowed] = await consume(compiled, client.key);
  if (bans) {
    await bans.sawToken(client, req);
    if (!allowed && !config.shadow) await bans.strike(client, req);
  }
  return respond(config, compiled, client, req, res, next, result, allowed);
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
  // Without async steps the request path is: identify, one store call, respond.
  const direct = config.syncIdentify && !config.skip && !config.bans && !config.grant;

  const middleware = function listingLimitsMiddleware(req: Request, res: Response, next: NextFunction) {
    const compiled = config.match(req.method, req.path);
    const marks = req as unknown as Record<symbol, boolean>;
    if (!compiled || marks[counted]) return next();
    marks[counted] = true;
    warn(req);
    if (!direct) {
      limit(config, compiled, req, res, next).then(
        (goOn) => {
          if (goOn) next();
        },
        (error: unknown) => failed(error, res, next),
      );
      return;
    }
    const client = config.identify(req) as Client;
    const { limiter } = compiled;
    if (limiter instanceof MemoryLimiter) {
      const { count, resetAt } = limiter.countNow(client.key);
      const result = new RateLimiterRes(Math.max(limiter.points - count, 0), resetAt - Date.now(), count, count === 1);
      answer(config, compiled, client, req, res, next, result, count <= limiter.points);
      return;
    }
    // Other stores answer through a promise: one hop, then next().
    limiter.consume(client.key).then(
      (result) => answer(config, compiled, client, req, res, next, result, true),
      (rejection: unknown) => {
        if (rejection instanceof RateLimiterRes) answer(config, compiled, client, req, res, next, rejection, false);
        else failed(rejection, res, next);
      },
    );
  };
  return Object.assign(middleware, {
    unban: async (key: string) => (config.bans ? config.bans.unban(key) : false),
  });
}
