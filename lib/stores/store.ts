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

/** What a counter answers: one limit's count, or each limit's in order. */
export type CountAnswer = Count | readonly Count[];

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

/** What one counter of a store declares it can do. */
export interface CounterCapabilities {
  /** It counts in this process: `count()` answers at once, never with a promise, and cannot fail as a store does. */
  readonly countsNow: boolean;
  /** `peek()` reads a key without counting it and `reset()` forgets it (`usage()`, `reset()`, token counts). */
  readonly reads: boolean;
}

/**
 * One counter of a store, as the middleware counts with it: `Count` for a counter of one limit in fixed windows,
 * each limit's `Count` in order for one of several limits or of sliding windows.
 */
export interface StoreCounter<A extends Count | readonly Count[]> {
  readonly capabilities: CounterCapabilities;
  /**
   * Counts one request of `key` and answers its state: at once when it `countsNow` (the answer may be the counter's
   * live state, read at once), else with a promise. A counter of several limits counts on all of them or on none.
   */
  count(key: string): A | Promise<A>;
  /** `key`'s state, read without counting: undefined (or counts of 0) when it has none. Only when it `reads`. */
  peek(key: string): A | undefined | Promise<A | undefined>;
  /** Forgets `key`; answers whether it had a request counted. Only when it `reads`. */
  reset(key: string): boolean | Promise<boolean>;
  /**
   * Which part of the store holds `key` (a Cluster's node), when the store has parts that fail apart: each has its
   * own breaker (see `Waiting`). Undefined for a store of one part.
   */
  readonly route?: (key: string) => string;
}

/**
 * The contract between a store and the middleware, in the package's own terms: a store gives a counter for each
 * spec, may keep the runtime state (bans, grants, grant requests), and says how it fails. The memory and Redis
 * stores keep it themselves; any other store is a factory of rate-limiter-flexible limiters, and the one adapter
 * (`contractOf`) makes its contract.
 */
export interface StoreContract {
  /** Whether `limits()` counts: sliding windows, and several limits on one endpoint. */
  readonly capabilities: { readonly limits: boolean };
  /** The counter of one limit in fixed windows. */
  counter(spec: CounterSpec): StoreCounter<Count>;
  /** The counter of several limits, or of sliding windows, counted all or none. Only with `capabilities.limits`. */
  limits(spec: LimitsSpec): StoreCounter<readonly Count[]>;
  /** Where bans, grants and grant requests made at runtime are kept; undefined for a store that keeps none. */
  readonly state: RuntimeState | undefined;
  /** How the store fails and how long a request waits for it; undefined for a store whose errors are passed on. */
  readonly failure: StoreFailurePolicy | undefined;
  /**
   * Watches, from the start of a middleware, whether the store's client connects, and tells `tell` once when it has
   * not within a few seconds; answers what stops it. Undefined for a store with nothing to connect.
   */
  readonly watchConnection?: (tell: (message: string) => void) => () => void;
}

/** The contracts of the stores this package made, by their public form. */
const contracts = new WeakMap<Store, StoreContract>();

/**
 * The public form of a store whose contract is known: `limiter` makes what calling the store gives (a
 * rate-limiter-flexible limiter), `limits` what its `limits` factory gives, when it has a public one.
 */
export function storeOf(
  contract: StoreContract,
  face: {
    readonly limiter: (spec: CounterSpec) => RateLimiterAbstract;
    readonly limits?: (spec: LimitsSpec) => LimitsCounter;
  },
): Store {
  const { failure, state } = contract;
  const store: Store = Object.assign((spec: CounterSpec) => face.limiter(spec), {
    ...(failure && { failure }),
    ...(state && { state }),
    ...(face.limits && { limits: face.limits }),
  });
  contracts.set(store, contract);
  return store;
}

/** The contract of a store made by {@link storeOf}; undefined for any other. */
export function knownContract(store: Store): StoreContract | undefined {
  return contracts.get(store);
}
