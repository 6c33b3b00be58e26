// The one adapter between the store contract and a store given as a factory of rate-limiter-flexible limiters.
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { Checker, MAX_DURATION_MS, show } from '../shared/check.js';
import {
  type Count,
  type CounterCapabilities,
  type CounterSpec,
  knownContract,
  type LimitsCounter,
  type LimitsSpec,
  type Store,
  type StoreContract,
  type StoreCounter,
} from './store.js';

/** What a limiter declares when it counts a request at once, in this process (the memory store's do). */
export interface CountsNow {
  readonly countsNow: true;
  /** Counts one request of `key`; the answer may be the live counter, to be read at once. */
  countNow(key: string): Count;
}

/** What a limiter declares when it counts a request in one store command (the Redis store's do). */
export interface CountsAsync {
  readonly countsAsync: true;
  count(key: string): Promise<Count>;
}

const storeCheck: Checker = new Checker('listingLimits');

/** A rate-limiter-flexible result as a count: its consumed points, and when its window ends. */
function countFrom(result: RateLimiterRes): Count {
  return { count: result.consumedPoints, resetAt: Date.now() + Math.max(result.msBeforeNext, 0) };
}

/**
 * A key's count peeked through rate-limiter-flexible's `get()`; undefined once its window has ended. A count without
 * an expiry (`msBeforeNext` -1) is a window being opened: the Redis store's first hit of a window has run its `INCR`,
 * and the expiry it gives the key is on its way (or the next hit gives it, when a client stopped first). It counts,
 * for a whole window, so that no read between a window's first `INCR` and its expiry takes the count for none.
 */
export function peekOf(limiter: RateLimiterAbstract, key: string): Promise<Count | undefined> {
  return limiter.get(key).then((result) => {
    if (!result) return undefined;
    if (result.msBeforeNext > 0) return countFrom(result);
    if (result.msBeforeNext !== -1 || !(result.consumedPoints > 0)) return undefined;
    return { count: result.consumedPoints, resetAt: Date.now() + limiter.msDuration };
  });
}

/** A Redis store's hit: one more request on a key, answering its count and the ms left of its window. */
export type Hit = (key: string, seconds: number) => Promise<[unknown, unknown]>;

/**
 * The milliseconds a window has left, as a store answered them, within what the package gives anything (a window, a
 * ban, a `block()`): at most a year, so that the times the headers carry stay small whatever another program left in
 * the store; a time that is none counts as the whole window.
 */
export function msLeftOf(answered: number, windowMs: number): number {
  return answered >= 0 ? Math.min(answered, MAX_DURATION_MS) : windowMs;
}

/** A key's count after one hit of a Redis store. */
export function hitOf(hits: Hit, key: string, seconds: number): Promise<Count> {
  return hits(key, seconds).then(([count, ttl]) => ({
    count: Number(count),
    resetAt: Date.now() + msLeftOf(Number(ttl), seconds * 1000),
  }));
}

/** A count through rate-limiter-flexible's `consume()`: resolved, or rejected with the result over the limit. */
function consumed(limiter: RateLimiterAbstract, key: string): Promise<Count> {
  return limiter.consume(key).then(countFrom, (rejection: unknown) => {
    if (rejection instanceof RateLimiterRes) return countFrom(rejection);
    throw rejection;
  });
}

/**
 * A rate-limiter-flexible limiter as a counter of the contract. It counts as the limiter declares: at once with
 * `countNow()` (`countsNow: true`), in one command with `count()` (`countsAsync: true`), else with `consume()`.
 */
class LimiterCounter implements StoreCounter<Count> {
  readonly capabilities: CounterCapabilities;
  readonly count: (key: string) => Count | Promise<Count>;
  readonly route: ((key: string) => string) | undefined;

  constructor(private readonly limiter: RateLimiterAbstract) {
    const declared = limiter as RateLimiterAbstract & Partial<CountsNow & CountsAsync & Routed>;
    this.route = routeOf(declared);
    const countsNow = declared.countsNow === true && typeof declared.countNow === 'function';
    const countsAsync = declared.countsAsync === true && typeof declared.count === 'function';
    // Every rate-limiter-flexible limiter reads and forgets; an object that only looks like one may not.
    this.capabilities = { countsNow, reads: typeof limiter.get === 'function' && typeof limiter.delete === 'function' };
    if (countsNow) this.count = (key) => (declared as CountsNow).countNow(key);
    else if (countsAsync) this.count = (key) => (declared as CountsAsync).count(key);
    else this.count = (key) => consumed(limiter, key);
  }

  peek(key: string): Promise<Count | undefined> {
    return peekOf(this.limiter, key);
  }

  reset(key: string): Promise<boolean> {
    return this.limiter.delete(key);
  }
}

/** Asks the store for a limiter, refusing at once a store that gives no rate-limiter-flexible limiter. */
function limiterOf(store: Store, spec: CounterSpec): RateLimiterAbstract {
  const limiter = store(spec);
  if (typeof limiter !== 'object' || limiter === null || typeof limiter.consume !== 'function') {
    storeCheck.invalid(
      'options.store',
      `returned ${show(limiter)} for ${spec.name}; a store must return a rate-limiter-flexible limiter.`,
    );
  }
  return limiter;
}

/** What a counter of the Redis store declares: which part of the store holds a key (see `StoreCounter.route`). */
interface Routed {
  readonly route: ((key: string) => string) | undefined;
}

/** The route a counter declares, kept through its public form (the pages' forms count on the Redis store's). */
function routeOf(counter: Partial<Routed>): ((key: string) => string) | undefined {
  const { route } = counter;
  return typeof route === 'function' ? (key) => route.call(counter, key) : undefined;
}

/** A store's public `limits` counter as a counter of the contract, refused at once when it declares no count. */
function limitsCounterOf(counter: LimitsCounter, spec: LimitsSpec): StoreCounter<readonly Count[]> {
  const c = counter as Partial<{ countsNow: unknown; countNow: unknown; countsAsync: unknown; count: unknown }>;
  const countsNow = c.countsNow === true && typeof c.countNow === 'function';
  if (!countsNow && !(c.countsAsync === true && typeof c.count === 'function')) {
    storeCheck.invalid(
      'options.store',
      `limits() returned ${show(counter)} for ${spec.name}; it must return a limits counter.`,
    );
  }
  const reads = typeof counter.peek === 'function' && typeof counter.reset === 'function';
  const readable = counter as LimitsCounter & {
    peek(key: string): readonly Count[] | Promise<readonly Count[]>;
    reset(key: string): boolean | Promise<boolean>;
  };
  return {
    capabilities: { countsNow, reads },
    count: countsNow
      ? (key) => (counter as Extract<LimitsCounter, { countsNow: true }>).countNow(key)
      : (key) => (counter as Extract<LimitsCounter, { countsAsync: true }>).count(key),
    peek: (key) => readable.peek(key),
    reset: (key) => readable.reset(key),
    route: routeOf(counter as Partial<Routed>),
  };
}

/**
 * The contract of a store: the package's own stores keep theirs; any other store, a factory of rate-limiter-flexible
 * limiters with what it declares (`failure`, `state`, a `limits` factory), is adapted here.
 */
export function contractOf(store: Store): StoreContract {
  const known = knownContract(store);
  if (known) return known;
  const { limits } = store;
  return {
    capabilities: { limits: typeof limits === 'function' },
    counter: (spec) => new LimiterCounter(limiterOf(store, spec)),
    limits: (spec) => limitsCounterOf((limits as NonNullable<typeof limits>)(spec), spec),
    state: store.state,
    failure: store.failure,
  };
}
