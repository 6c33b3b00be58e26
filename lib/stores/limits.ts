// Counters with several limits, as a store gives them: what is asked of one, and what it answers for a request.
import type { Limit, WindowKind } from '../contract/limit.js';

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
