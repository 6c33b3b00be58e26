// One counter as the request path uses it: a hit, a read, a write, whatever limiter keeps it and however it fails.
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { StoreUnavailableError } from './errors.js';
import { type CountsNow, type MemoryCount, MemoryLimiter } from './memory.js';
import type { CounterSpec, StoreFailurePolicy } from './stores.js';

/** A counter's state after a hit: requests in the window, this one included, and when the window ends (epoch ms). */
export type Count = MemoryCount;

function countsNow(limiter: RateLimiterAbstract): limiter is RateLimiterAbstract & CountsNow {
  return (
    (limiter as Partial<CountsNow>).countsNow === true && typeof (limiter as Partial<CountsNow>).countNow === 'function'
  );
}

function fromResult(result: RateLimiterRes): Count {
  return { count: result.consumedPoints, resetAt: Date.now() + Math.max(result.msBeforeNext, 0) };
}

/**
 * The one timer of a request that waits for a store with a failure policy: every store call of the request races
 * it, so the whole request waits at most `timeoutMs`, however many calls it makes.
 */
export class Deadline {
  readonly #at: number;
  #timer: NodeJS.Timeout | undefined;
  #expired: Promise<never> | undefined;

  constructor(timeoutMs: number) {
    this.#at = Date.now() + timeoutMs;
  }

  /** `call`'s result, or a rejection once the request's time is up. */
  race<T>(call: Promise<T>): Promise<T> {
    if (!this.#expired) {
      this.#expired = new Promise<never>((_, reject) => {
        this.#timer = setTimeout(
          () => reject(new Error('the store did not answer in time')),
          Math.max(this.#at - Date.now(), 0),
        );
      });
      // The deadline may pass after the request is answered: nobody waits for it then.
      this.#expired.catch(() => {});
    }
    return Promise.race([call, this.#expired]);
  }

  clear(): void {
    clearTimeout(this.#timer);
  }
}

/**
 * A counter of a store. Hits and reads answer synchronously when the limiter counts synchronously, else through a
 * promise that settles within the request's deadline. A limiter that fails is handled as its store's policy says:
 * counted in memory meanwhile, or a StoreUnavailableError (`open`/`closed`); without a policy, its error is passed on.
 */
export class Counter {
  readonly spec: CounterSpec;
  readonly #limiter: RateLimiterAbstract;
  readonly #policy: StoreFailurePolicy | undefined;
  readonly #fallback: MemoryLimiter | undefined;
  /** The limiter's synchronous count, when it has one. */
  readonly now: ((key: string) => Count) | undefined;

  constructor(spec: CounterSpec, limiter: RateLimiterAbstract, policy: StoreFailurePolicy | undefined) {
    this.spec = spec;
    this.#limiter = limiter;
    this.#policy = policy;
    this.#fallback =
      policy?.onFailure === 'memory'
        ? new MemoryLimiter({ points: spec.limit, duration: spec.windowMs / 1000 })
        : undefined;
    this.now = countsNow(limiter) ? (key) => limiter.countNow(key) : undefined;
  }

  /** Counts one request of `key`. */
  hit(key: string, deadline?: Deadline): Count | Promise<Count> {
    if (this.now) return this.now(key);
    return this.#call(deadline, (limiter) =>
      limiter.consume(key).then(fromResult, (rejection: unknown) => {
        if (rejection instanceof RateLimiterRes) return fromResult(rejection);
        throw rejection;
      }),
    );
  }

  /** The state of `key`'s window, or undefined when it has none. */
  get(key: string, deadline?: Deadline): Promise<Count | undefined> {
    return this.#call(deadline, (limiter) =>
      limiter.get(key).then((result) => (result && result.msBeforeNext > 0 ? fromResult(result) : undefined)),
    );
  }

  /** Sets `key` to `value` for `ms` milliseconds (whole seconds). */
  set(key: string, value: number, ms: number, deadline?: Deadline): Promise<void> {
    return this.#call(deadline, (limiter) => limiter.set(key, value, ms / 1000).then(() => undefined));
  }

  /** Forgets `key`; true when it had a window. */
  delete(key: string, deadline?: Deadline): Promise<boolean> {
    return this.#call(deadline, (limiter) => limiter.delete(key));
  }

  #call<T>(deadline: Deadline | undefined, op: (limiter: RateLimiterAbstract) => Promise<T>): Promise<T> {
    const call = op(this.#limiter);
    const bounded = deadline && this.#policy ? deadline.race(call) : call;
    if (!this.#policy) return bounded;
    return bounded.catch((error: unknown) => {
      if (error instanceof StoreUnavailableError) throw error;
      const policy = this.#policy as StoreFailurePolicy;
      if (this.#fallback) return op(this.#fallback);
      throw new StoreUnavailableError(policy.onFailure as 'open' | 'closed', { cause: error });
    });
  }
}
