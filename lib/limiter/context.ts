// One request on its way through the middleware's steps, and `req.rateLimit`, which later handlers read from it.
import { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import type { Count } from '../stores/store.js';
import type { CompiledEndpoint } from './endpoint.js';
import type { Client } from './identify.js';
import type { Outcome } from './observe/traffic.js';
import type { RateLimitInfo } from './types.js';
import type { Deadline, Waiting } from '../stores/waiting.js';

/** Where a request stands: still going through the steps, let through, or answered by a step. */
export const GOING = 0;
export const PASSED = 1;
export const ANSWERED = 2;

/** A request through the middleware: identified, then refused if banned. Classes, so that each has one shape. */
export class Visit {
  /** Set by identification, before any step that reads it. */
  client!: Client;
  state: typeof GOING | typeof PASSED | typeof ANSWERED = GOING;
  /** For the metrics; undefined for a request that is not counted (skipped, 401). */
  outcome: Outcome | undefined = undefined;
  /** See {@link within}. */
  deadline: Deadline | undefined = undefined;

  constructor(
    readonly req: Request,
    readonly res: Response,
    readonly next: NextFunction,
    /** The `endpoint` label of the metrics: the table's row, whatever grant moves the request. */
    readonly row: string,
  ) {}

  /** The request's one deadline, made at its first store call; undefined for a store without a failure policy. */
  within(waiting: Waiting | undefined): Deadline | undefined {
    if (waiting) this.deadline ??= waiting.start();
    return this.deadline;
  }
}

/** A request on a row of the table, counted and answered. */
export class Context extends Visit {
  /** Set by the count step: of several limits, the most restrictive one's count and limit. */
  count!: Count;
  /** Each limit's count, for an endpoint of several limits. */
  counts: readonly Count[] | undefined = undefined;
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

/** A step of the request path: it reads and sets the context, and answers or lets the request through (`state`). */
export type Step<C extends Visit = Context> = (ctx: C) => void | Promise<void>;

/** Where a request's newest context is kept, one symbol for every copy of the package. */
const NEWEST = Symbol.for('listing-limits.context');

type Holder = { [NEWEST]?: Context };

/** `res.locals`, where a property costs next to nothing; one added to `req` costs about 6% of an Express request. */
function holderOf(req: object, res: object): Holder {
  const locals = (res as { locals?: unknown }).locals;
  return typeof locals === 'object' && locals !== null ? locals : req;
}

/** The request's context for the middleware `owner`; undefined when `owner` has taken it already (mounted twice). */
export function take(req: Request, res: Response, next: NextFunction, endpoint: CompiledEndpoint, owner: unknown) {
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

/**
 * Whether `req.rateLimit` of requests of prototype `proto` reads their contexts: the getter is defined once on Express'
 * request object, the prototype of every app's, unless something on the way has a `rateLimit` of its own.
 */
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
