// One counter as the request path uses it: a hit, a read, a write, whatever limiter keeps it and however it fails.
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { StoreUnavailableError } from './errors.js';
import { type CountsNow, type MemoryCount, MemoryLimiter } from './memory.js';
import type { CounterSpec } from './stores.js';
import { BREAKER_OPEN, type Deadline, PASSED, TIMED_OUT, type Waiting } from './waiting.js';

/** A counter's state after a hit: requests in the window, this one included, and when the window ends (epoch ms). */
export type Count = MemoryCount;

/** A limiter that counts a hit in one store command declares it (the Redis store's does): `count(key)`. */
export interface CountsAsync {
  readonly countsAsync: true;
  count(key: string): Promise<Count>;
}

function countsNow(limiter: RateLimiterAbstract): limiter is RateLimiterAbstract & CountsNow {
  const l = limiter as Partial<CountsNow>;
  return l.countsNow === true && typeof l.countNow === 'function';
}

function countsAsync(limiter: RateLimiterAbstract): limiter is RateLimiterAbstract & CountsAsync {
  const l = limiter as Partial<CountsAsync>;
  return l.countsAsync === true && typeof l.count === 'function';
}

function fromResult(result: RateLimiterRes): Count {
  return { count: result.consumedPoints, resetAt: Date.now() + Math.max(result.msBeforeNext, 0) };
}

/** Refusals a counter remembers at the most; the oldest are forgotten first beyond that. */
export const REMEMBERED_REFUSALS = 10_000;

/**
 * A counter of a store. Hits answer synchronously when the limiter counts synchronously (the memory store), or when
 * the store has already said that this key is over its limit until its window ends: that refusal is remembered
 * (at most REMEMBERED_REFUSALS keys), so a client over its limit costs the store no command for the rest of the
 * window. Other calls go to the store through a promise that settles within the request's deadline. A store with a
 * failure policy that fails (or whose breaker is open) is handled as the policy says: counted in this process's
 * memory meanwhile, or a StoreUnavailableError (`open`/`closed`); without a policy, its error is passed on.
 */
export class Counter {
  readonly spec: CounterSpec;
  readonly #limiter: RateLimiterAbstract;
  readonly #waiting: Waiting | undefined;
  readonly #fallback: MemoryLimiter | undefined;
  /** The limiter's synchronous count, when it has one. */
  readonly now: ((key: string) => Count) | undefined;
  readonly #count: (key: string) => Promise<Count>;
  /** Key → end of the window in which the store said it is over the limit. */
  readonly #refused = new Map<string, number>();

  constructor(spec: CounterSpec, limiter: RateLimiterAbstract, waiting: Waiting | undefined) {
    this.spec = spec;
    this.#limiter = limiter;
    this.#waiting = waiting;
    this.#fallback =
      waiting?.onFailure === 'memory'
        ? new MemoryLimiter({ points: spec.limit, duration: spec.windowMs / 1000 })
        : undefined;
    this.now = countsNow(limiter) ? (key) => limiter.countNow(key) : undefined;
    this.#count = countsAsync(limiter) ? (key) => limiter.count(key) : (key) => consumed(limiter, key);
  }

  /** Counts one request of `key`. */
  hit(key: string, deadline?: Deadline): Count | Promise<Count> {
    if (this.now) return this.now(key);
    const until = this.#refused.get(key);
    if (until !== undefined) {
      if (until > Date.now()) return { count: this.spec.limit + 1, resetAt: until };
      this.#refused.delete(key);
    }
    return this.#call(
      deadline,
      () => this.#count(key),
      (fallback) => consumed(fallback, key),
    ).then((count) => {
      if (count.count > this.spec.limit) this.#remember(key, count.resetAt);
      return count;
    });
  }

  #remember(key: string, until: number): void {
    const refused = this.#refused;
    if (refused.size >= REMEMBERED_REFUSALS && !refused.has(key)) {
      refused.delete(refused.keys().next().value as string);
    }
    refused.set(key, until);
  }

  /** How many keys this counter remembers as refused. */
  get refusals(): number {
    return this.#refused.size;
  }

  /** The state of `key`'s window, or undefined when it has none. */
  get(key: string, deadline?: Deadline): Promise<Count | undefined> {
    const read = (limiter: RateLimiterAbstract) =>
      limiter.get(key).then((result) => (result && result.msBeforeNext > 0 ? fromResult(result) : undefined));
    return this.#call(deadline, () => read(this.#limiter), read);
  }

  /** Sets `key` to `value` for `ms` milliseconds (whole seconds). */
  set(key: string, value: number, ms: number, deadline?: Deadline): Promise<void> {
    const write = (limiter: RateLimiterAbstract) => limiter.set(key, value, ms / 1000).then(() => undefined);
    return this.#call(deadline, () => write(this.#limiter), write);
  }

  /** Forgets `key`, and its remembered refusal; true when it had a window. */
  delete(key: string, deadline?: Deadline): Promise<boolean> {
    this.#refused.delete(key);
    return this.#call(
      deadline,
      () => this.#limiter.delete(key),
      (fallback) => fallback.delete(key),
    );
  }

  #call<T>(
    deadline: Deadline | undefined,
    call: () => Promise<T>,
    fallback: (limiter: MemoryLimiter) => Promise<T>,
  ): Promise<T> {
    const waiting = this.#waiting;
    if (!waiting) return call();
    let answer: Promise<T>;
    if (deadline?.expired) answer = Promise.reject(PASSED);
    else if (!waiting.allow()) answer = Promise.reject(BREAKER_OPEN);
    else {
      answer = (deadline ? deadline.race(call()) : call()).then((value) => {
        waiting.succeeded();
        return value;
      });
    }
    return answer.catch((error: unknown) => {
      if (error === TIMED_OUT) waiting.failed();
      if (error instanceof StoreUnavailableError) throw error;
      if (this.#fallback) return fallback(this.#fallback);
      throw new StoreUnavailableError(waiting.onFailure as 'open' | 'closed', { cause: error });
    });
  }
}

/** A hit through rate-limiter-flexible's `consume()`: resolved, or rejected with the result over the limit. */
function consumed(limiter: RateLimiterAbstract, key: string): Promise<Count> {
  return limiter.consume(key).then(fromResult, (rejection: unknown) => {
    if (rejection instanceof RateLimiterRes) return fromResult(rejection);
    throw rejection;
  });
}
