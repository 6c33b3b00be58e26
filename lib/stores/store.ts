// Stores: factories that give each counter the rate-limiter-flexible limiter that keeps it.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { type RuntimeState } from './state.js';
import { type LimitsCounter, type LimitsSpec } from './limits.js';

export type { RuntimeState };
export type { Limit, WindowKind } from '../contract/limit.js';
export type { Count, CountsLimitsAsync, CountsLimitsNow, LimitsCounter, LimitsSpec } from './limits.js';

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

/**
 * What the middleware does when a store's limiter cannot answer in time, declared by stores that fail in a known
 * way (the Redis store). `timeoutMs` bounds the wait of one whole request, every store call included, counted in
 * the event loop's idle time: time the process is busy with other work does not count, up to 5 × `timeoutMs`.
 */
export interface StoreFailurePolicy {
  readonly timeoutMs: number;
  /** `'memory'` counts in this process meanwhile, `'open'` lets requests through uncounted, `'closed'` answers 503. */
  readonly onFailure: 'memory' | 'open' | 'closed';
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
