// The one adapter of rate-limiter-flexible: a store that is a factory of its limiters, as a store's parts.
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { Checker, show } from '../shared/check.js';
import type { Count, CounterSpec, LimitsCounter, LimitsSpec, Store } from './store.js';
import { type Counter, type Counts, oneLimit, PARTS, type StoreParts } from './counter.js';
import { DEFAULT_FAILURE } from './waiting.js';

const storeCheck: Checker = new Checker('listingLimits');

/** A limit's count where a key has none. */
const NONE: Counts = Object.freeze([Object.freeze({ count: 0, resetAt: 0 })]);

function countsFrom(result: RateLimiterRes): Counts {
  return [{ count: result.consumedPoints, resetAt: Date.now() + Math.max(result.msBeforeNext, 0) }];
}

/**
 * A key's count peeked through `get()`. A count without an expiry (`msBeforeNext` -1) is a Redis window whose first
 * `INCR` has run and whose expiry is on its way: it counts, for a whole window.
 */
export function peekOf(limiter: RateLimiterAbstract, key: string): Promise<Counts> {
  return limiter.get(key).then((result) => {
    if (!result) return NONE;
    if (result.msBeforeNext > 0) return countsFrom(result);
    if (result.msBeforeNext !== -1 || !(result.consumedPoints > 0)) return NONE;
    return [{ count: result.consumedPoints, resetAt: Date.now() + limiter.msDuration }];
  });
}

/**
 * A count through `consume()`. A rejection with a RateLimiterRes is a refusal, counted over the limit even when it
 * says 0 points (a key blocked in memory); any other is the store's failure, for the store's `onFailure`.
 */
function consumed(limiter: RateLimiterAbstract, key: string): Promise<Counts> {
  return limiter.consume(key).then(countsFrom, (rejection: unknown) => {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    const [refused] = countsFrom(rejection) as [Count];
    return [{ count: Math.max(refused.count, limiter.points + 1), resetAt: refused.resetAt }];
  });
}

/** Whether an object is already a counter of this package (its stores' limiters and limits counters are). */
function isCounter(value: object): value is Counter {
  const c = value as Partial<Counter>;
  return typeof c.hit === 'function' && typeof c.now === 'boolean';
}

/** The route a counter declares, kept through its public form (the pages' forms count on the Redis store's). */
function routeOf(counter: object): ((key: string) => string) | undefined {
  const { route } = counter as { route?: unknown };
  return typeof route === 'function' ? (key) => route.call(counter, key) as string : undefined;
}

/** A limiter as a counter: at once with `countNow()` where it declares `countsNow`, else with `consume()`. */
function limiterCounter(limiter: RateLimiterAbstract): Counter {
  if (isCounter(limiter)) return limiter;
  const declared = limiter as RateLimiterAbstract & { countsNow?: unknown; countNow?: (key: string) => Count };
  const now = declared.countsNow === true && typeof declared.countNow === 'function';
  const countNow = declared.countNow as (key: string) => Count;
  return {
    now,
    // An object that only looks like a limiter may not read or forget.
    reads: typeof limiter.get === 'function' && typeof limiter.delete === 'function',
    route: routeOf(limiter),
    hit: now ? (key) => [countNow.call(limiter, key)] : (key) => consumed(limiter, key),
    peek: (key) => peekOf(limiter, key),
    reset: (key) => limiter.delete(key),
  };
}

/** A store's public `limits` counter as a counter, refused at once when it declares no way to count. */
function limitsCounter(counter: LimitsCounter, spec: LimitsSpec): Counter {
  if (isCounter(counter)) return counter;
  const c = counter as Partial<{ countsNow: unknown; countNow: unknown; countsAsync: unknown; count: unknown }>;
  const now = c.countsNow === true && typeof c.countNow === 'function';
  if (!now && !(c.countsAsync === true && typeof c.count === 'function')) {
    storeCheck.invalid(
      'options.store',
      `limits() returned ${show(counter)} for ${spec.name}; it must return a limits counter.`,
    );
  }
  const count = (now ? c.countNow : c.count) as (key: string) => Counts | Promise<Counts>;
  const readable = counter as { peek?(key: string): Counts | Promise<Counts>; reset?(key: string): unknown };
  return {
    now,
    reads: typeof readable.peek === 'function' && typeof readable.reset === 'function',
    route: routeOf(counter),
    hit: (key) => count.call(counter, key),
    peek: (key) => (readable.peek as (key: string) => Counts | Promise<Counts>).call(counter, key),
    reset: (key) => readable.reset?.call(counter, key) as boolean | Promise<boolean>,
  };
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

/** What a limiter cannot count of an endpoint: sliding windows, or several limits. */
function beyondALimiter(spec: LimitsSpec): string {
  return spec.window === 'sliding'
    ? 'sliding windows'
    : `several limits on one endpoint (${spec.name} has ${spec.limits.length})`;
}

/**
 * A store's parts: its own for this package's stores, else those of a factory of limiters, adapted here. A limiter
 * may fail (a database down, a table not created yet): unless the factory says how, it fails as the Redis store does.
 */
export function partsOf(store: Store): StoreParts {
  const own = (store as { [PARTS]?: StoreParts })[PARTS];
  if (own) return own;
  const { limits } = store;
  return {
    counter: (spec) => {
      const one = oneLimit(spec);
      if (one) return limiterCounter(limiterOf(store, one));
      if (typeof limits !== 'function') {
        storeCheck.fail(
          'ERR_UNSUPPORTED_STORE',
          'options.store',
          `cannot count ${beyondALimiter(spec)}: a rate-limiter-flexible limiter counts one fixed window. ` +
            'Use memoryStore() or redisStore(), whose `limits` factory counts them.',
        );
      }
      return limitsCounter(limits(spec), spec);
    },
    state: store.state,
    failure: store.failure ?? DEFAULT_FAILURE,
  };
}
