// The one counter interface the middleware counts with, and the parts of a store this package made.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Count, CounterSpec, LimitsCounter, LimitsSpec, Store, StoreFailurePolicy } from './store.js';
import type { RuntimeState } from './state.js';
import type { Deadline } from './waiting.js';

/** Each limit's count, in the order of the spec's limits. */
export type Counts = readonly Count[];

/**
 * One counter of a store. One limit in fixed windows counts every request, as rate-limiter-flexible does; sliding
 * windows and several limits count a request on all or none, the refused ones as `limit + 1`.
 */
export interface Counter {
  /** It counts in this process: `hit()` answers at once and cannot fail as a shared store does. */
  readonly now: boolean;
  /** `peek()` and `reset()` work: `usage()`, `reset()` and the token counts need them. */
  readonly reads: boolean;
  /** The part of the store that holds `key` (a Cluster's node), each part with its own breaker. */
  readonly route?: (key: string) => string;
  /**
   * Counts a request of `key`, within its request's `deadline` where the store can fail. A counter that counts now
   * may answer its live state: read it at once.
   */
  hit(key: string, deadline?: Deadline): Counts | Promise<Counts>;
  /** `key`'s counts without counting it: 0 where it has none. */
  peek(key: string, deadline?: Deadline): Counts | Promise<Counts>;
  /** Forgets `key`; answers whether it had a request counted. */
  reset(key: string): boolean | Promise<boolean>;
  /** Forgets what this instance remembers of `key`, whose count another instance reset. */
  forget?(key: string): void;
}

/** What the middleware uses of a store. */
export interface StoreParts {
  counter(spec: LimitsSpec): Counter;
  readonly state: RuntimeState | undefined;
  readonly failure: StoreFailurePolicy | undefined;
  /** It counts in this process, unless told to on purpose: one of several processes warns at start. */
  readonly countsAlone?: boolean;
  /** Tells `tell` once when the store's client has not connected a few seconds after start; answers its stop. */
  readonly watchConnection?: (tell: (message: string) => void) => () => void;
}

/** Where a store this package made keeps its parts: beside its public face, out of its type. */
export const PARTS = Symbol('listing-limits store');

/**
 * The one limit of a spec in fixed windows, which a rate-limiter-flexible limiter counts; undefined for sliding
 * windows or several limits, which need a `limits` counter.
 */
export function oneLimit(spec: LimitsSpec): CounterSpec | undefined {
  const [first] = spec.limits;
  if (spec.window !== 'fixed' || spec.limits.length !== 1 || !first) return undefined;
  return { name: spec.name, limit: first.limit, windowMs: first.windowMs };
}

/** A store's public face, whose limiters and limits counters are counters too, carrying its parts. */
export function storeWith(
  parts: Omit<StoreParts, 'counter'>,
  limiter: (spec: CounterSpec) => RateLimiterAbstract & Counter,
  limits: (spec: LimitsSpec) => LimitsCounter & Counter,
): Store {
  const { failure, state } = parts;
  const counter = (spec: LimitsSpec): Counter => {
    const one = oneLimit(spec);
    return one ? limiter(one) : limits(spec);
  };
  return Object.assign((spec: CounterSpec) => limiter(spec), {
    ...(failure && { failure }),
    ...(state && { state }),
    limits,
    [PARTS]: { ...parts, counter },
  });
}

/**
 * The counter with its calls that go to a store (those answering with a promise) timed for the metrics; one that
 * counts now as it is, as none of its calls does.
 */
export function timed(counter: Counter, observe: (seconds: number) => void): Counter {
  if (counter.now) return counter;
  const timing = <T>(start: number, answer: T): T => {
    if (answer instanceof Promise) {
      const done = () => observe((performance.now() - start) / 1000);
      answer.then(done, done);
    }
    return answer;
  };
  return {
    now: false,
    reads: counter.reads,
    route: counter.route,
    hit: (key) => timing(performance.now(), counter.hit(key)),
    peek: (key) => timing(performance.now(), counter.peek(key)),
    reset: (key) => timing(performance.now(), counter.reset(key)),
    forget: counter.forget,
  };
}
