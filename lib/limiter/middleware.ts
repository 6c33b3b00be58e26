// The Express middleware: one pipeline of steps, identify → ban check → grant → tokens → count → respond.
import type { NextFunction, Request, Response } from 'express';
import { ANSWERED, type Context, GOING, PASSED, type Step, take, Visit } from './context.js';
import type { Count } from '../stores/store.js';
import type { CompiledLimit } from './endpoint.js';
import { ListingLimitsError, StoreUnavailableError } from '../shared/errors.js';
import { retryAfterSeconds } from '../contract/headers.js';
import { observe, type Warn } from '../shared/hooks.js';
import { linkPages } from '../records/pages-link.js';
import { NO_ENDPOINT } from './observe/traffic.js';
import { type Client, REJECTED } from './identify.js';
import type { AnyListingName, EndpointRow } from '../contract/listings.js';
import { mountWarning, watchMountOrder } from './mount.js';
import { once } from '../shared/once.js';
import { type Config, configure } from './options.js';
import type { ClientRef } from '../records/types.js';
import { answerLimited, refuseBanned, sendJson, UNAUTHORIZED_BODY, UNAVAILABLE_BODY } from './refusals.js';
import type { ListingLimitsMiddleware, ListingLimitsOptions, RateLimitInfo } from './types.js';

declare global {
  namespace Express {
    interface Request {
      /** Set by listing-limits on every counted request. */
      rateLimit?: RateLimitInfo;
    }
  }
}

/** Counts a request that is done, for the metrics and the last hour, when either is kept. */
function measured(ctx: Visit, config: Config): void {
  if (config.traffic.counting && ctx.outcome) config.traffic.count(ctx.row, ctx.outcome, ctx.client);
}

/** Runs the steps from `from` on: each finishes at once or returns a promise to wait for. Errors go to `failed`. */
function proceed<C extends Visit>(ctx: C, steps: readonly Step<C>[], from: number, config: Config): void {
  let i = from;
  try {
    for (; i < steps.length && ctx.state === GOING; i++) {
      const pending = (steps[i] as Step<C>)(ctx);
      if (pending !== undefined) {
        const at = i + 1;
        pending.then(
          () => proceed(ctx, steps, at, config),
          (error: unknown) => failed(ctx, error, config),
        );
        return;
      }
    }
  } catch (error) {
    failed(ctx, error, config);
    return;
  }
  ctx.deadline?.clear();
  measured(ctx, config);
  if (ctx.state === PASSED) ctx.next();
}

/**
 * A store that could not count fails open (the request passes, uncounted, without headers) or closed (503); any other
 * error goes to the app's error handler. After an answer, it is only reported.
 */
function failed(ctx: Visit, error: unknown, config: Config): void {
  ctx.deadline?.clear();
  if (ctx.state !== GOING || ctx.res.headersSent) {
    config.report(error, ctx.req);
    return;
  }
  ctx.state = ANSWERED;
  if (!(error instanceof StoreUnavailableError)) return ctx.next(error);
  ctx.outcome = 'store_unavailable';
  measured(ctx, config);
  if (error.mode === 'open') return ctx.next();
  sendJson(ctx, 503, UNAVAILABLE_BODY);
}

/**
 * Refuses a banned client (or address) with 403, from the records' cache of the store's bans. Until the cache has
 * read the store once, just after the start, the request waits for that read within its deadline.
 */
function banStep(config: Config): Step<Visit> {
  const { records, waiting } = config;
  const { cache } = records;
  return (ctx) => {
    const ready = cache.ready;
    if (ready === undefined) return void refuseBanned(cache, ctx);
    const refuse = () => void refuseBanned(cache, ctx);
    const deadline = ctx.within(waiting);
    return deadline ? deadline.race(ready).then(refuse, refuse) : ready.then(refuse);
  };
}

/** The first steps of every request: skip, then identify. */
function identifySteps<C extends Visit = Context>(config: Config): Step<C>[] {
  const { identify, skip } = config;
  const steps: Step<C>[] = [];
  if (skip) {
    const decide = (ctx: Visit, skipped: boolean) => {
      if (skipped) ctx.state = PASSED;
    };
    steps.push((ctx) => {
      const skipped = skip(ctx.req);
      if (skipped instanceof Promise) return skipped.then((s) => decide(ctx, s));
      decide(ctx, skipped);
    });
  }
  const identified = (ctx: Visit, client: Client | typeof REJECTED) => {
    if (client === REJECTED) sendJson(ctx, 401, UNAUTHORIZED_BODY);
    else ctx.client = client;
  };
  steps.push((ctx) => {
    const client = identify(ctx.req);
    if (client instanceof Promise) return client.then((c) => identified(ctx, c));
    identified(ctx, client);
  });
  return steps;
}

/**
 * The steps of a request that matches no row while a ban is in force (`ban.scope: 'site'`): refused when banned, from
 * the cache, else let through uncounted.
 */
function compileSiteSteps(config: Config): Step<Visit>[] | undefined {
  if (config.scope !== 'site' || config.shadow) return undefined;
  return [
    ...identifySteps<Visit>(config),
    banStep(config),
    (ctx) => {
      ctx.state = PASSED;
    },
  ];
}

/** The steps a configuration needs, in order; the fast case (no async option, a memory store) never waits. */
function compileSteps(config: Config): Step[] {
  const { banRule, waiting, metrics } = config;
  const steps = identifySteps(config);
  if (!config.shadow) steps.push(banStep(config));
  steps.push(config.grant);
  if (banRule?.countsTokens) steps.push(banRule.tokens);
  const counted = (ctx: Context, counts: readonly Count[]) => {
    const { endpoint } = ctx;
    if (counts.length === 1) {
      ctx.counts = undefined;
      ctx.count = counts[0] as Count;
      ctx.limit = endpoint.limit;
    } else {
      const at = decisive(endpoint.limits, counts);
      ctx.counts = counts;
      ctx.count = counts[at] as Count;
      ctx.limit = (endpoint.limits[at] as CompiledLimit).limit;
    }
    ctx.refused = ctx.count.count > ctx.limit;
  };
  steps.push((ctx) => {
    const { counter } = ctx.endpoint;
    const counts = counter.hit(ctx.client.key, ctx.within(waiting));
    if (counts instanceof Promise) return counts.then((c) => counted(ctx, c));
    // A shared store's counter that answers at once answers from its remembered refusals.
    if (metrics && !counter.now) metrics.cachedRefusal();
    counted(ctx, counts);
  });
  if (banRule) steps.push((ctx) => (ctx.refused ? banRule.strike(ctx) : undefined));
  steps.push((ctx) => respond(ctx, config));
  return steps;
}

/**
 * Which limit's state `req.rateLimit`, the legacy headers and `Retry-After` show, of an endpoint's limits: the most
 * restrictive, that is the fewest requests left (a refusing limit has none), then the latest reset. Refused, that
 * is the limit that refused the request and frees one last, since a request passes only once every limit allows it.
 */
function decisive(limits: readonly CompiledLimit[], counts: readonly Count[]): number {
  let at = 0;
  let fewest = Infinity;
  let latest = 0;
  counts.forEach(({ count, resetAt }, i) => {
    const left = Math.max((limits[i] as CompiledLimit).limit - count, -1);
    if (left < fewest || (left === fewest && resetAt > latest)) {
      at = i;
      fewest = left;
      latest = resetAt;
    }
  });
  return at;
}

/** Answers a counted request: headers and `req.rateLimit`, then, over the limit, `onLimit` and the 429 or `handler`. */
function respond(ctx: Context, config: Config): void {
  const { endpoint, count, req, res, limit } = ctx;
  const allowed = !ctx.refused;
  const now = Date.now();
  const msLeft = Math.max(count.resetAt - now, 0);
  const remaining = allowed ? limit - count.count : 0;
  // Kept now: the memory store's count changes in place after this request.
  ctx.answered(remaining, count.resetAt);
  // With another limiter's headers on the response, Retry-After points no earlier than the most restrictive one.
  let waitMs = msLeft;
  const { headers } = config;
  if (headers) {
    const { key } = ctx.client;
    if (ctx.counts) waitMs = headers.several(res, endpoint.limits, ctx.counts, now, key);
    else waitMs = headers.one(res, endpoint.headers, remaining, msLeft, now, key);
  }
  if (allowed) {
    ctx.state = PASSED;
    ctx.outcome = 'allowed';
    return;
  }
  ctx.outcome = config.shadow ? 'shadow_limited' : 'limited';
  const retryAfter = retryAfterSeconds(Math.max(waitMs, msLeft));
  if (config.onLimit) {
    const { client } = ctx;
    // Member by member, not a spread, which in V8 gives every object it makes a hidden class of its own.
    const event = {
      endpoint: endpoint.name,
      limit,
      remaining,
      resetTime: new Date(count.resetAt),
      retryAfter,
      client: { kind: client.kind, key: client.key },
      shadow: config.shadow,
    };
    observe(config.onLimit, event, req, config.report);
  }
  if (config.shadow) {
    ctx.state = PASSED;
    return;
  }
  if (!config.handler) return answerLimited(ctx, retryAfter);
  // From here the handler answers; what it throws or rejects with goes to the app's error handler.
  ctx.state = ANSWERED;
  const fail = (error: unknown) => (res.headersSent ? config.report(error, req) : ctx.next(error));
  try {
    const info = { endpoint: endpoint.name, limit, remaining, resetTime: new Date(count.resetAt), retryAfter };
    const handled = config.handler(req, res, ctx.next, info);
    if (handled instanceof Promise) handled.then(undefined, fail);
  } catch (error) {
    fail(error);
  }
}

/** Clients behind a proxy share one counter when requests carry X-Forwarded-For and `trust proxy` is off. */
function forwardedWarning(warn: Warn): (req: Request) => void {
  const tell = once(() =>
    warn(
      'LISTING_LIMITS_TRUST_PROXY',
      "listing-limits: requests carry X-Forwarded-For but the app's 'trust proxy' setting is off, so req.ip is the " +
        "proxy's address and every client behind the proxy shares one counter. " +
        "Set app.set('trust proxy', ...) to your proxies.",
    ),
  );
  return (req) => {
    if (req.headers['x-forwarded-for'] !== undefined && !req.app?.get('trust proxy')) tell();
  };
}

const warnUncalled = once((message: string) => process.emitWarning(message, { code: 'LISTING_LIMITS_NOT_CALLED' }));

/** `app.use(listingLimits)`: every request gets an error that says so (the app has no limits), the first a warning. */
function uncalled(next: NextFunction): never {
  const error = new ListingLimitsError(
    'ERR_NOT_CALLED',
    'listingLimits',
    'was given to app.use() itself, so Express calls it with each request; call it and mount what it returns: ' +
      "app.use(listingLimits('B', options)).",
  );
  warnUncalled(error.message);
  next(error);
  return undefined as never;
}

/**
 * Express middleware that enforces a limits table: listing `'A'` (`'a'`, `'servers'`) or `'B'` (`'b'`, `'bots'`) of the
 * contract, or custom rows.
 * Validates everything at once and throws a `ListingLimitsError` naming the field when the configuration
 * cannot work. Requests that match no row pass through untouched.
 */
export function listingLimits(
  listing: AnyListingName | readonly EndpointRow[],
  options?: ListingLimitsOptions,
): ListingLimitsMiddleware {
  // `app.use(listingLimits)`: Express calls the factory itself with each request, and its `next` third.
  // eslint-disable-next-line prefer-rest-params
  const next: unknown = arguments[2];
  if (typeof next === 'function' && typeof listing === 'object' && listing !== null && !Array.isArray(listing))
    return uncalled(next as NextFunction);
  const config = configure(listing, options);
  const steps = compileSteps(config);
  const siteSteps = compileSiteSteps(config);
  const { records } = config;
  const { cache } = records;
  const forwarded = forwardedWarning(config.warn);
  const mounted = mountWarning(config.table, config.warn);

  const middleware = function listingLimitsMiddleware(req: Request, res: Response, next: NextFunction) {
    const endpoint = config.match(req.method, req.path);
    if (!endpoint) {
      if (siteSteps && (cache.anyBan(Date.now()) || cache.ready))
        return proceed(new Visit(req, res, next, NO_ENDPOINT), siteSteps, 0, config);
      mounted(req);
      return next();
    }
    const ctx = take(req, res, next, endpoint, config);
    if (ctx === undefined) return next();
    forwarded(req);
    proceed(ctx, steps, 0, config);
  };
  records.start();
  const stopMountOrder = watchMountOrder(middleware, config.table, config.warn);
  const limits = Object.assign(middleware, methods(config, stopMountOrder));
  return linkPages(limits, config.pagesLink);
}

/** The middleware's methods: the records' (`ban()` … `requests`), a client's counters, the last hour, `close()`. */
function methods(config: Config, stopMountOrder: () => void) {
  const { records, usage, traffic } = config;
  return {
    ...records.methods,
    close: () => {
      stopMountOrder();
      config.stopWatching();
      records.close();
    },
    usage: (client: ClientRef) => usage.of(client),
    reset: (client: ClientRef, endpoint?: string) => usage.reset(client, endpoint),
    traffic: () => {
      traffic.keepHour();
      return traffic.summary();
    },
  };
}
