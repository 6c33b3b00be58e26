// The request path, top to bottom: match, identify, ban check, grant, count, headers, then next() or a refusal;
// then the refusals' answers, and a request's state with `req.rateLimit`.
import { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Count } from '../stores/store.js';
import type { Counts } from '../stores/counter.js';
import type { Deadline, Waiting } from '../stores/waiting.js';
import type { CompiledEndpoint, CompiledLimit } from './endpoint.js';
import { StoreUnavailableError } from '../shared/errors.js';
import { retryAfterSeconds } from '../contract/headers.js';
import { observe } from '../shared/hooks.js';
import type { RecordCache } from '../records/cache.js';
import type { Grant } from '../records/types.js';
import { NO_ENDPOINT, type Outcome } from './observe/traffic.js';
import { type Client, forwardedWarning, REJECTED } from './identify.js';
import { mountWarning } from './mount.js';
import type { Config } from './options.js';
import type { RateLimitInfo } from './types.js';

declare global {
  namespace Express {
    interface Request {
      /** Set by listing-limits on every counted request. */
      rateLimit?: RateLimitInfo;
    }
  }
}

/** A request that matches no row passes untouched, unless banned site-wide. */
export function requestPath(config: Config) {
  const steps = compileSteps(config);
  const siteSteps = compileSiteSteps(config);
  const { cache } = config.records;
  const forwarded = forwardedWarning(config.warn);
  const mounted = mountWarning(config.table, config.warn);
  return function listingLimitsMiddleware(req: Request, res: Response, next: NextFunction) {
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
}

/** Runs the steps from `from` on: each finishes at once or returns a promise to wait for. */
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

function measured(ctx: Visit, config: Config): void {
  if (config.traffic.counting && ctx.outcome) config.traffic.count(ctx.row, ctx.outcome, ctx.client);
}

/** A store that could not count fails open (uncounted, without headers) or closed (503); after an answer, reported. */
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

/** The steps a configuration needs; the fast case (no async option, a memory store) never waits. */
function compileSteps(config: Config): Step[] {
  const { banRule, waiting, metrics } = config;
  const { cache } = config.records;
  const steps = identifySteps(config);
  if (!config.shadow) steps.push(banStep(config));
  steps.push(grantStep(config));
  if (banRule?.countsTokens) {
    steps.push((ctx) => refuseIfBanned(cache, ctx, banRule.tokens(ctx.client, ctx.req, ctx.within(waiting))));
  }
  steps.push((ctx) => {
    const { counter } = ctx.endpoint;
    const counts = counter.hit(ctx.client.key, ctx.within(waiting));
    if (counts instanceof Promise) return counts.then((c) => keepCounts(ctx, c));
    // A shared store's counter that answers at once answers from its remembered refusals.
    if (metrics && !counter.now) metrics.cachedRefusal();
    keepCounts(ctx, counts);
  });
  if (banRule) {
    steps.push((ctx) =>
      ctx.refused ? refuseIfBanned(cache, ctx, banRule.strike(ctx.client, ctx.req, ctx.within(waiting))) : undefined,
    );
  }
  steps.push((ctx) => respond(ctx, config));
  return steps;
}

/** A request that matches no row while a ban is in force (`ban.scope: 'site'`): refused when banned. */
function compileSiteSteps(config: Config): Step<Visit>[] | undefined {
  if (config.scope !== 'site' || config.shadow) return undefined;
  const pass: Step<Visit> = (ctx) => {
    ctx.state = PASSED;
  };
  return [...identifySteps<Visit>(config), banStep(config), pass];
}

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

/** Until the cache has read the store once, the request waits for that read. */
function banStep(config: Config): Step<Visit> {
  const { waiting } = config;
  const { cache } = config.records;
  const refuse = (ctx: Visit) => void refuseIfBanned(cache, ctx, true);
  return (ctx) => {
    const { ready } = cache;
    if (ready === undefined) return refuse(ctx);
    const deadline = ctx.within(waiting);
    const then = () => refuse(ctx);
    return deadline ? deadline.race(ready).then(then, then) : ready.then(then);
  };
}

/** A runtime grant wins over the option's. */
function grantStep(config: Config): Step {
  const { find, variant } = config.grants;
  const { cache } = config.records;
  const granted = (ctx: Context, grant: Grant | undefined) => {
    if (grant === undefined) return;
    if (grant !== 'unlimited') ctx.endpoint = variant(ctx.endpoint, grant);
    else {
      ctx.state = PASSED;
      ctx.outcome = 'allowed';
    }
  };
  return (ctx) => {
    const grant = cache.grantOf(ctx.client) ?? find?.(ctx.client, ctx.req);
    if (grant instanceof Promise) return grant.then((g) => granted(ctx, g));
    if (grant !== undefined) granted(ctx, grant);
  };
}

function keepCounts(ctx: Context, counts: Counts): void {
  const several = counts.length > 1;
  const { limits } = ctx.endpoint;
  const at = several ? decisive(limits, counts) : 0;
  ctx.counts = several ? counts : undefined;
  ctx.count = counts[at] as Count;
  ctx.limit = (limits[at] as CompiledLimit).limit;
  ctx.refused = ctx.count.count > ctx.limit;
}

// Of several limits, `req.rateLimit`, the legacy headers and Retry-After show the fewest left, then the latest reset:
// refused, the one that frees a request last, since a request passes only once every limit allows it.
function decisive(limits: readonly CompiledLimit[], counts: Counts): number {
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

function respond(ctx: Context, config: Config): void {
  const { count, limit, refused, client } = ctx;
  const now = Date.now();
  const msLeft = Math.max(count.resetAt - now, 0);
  const remaining = refused ? 0 : limit - count.count;
  // Kept now: the memory store's count changes in place after this request.
  ctx.answered(remaining, count.resetAt);
  // With another limiter's headers on the response, Retry-After points no earlier than the most restrictive one.
  let waitMs = msLeft;
  const { headers } = config;
  if (headers && ctx.counts) waitMs = headers.several(ctx.res, ctx.endpoint.limits, ctx.counts, now, client.key);
  else if (headers) waitMs = headers.one(ctx.res, ctx.endpoint.headers, remaining, msLeft, now, client.key);
  if (refused) return limited(ctx, config, retryAfterSeconds(Math.max(waitMs, msLeft)));
  ctx.state = PASSED;
  ctx.outcome = 'allowed';
}

function limited(ctx: Context, config: Config, retryAfter: number): void {
  const { endpoint, count, req, res, limit, remaining, client } = ctx;
  ctx.outcome = config.shadow ? 'shadow_limited' : 'limited';
  if (config.onLimit) {
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

// The answers of refused requests (401, 403, 429, 503): the original service's JSON, or RFC 9457 problem details for a
// client whose Accept prefers application/problem+json.

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_JSON = 'application/problem+json';
const OFFERED = ['application/json', PROBLEM_JSON];

/** draft-ietf-httpapi-ratelimit-headers' problem type, registered with IANA. */
export const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

/** The package's own problem type, documented in its README. */
export const BANNED = 'https://www.npmjs.com/package/listing-limits#problem-type-banned';

const MESSAGE = 'You are sending too many requests, please slow down';
const BANNED_MESSAGE = 'You are banned from this API for circumventing its rate limits';
const UNAUTHORIZED_BODY = '{"success":false,"code":401,"message":"The Authorization token is not valid"}';
const UNAVAILABLE_BODY =
  '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}';

function sendJson(ctx: Visit, status: number, body: string, retryAfter?: number, type = JSON_TYPE): void {
  const { res } = ctx;
  ctx.state = ANSWERED;
  res.statusCode = status;
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  res.setHeader('Content-Type', type);
  res.end(body);
}

/** Whether a refusal is sent as problem details: Accept prefers them (a tie goes to the JSON every client reads). */
function asProblem({ req, res }: Visit): boolean {
  // A cache must not give one client's refusal body to another.
  const vary = res.getHeader('Vary');
  if (vary === undefined) res.setHeader('Vary', 'Accept');
  else if (!/(?:^|,)\s*(?:accept|\*)\s*(?:,|$)/i.test(String(vary))) res.setHeader('Vary', `${String(vary)}, Accept`);
  const accept = req.headers.accept;
  return accept !== undefined && /problem\+json/i.test(accept) && req.accepts(OFFERED) === PROBLEM_JSON;
}

function violatedPolicies({ endpoint, counts }: Context): string[] {
  if (!counts) return [endpoint.headers.bucket];
  return endpoint.limits.filter((limit, i) => (counts[i] as Count).count > limit.limit).map((l) => l.headers.bucket);
}

function answerLimited(ctx: Context, retryAfter: number): void {
  if (asProblem(ctx)) {
    const problem = {
      type: QUOTA_EXCEEDED,
      title: 'Request cannot be satisfied as assigned quota has been exceeded',
      status: 429,
      detail: MESSAGE,
      'violated-policies': violatedPolicies(ctx),
      retryAfter,
    };
    sendJson(ctx, 429, JSON.stringify(problem), retryAfter, PROBLEM_JSON);
  } else
    sendJson(ctx, 429, `{"success":false,"code":429,"message":"${MESSAGE}","retryAfter":${retryAfter}}`, retryAfter);
}

/** When `check` is (or resolves) true, refuses a client banned (or whose address is) as the cache knows. */
function refuseIfBanned(cache: RecordCache, ctx: Visit, check: boolean | Promise<boolean>): void | Promise<void> {
  if (check instanceof Promise) return check.then((c) => refuseIfBanned(cache, ctx, c));
  const until = check ? cache.bannedUntil(ctx.client) : undefined;
  if (until !== undefined) answerBanned(ctx, until);
}

function answerBanned(ctx: Visit, until: number): void {
  const retryAfter = retryAfterSeconds(until - Date.now());
  const bannedUntil = new Date(until).toISOString();
  ctx.outcome = 'banned';
  if (asProblem(ctx)) {
    const problem = {
      type: BANNED,
      title: 'Banned for circumventing the rate limits',
      status: 403,
      detail: BANNED_MESSAGE,
      bannedUntil,
      retryAfter,
    };
    sendJson(ctx, 403, JSON.stringify(problem), retryAfter, PROBLEM_JSON);
  } else {
    const body = `{"success":false,"code":403,"message":"${BANNED_MESSAGE}","bannedUntil":"${bannedUntil}"`;
    sendJson(ctx, 403, `${body},"retryAfter":${retryAfter}}`, retryAfter);
  }
}

const GOING = 0;
const PASSED = 1;
const ANSWERED = 2;

type Step<C extends Visit = Context> = (ctx: C) => void | Promise<void>;

/** A request through the middleware: identified, then refused if banned. Classes, so that each has one shape. */
class Visit {
  client!: Client;
  state: typeof GOING | typeof PASSED | typeof ANSWERED = GOING;
  /** Undefined for a request that is not counted (skipped, 401). */
  outcome: Outcome | undefined = undefined;
  deadline: Deadline | undefined = undefined;

  constructor(
    readonly req: Request,
    readonly res: Response,
    readonly next: NextFunction,
    /** The `endpoint` label of the metrics: the table's row, whatever grant moves the request. */
    readonly row: string,
  ) {}

  /** The request's one deadline, made at its first store call. */
  within(waiting: Waiting | undefined): Deadline | undefined {
    if (waiting) this.deadline ??= waiting.start();
    return this.deadline;
  }
}

class Context extends Visit {
  count!: Count;
  /** Each limit's count, for an endpoint of several. */
  counts: Counts | undefined = undefined;
  limit = 0;
  refused = false;
  /** As answered; -1 until the request is answered with its headers. */
  remaining = -1;
  resetAt = 0;
  #rateLimit: RateLimitInfo | undefined = undefined;

  constructor(
    req: Request,
    res: Response,
    next: NextFunction,
    /** The table's row, or the granted variant of it the request counts on. */
    public endpoint: CompiledEndpoint,
    /** The newest context of the request before this one: another middleware's. */
    readonly prev: Context | undefined,
    /** The middleware that took the request. */
    readonly owner: unknown,
  ) {
    super(req, res, next, endpoint.name);
  }

  /** `req.rateLimit`, made when first read (most requests' never is); undefined until answered. */
  rateLimit(): RateLimitInfo | undefined {
    if (this.remaining < 0) return undefined;
    const { endpoint, limit, remaining, resetAt } = this;
    this.#rateLimit ??= { endpoint: endpoint.name, limit, remaining, resetTime: new Date(resetAt) };
    return this.#rateLimit;
  }

  /** Keeps the answer for `req.rateLimit`; set on the request itself where no getter reads it. */
  answered(remaining: number, resetAt: number): void {
    this.remaining = remaining;
    this.resetAt = resetAt;
    const { req } = this;
    if (holderOf(req, this.res) === req || !readsContexts(req) || Object.hasOwn(req, 'rateLimit'))
      req.rateLimit = this.rateLimit();
  }
}

/** Where a request's newest context is kept: one symbol for every copy of the package. */
const NEWEST = Symbol.for('listing-limits.context');

type Holder = { [NEWEST]?: Context };

/** `res.locals`, where a property costs next to nothing; one added to `req` costs about 6% of an Express request. */
function holderOf(req: object, res: object): Holder {
  const locals = (res as { locals?: unknown }).locals;
  return typeof locals === 'object' && locals !== null ? locals : req;
}

/** The request's context for the middleware `owner`; undefined when `owner` has taken it already (mounted twice). */
function take(req: Request, res: Response, next: NextFunction, endpoint: CompiledEndpoint, owner: unknown) {
  const holder = holderOf(req, res);
  const prev = holder[NEWEST];
  for (let c = prev; c !== undefined; c = c.prev) if (c.owner === owner) return undefined;
  const ctx = new Context(req, res, next, endpoint, prev, owner);
  holder[NEWEST] = ctx;
  return ctx;
}

/** The getter of `req.rateLimit`: the newest answer of the middlewares that took the request. */
function rateLimit(this: { res?: { locals?: Holder } }): RateLimitInfo | undefined {
  for (let c = this.res?.locals?.[NEWEST]; c !== undefined; c = c.prev) {
    const info = c.rateLimit();
    if (info) return info;
  }
  return undefined;
}

/** An assignment to `req.rateLimit` (express-rate-limit's, the app's) holds until a middleware answers again. */
function assign(this: object, value: unknown): void {
  Object.defineProperty(this, 'rateLimit', { value, writable: true, enumerable: true, configurable: true });
}

/** Marks the getter as this package's, whichever copy (ESM or CommonJS) defined it. */
const GETTER = Symbol.for('listing-limits.rateLimit-getter');
Object.defineProperty(rateLimit, GETTER, { value: true });

// The getter is defined once on Express' request object, the prototype of every app's, unless something on the way
// has a `rateLimit` of its own.
function definesGetter(proto: object | null): boolean {
  let base = proto;
  while (base !== null && !Object.hasOwn(base, 'rateLimit')) {
    const up = Object.getPrototypeOf(base) as object | null;
    if (up === IncomingMessage.prototype) break;
    base = up;
  }
  if (base === null) return false;
  const existing = Object.getOwnPropertyDescriptor(base, 'rateLimit');
  if (existing) return (existing.get as { [GETTER]?: boolean } | undefined)?.[GETTER] === true;
  if (!Object.isExtensible(base)) return false;
  Object.defineProperty(base, 'rateLimit', { get: rateLimit, set: assign, configurable: true });
  return true;
}

let lastProto: object | null = null;
let lastReads = false;

/** {@link definesGetter}, one comparison while requests keep one prototype (their app's request object). */
function readsContexts(req: object): boolean {
  const proto = Object.getPrototypeOf(req) as object | null;
  if (proto !== lastProto) {
    lastReads = definesGetter(proto);
    lastProto = proto;
  }
  return lastReads;
}
