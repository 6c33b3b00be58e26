// Stores: what the middleware asks of one (its contract, in the words of counting), and the public form of a store.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Limit, WindowKind } from '../contract/limit.js';
import type { RuntimeState } from './state.js';

/** What a store is asked for: one counter, with its limit per window. */
export interface CounterSpec {
  /**
   * The counter's name: `<METHOD> <path>` for an endpoint (`"GET /v1/bots/:id"`, the bucket name in headers), with
   * the grant for granted variants (`"GET /v1/bots/:id (x10)"`), or `listing-limits <what>` for the package's own
   * counters (bans, strikes, tokens per IP). A store that shares one namespace keeps counters apart by it.
   */
  readonly name: string;
  /** Requests allowed per window: the limiter's `points`. */
  readonly limit: number;
  /** Window length in milliseconds, whole seconds: the limiter's `duration` is `windowMs / 1000`. */
  readonly windowMs: number;
}

/** A counter with one or more limits, each with its own window, all counted in windows of one kind. */
export interface LimitsSpec {
  /** As {@link CounterSpec.name}: `<METHOD> <path>` of the endpoint, with its grant for granted variants. */
  readonly name: string;
  readonly window: WindowKind;
  /** The limits, each with a different `windowMs`; a request is counted only when every one allows it. */
  readonly limits: readonly Limit[];
}

/**
 * Requests a sliding window keeps at the most: a limit above it is refused at start-up, since each request in a
 * sliding window is kept (8 bytes in memory, about 10 bytes in Redis) until it leaves the window.
 */
export const MAX_SLIDING_LIMIT = 10_000;

/**
 * One limit's state after a request: its count (`limit + 1` for a limit that refused it; nothing is charged then) and
 * when it frees a request: the end of a fixed window, or when the oldest request counted leaves a sliding one.
 */
export interface Count {
  /** Requests counted in the current window (rate-limiter-flexible's `consumedPoints`). */
  readonly count: number;
  /** When the current window ends, in epoch milliseconds; `Infinity` for a window that never ends. */
  readonly resetAt: number;
}

/** A counter of several limits that counts synchronously, in this process. */
export interface CountsLimitsNow {
  readonly countsNow: true;
  /** Counts a request on every limit when each allows it, on none when one refuses; each limit's state in order. */
  countNow(key: string): readonly Count[];
  /**
   * Each limit's state for `key` without counting a request: the requests counted in its window now, and when it
   * frees one (0 for a limit with none counted). Optional: `usage()` needs it.
   */
  peek?(key: string): readonly Count[];
  /** Forgets `key` on every limit; returns whether it had a request counted. Optional: `reset()` needs it. */
  reset?(key: string): boolean;
}

/** A counter of several limits that counts in a shared store, one atomic command per request (the Redis store). */
export interface CountsLimitsAsync {
  readonly countsAsync: true;
  count(key: string): Promise<readonly Count[]>;
  /** As {@link CountsLimitsNow.peek}. Optional: `usage()` needs it. */
  peek?(key: string): Promise<readonly Count[]>;
  /** As {@link CountsLimitsNow.reset}. Optional: `reset()` needs it. */
  reset?(key: string): Promise<boolean>;
}

/** What a store's `limits` factory returns. */
export type LimitsCounter = CountsLimitsNow | CountsLimitsAsync;

/**
 * What the middleware does when a store's limiter cannot answer in time, declared by stores that fail in a known
 * way (the Redis store). `timeoutMs` bounds the wait of one whole request, every store call included, counted in
 * the event loop's idle time: time the process is busy with other work does not count, up to 5 × `timeoutMs`.
 */
export interface StoreFailurePolicy {
  readonly timeoutMs: number;
  /** `'memory'` counts in this process meanwhile, `'open'` lets requests through uncounted, `'closed'` answers 503. */
  readonly onFailure: 'memory' | 'open' | 'closed';
  /**
   * The longest an operator's call (`ban()`, `usage()`, a page's load, …) waits for the store in all, in
   * milliseconds: then it rejects with `ERR_STORE_UNAVAILABLE`, and a change of it that reaches the store later is
   * refused. Default: 2000.
   */
  readonly callTimeoutMs?: number;
}

/**
 * A store is a factory: called once per counter when the middleware is created, it returns the limiter that keeps
 * that counter, with `points = counter.limit` and `duration = counter.windowMs / 1000`. Any rate-limiter-flexible
 * limiter class fits (Redis, Postgres, Mongo, Memcached, ...). A store may declare a `failure` policy, a
 * `state` where bans and grants made at runtime are kept, and a `limits` factory for the endpoints that
 * rate-limiter-flexible's fixed windows cannot count: sliding windows, and several limits on one endpoint, counted
 * all or none in one atomic step (the memory and Redis stores declare all three).
 */
export type Store = ((counter: CounterSpec) => RateLimiterAbstract) & {
  readonly failure?: StoreFailurePolicy;
  readonly state?: RuntimeState;
  readonly limits?: (counter: LimitsSpec) => LimitsCounter;
};
