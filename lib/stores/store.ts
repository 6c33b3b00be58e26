// A store's public form: a factory of rate-limiter-flexible limiters, and what it may declare besides.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Limit, WindowKind } from '../contract/limit.js';
import type { RuntimeState } from './state.js';

/** What a store is asked for: one counter, with its limit per window. */
export interface CounterSpec {
  /**
   * `<METHOD> <path>` of an endpoint (`"GET /v1/bots/:id (x10)"` for a grant's variant), or `listing-limits <what>`
   * for the package's own counters. A store with one namespace keeps counters apart by it.
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

/** The largest limit of a sliding window, which keeps each request (8 bytes in memory, about 10 in Redis). */
export const MAX_SLIDING_LIMIT = 10_000;

/** One limit's state after a request: its count (`limit + 1` where a limit refused it) and when it frees one. */
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
  /** Each limit's state for `key` without counting it (0 where none is counted). Optional: `usage()` needs it. */
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
 * How a store fails (the Redis store declares it). `timeoutMs` bounds one whole request's wait, counted in the event
 * loop's idle time, up to 5 × `timeoutMs`. Default, for a factory of limiters that declares none: `{ timeoutMs: 200,
 * onFailure: 'memory' }`, as for Redis.
 */
export interface StoreFailurePolicy {
  readonly timeoutMs: number;
  /** `'memory'` counts in this process meanwhile, `'open'` lets requests through uncounted, `'closed'` answers 503. */
  readonly onFailure: 'memory' | 'open' | 'closed';
  /** Longest wait (ms) of an operator's call (`ban()`, `usage()`, …), then `ERR_STORE_UNAVAILABLE`. Default: 2000. */
  readonly callTimeoutMs?: number;
}

/**
 * A store: called once per counter, it returns a rate-limiter-flexible limiter with `points = counter.limit` and
 * `duration = counter.windowMs / 1000`. It may declare a `failure` policy, a runtime `state` (bans, grants), and a
 * `limits` factory for sliding windows and several limits per endpoint (the memory and Redis stores declare all).
 */
export type Store = ((counter: CounterSpec) => RateLimiterAbstract) & {
  readonly failure?: StoreFailurePolicy;
  readonly state?: RuntimeState;
  readonly limits?: (counter: LimitsSpec) => LimitsCounter;
};
