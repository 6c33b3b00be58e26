// The Express middleware: one pipeline of steps, identify → ban check → grant → tokens → count → respond.
import type { NextFunction, Request, Response } from 'express';
import {
  ANSWERED,
  answerLimited,
  type Context,
  GOING,
  PASSED,
  refuseBanned,
  sendJson,
  type Step,
  UNAUTHORIZED_BODY,
  UNAVAILABLE_BODY,
} from './context.js';
import type { Count } from '../stores/store.js';
import { addEntry, type Entry, entryOf, readsEntries, UNSET } from './entries.js';
import type { CompiledEndpoint, CompiledLimit } from './endpoint.js';
import { ListingLimitsError, StoreUnavailableError } from '../shared/errors.js';
import { retryAfterSeconds } from '../contract/headers.js';
import { observe, type Warn } from '../shared/hooks.js';
import { linkPages } from '../records/pages-link.js';
import { NO_ENDPOINT } from './observe/metrics.js';
import { type Client, REJECTED } from './identify.js';
import type { AnyListingName, EndpointRow } from '../contract/listings.js';
import { mountWarning } from './mount.js';
import { watchMountOrder } from './mount-order.js';
import { type Config, configure } from './options.js';
import type { ClientRef } from '../records/types.js';
import type { ListingLimitsMiddleware, ListingLimitsOptions, RateLimitInfo } from './types.js';
import type { Deadline } from '../stores/waiting.js';

declare global {
  namespace Express {
    interface Request {
      /** Set by listing-limits on every counted request. */
      rateLimit?: RateLimitInfo;
    }
  }
}

/** The state of one counted request: a class, so that every request's context has one shape. */
class RequestContext implements Context {
  client: Client = undefined as unknown as Client;
  count: Count = undefined as unknown as Count;
  counts: readonly Count[] | undefined = undefined;
  limit = 0;
  refused = false;
  deadline: Deadline | undefined = undefined;
  state: Context['state'] = GOING;
  outcome: Context['outcome'] = undefined;
  /** Requests left, as answered; -1 until the request is answered with its headers. */
  remaining = -1;
  /** When the shown limit's window ends (epoch ms), as answered. */
  resetAt = 0;
  #rateLimit: RateLimitInfo | undefined = undefined;

  constructor(
    readonly req: Request,
    readonly res: Response,
    readonly next: NextFunction,
    public endpoint: CompiledEndpoint,
    /** The table's endpoint, whatever grant moves the request onto: the `endpoint` label of the metrics. */
    readonly row: string,
    /** The request's entry before this one: another middleware's, or an assignment to `req.rateLimit`. */
    readonly prev: Entry | undefined,
    /** The middleware that took the request: its configuration. */
    readonly owner: unknown,
  ) {}

  /** `req.rateLimit`, made when first read: most requests' is never read. */
  rateLimit(): RateLimitInfo | typeof UNSET {
    if (this.remaining < 0) return UNSET;
    this.#rateLimit ??= rateLimitOf(this);
    return this.#rateLimit;
  }
}

function rateLimitOf(ctx: RequestContext): RateLimitInfo {
  return { endpoint: ctx.endpoint.name, limit: ctx.limit, remaining: ctx.remaining, resetTime: new Date(ctx.resetAt) };
}

/**
 * What `handler` is given of a refused request: its `req.rateLimit` and `retryAfter`. Here and in `onLimit`'s event,
 * written out member by member: V8 gives every object that a spread with more members makes (`{ ...info, retryAfter }`)
 * a hidden class of its own, on every refusal.
 */
function limitInfo(ctx: RequestContext, retryAfter: number): RateLimitInfo & { retryAfter: number } {
  const { endpoint, limit, remaining, resetAt } = ctx;
  return { endpoint: endpoint.name, limit, remaining, resetTime: new Date(resetAt), retryAfter };
}

/** Counts a request that is done, once, for the metrics and the last hour, when either is kept and it was counted. */
function measured(ctx: RequestContext, config: Config): void {
  if (config.traffic.counting && ctx.outcome) config.traffic.count(ctx.row, ctx.outcome, ctx.client);
}

/** The endpoint of a request that matches no row: the steps it goes through never read it. */
const NO_ROW = undefined as unknown as CompiledEndpoint;

/**
 * Runs the steps from `from` on: each either finishes at once or returns a promise to wait for, and may answer the
 * request or let it through. Every error, thrown or rejected, goes to `failed`.
 */
function proceed(ctx: RequestContext, steps: readonly Step[], from: number, config: Config): void {
  let i = from;
  try {
    for (; i < steps.length && ctx.state === GOING; i++) {
      const pending = (steps[i] as Step)(ctx);
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
 * An error on the request path: a store that could not count fails open (the request passes, uncounted, without
 * headers) or closed (503); anything else goes to the app's error handler. After an answer, it is only reported.
 */
function failed(ctx: RequestContext, error: unknown, config: Config): void {
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
 * The one question the request path asks the records: is the client (or its address) banned, as far as this instance
 * knows? Answered from their cache of the store's bans, at once; refused with 403 when it is. Until the cache has read
 * the store's state once (just after it starts), the request waits for that read first, within its deadline (or the
 * records' bound on that read, for a store without a failure policy): a banned client is refused from the first
 * request.
 */
function banStep(config: Config): Step {
  const { records, waiting } = config;
  const { cache } = records;
  return (ctx) => {
    const ready = cache.ready;
    if (ready === undefined) return void refuseBanned(cache, ctx);
    const refuse = () => void refuseBanned(cache, ctx);
    if (!waiting) return ready.then(refuse);
    ctx.deadline ??= waiting.start();
    return ctx.deadline.race(ready).then(refuse, refuse);
  };
}

/** The first steps of every request: skip, then identify. */
function identifySteps(config: Config): Step[] {
  const { identify, skip } = config;
  const steps: Step[] = [];
  if (skip) {
    const decide = (ctx: Context, skipped: boolean) => {
      if (skipped) ctx.state = PASSED;
    };
    steps.push((ctx) => {
      const skipped = skip(ctx.req);
      if (skipped instanceof Promise) return skipped.then((s) => decide(ctx, s));
      decide(ctx, skipped);
    });
  }
  const identified = (ctx: Context, client: Client | typeof REJECTED) => {
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
 * The steps of a request that matches no row, run only while a ban is active (with `ban.scope: 'site'`): identified,
 * then refused when banned, from this instance's cache of the store's bans, without a store command; else let through,
 * uncounted and without headers.
 */
function compileSiteSteps(config: Config): Step[] | undefined {
  if (config.scope !== 'site' || config.shadow) return undefined;
  return [
    ...identifySteps(config),
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
  const counted = (ctx: Context, count: Count | readonly Count[]) => {
    const { endpoint } = ctx;
    if (isCounts(count)) {
      const at = decisive(endpoint.limits, count);
      ctx.counts = count.length > 1 ? count : undefined;
      ctx.count = count[at] as Count;
      ctx.limit = (endpoint.limits[at] as CompiledLimit).limit;
    } else {
      ctx.count = count;
      ctx.limit = endpoint.limit;
    }
    ctx.refused = ctx.count.count > ctx.limit;
  };
  steps.push((ctx) => {
    if (waiting) ctx.deadline ??= waiting.start();
    const { counter } = ctx.endpoint;
    const count = counter.count(ctx.client.key, ctx.deadline);
    if (count instanceof Promise) return count.then((c) => counted(ctx, c));
    // A shared store's counter that answers at once answers from its remembered refusals.
    if (metrics && !counter.countsNow) metrics.cachedRefusal();
    counted(ctx, count);
  });
  if (banRule) steps.push((ctx) => (ctx.refused ? banRule.strike(ctx) : undefined));
  steps.push((ctx) => respond(ctx as RequestContext, config));
  return steps;
}

function isCounts(count: Count | readonly Count[]): count is readonly Count[] {
  return Array.isArray(count);
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

/**
 * Answers a counted request: headers and `req.rateLimit`, then, over the limit, `onLimit` and the 429 (or the
 * `handler`).
 */
function respond(ctx: RequestContext, config: Config): void {
  const { endpoint, count, req, res } = ctx;
  const allowed = !ctx.refused;
  const now = Date.now();
  const msLeft = Math.max(count.resetAt - now, 0);
  const { limit } = ctx;
  const remaining = allowed ? limit - count.count : 0;
  // The counter may change after this request (the memory store's is updated in place): its values are kept.
  ctx.remaining = remaining;
  ctx.resetAt = count.resetAt;
  // Set on the request itself where no accessor reads the entries, or where the request has one of its own.
  if (!readsEntries(req, res) || Object.prototype.hasOwnProperty.call(req, 'rateLimit'))
    req.rateLimit = rateLimitOf(ctx);
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
  if (config.handler) {
    // From here the handler answers; what it throws or rejects with goes to the app's error handler.
    ctx.state = ANSWERED;
    const fail = (error: unknown) => (res.headersSent ? config.report(error, req) : ctx.next(error));
    try {
      const handled = config.handler(req, res, ctx.next, limitInfo(ctx, retryAfter));
      if (handled instanceof Promise) handled.then(undefined, fail);
    } catch (error) {
      fail(error);
    }
    return;
  }
  answerLimited(ctx, retryAfter);
}

/** Warns once that clients behind a proxy share one counter: requests carry X-Forwarded-For, `trust proxy` is off. */
function forwardedWarning(warn: Warn): (req: Request) => void {
  let warned = false;
  return (req) => {
    if (warned || req.headers['x-forwarded-for'] === undefined || req.app?.get('trust proxy')) return;
    warned = true;
    warn(
      'LISTING_LIMITS_TRUST_PROXY',
      "listing-limits: requests carry X-Forwarded-For but the app's 'trust proxy' setting is off, so req.ip is the " +
        "proxy's address and every client behind the proxy shares one counter. " +
        "Set app.set('trust proxy', ...) to your proxies.",
    );
  };
}

let warnedUncalled = false;

/**
 * What `listingLimits` does when Express calls it as middleware: it passes each request an error that says so (the
 * app has no limits until it is fixed, so no request passes), and emits a process warning with the same message at
 * the first (code `LISTING_LIMITS_NOT_CALLED`).
 */
function uncalled(next: NextFunction): never {
  const error = new ListingLimitsError(
    'ERR_NOT_CALLED',
    'listingLimits',
    'was given to app.use() itself, so Express calls it with each request; call it and mount what it returns: ' +
      "app.use(listingLimits('B', options)).",
  );
  if (!warnedUncalled) {
    warnedUncalled = true;
    process.emitWarning(error.message, { code: 'LISTING_LIMITS_NOT_CALLED' });
  }
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
  const warn = forwardedWarning(config.warn);
  const mounted = mountWarning(config.paths, config.warn);

  const middleware = function listingLimitsMiddleware(req: Request, res: Response, next: NextFunction) {
    const endpoint = config.match(req.method, req.path);
    if (!endpoint) {
      if (siteSteps && (cache.anyBan(Date.now()) || cache.ready)) {
        const site = new RequestContext(req, res, next, NO_ROW, NO_ENDPOINT, undefined, undefined);
        return proceed(site, siteSteps, 0, config);
      }
      mounted(req);
      return next();
    }
    // The request's entries: mounted twice on one request path, the middleware counts it once.
    const prev = entryOf(req, res);
    for (let entry = prev; entry !== undefined; entry = entry.prev) if (entry.owner === config) return next();
    warn(req);
    const ctx = new RequestContext(req, res, next, endpoint, endpoint.name, prev, config);
    addEntry(req, res, ctx);
    proceed(ctx, steps, 0, config);
  };
  records.start();
  const stopMountOrder = watchMountOrder(middleware, config.endpoints, config.warn);
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
      traffic.on = true;
      return traffic.summary();
    },
  };
}
