// One counter as the request path uses it: a hit, a read, a write, whatever limiter keeps it and however it fails.
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { StoreUnavailableError } from '../shared/errors.js';
import { type CountsNow, MemoryLimiter } from './memory/limiter.js';
import type { CounterSpec } from './store.js';
import { BREAKER_OPEN, type Deadline, PASSED, TIMED_OUT, type Waiting } from './waiting.js';
import { type Limit } from '../contract/limit.js';
import { type Count, type LimitsCounter, type LimitsSpec } from './limits.js';
import { MemoryLimits } from './memory/windows.js';

export type { Count };

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
 * The answers a shared store gave to keys over their limit, kept until the time each stays refused (`untilOf` the
 * answer): until then the key is refused from here, at no store command.
 */
class Refusals<T> {
  readonly #refused = new Map<string, T>();

  constructor(private readonly untilOf: (answer: T) => number) {}

  /** The remembered answer for `key`, while it holds. */
  get(key: string): T | undefined {
    const answer = this.#refused.get(key);
    if (answer === undefined) return undefined;
    if (this.untilOf(answer) > Date.now()) return answer;
    this.#refused.delete(key);
    return undefined;
  }

  remember(key: string, answer: T): void {
    const refused = this.#refused;
    if (refused.size >= REMEMBERED_REFUSALS && !refused.has(key)) {
      refused.delete(refused.keys().next().value as string);
    }
    refused.set(key, answer);
  }

  forget(key: string): void {
    this.#refused.delete(key);
  }

  get size(): number {
    return this.#refused.size;
  }
}

/**
 * Runs one call of a store with a failure policy within the request's deadline: when the store fails (or its breaker
 * is open), the call is made on the memory fallback, or a StoreUnavailableError tells the policy (`open`/`closed`).
 * Without a policy, the store's error is passed on.
 */
function within<T, F>(
  waiting: Waiting | undefined,
  deadline: Deadline | undefined,
  fallback: F | undefined,
  call: () => Promise<T>,
  onFallback: (fallback: F) => T | Promise<T>,
): Promise<T> {
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
    if (fallback !== undefined) return onFallback(fallback);
    throw new StoreUnavailableError(waiting.onFailure as 'open' | 'closed', { cause: error });
  });
}

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
  readonly #refused = new Refusals<Count>((count) => count.resetAt);

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
    const refused = this.#refused.get(key);
    if (refused !== undefined) return refused;
    return this.#call(
      deadline,
      () => this.#count(key),
      (fallback) => consumed(fallback, key),
    ).then((count) => {
      if (count.count > this.spec.limit) {
        this.#refused.remember(key, { count: this.spec.limit + 1, resetAt: count.resetAt });
      }
      return count;
    });
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

  /** Whether the limiter can read a key without counting and forget it (every rate-limiter-flexible limiter can). */
  get readable(): boolean {
    const l = this.#limiter as Partial<RateLimiterAbstract>;
    return typeof l.get === 'function' && typeof l.delete === 'function';
  }

  /** Forgets the refusal remembered for `key`: the store's count of it was cleared, here or by another instance. */
  forget(key: string): void {
    this.#refused.forget(key);
  }

  /** Forgets `key`, and its remembered refusal; true when it had a window. */
  delete(key: string, deadline?: Deadline): Promise<boolean> {
    this.#refused.forget(key);
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
    return within(this.#waiting, deadline, this.#fallback, call, fallback);
  }
}

/** A hit through rate-limiter-flexible's `consume()`: resolved, or rejected with the result over the limit. */
function consumed(limiter: RateLimiterAbstract, key: string): Promise<Count> {
  return limiter.consume(key).then(fromResult, (rejection: unknown) => {
    if (rejection instanceof RateLimiterRes) return fromResult(rejection);
    throw rejection;
  });
}

/**
 * The counter of an endpoint that a store's `limits` factory keeps (sliding windows, or several limits): a hit counts
 * on every limit or on none, and answers each limit's state in order. Refusals are remembered, and a failing store
 * handled, as {@link Counter} does.
 */
export class Limits {
  readonly spec: LimitsSpec;
  readonly #store: LimitsCounter;
  readonly #waiting: Waiting | undefined;
  readonly #fallback: MemoryLimits | undefined;
  /** The store's synchronous count, when it has one. */
  readonly now: ((key: string) => readonly Count[]) | undefined;
  readonly #refused = new Refusals<{ readonly counts: readonly Count[]; readonly until: number }>((r) => r.until);

  constructor(spec: LimitsSpec, store: LimitsCounter, waiting: Waiting | undefined) {
    this.spec = spec;
    this.#store = store;
    this.#waiting = waiting;
    this.#fallback = waiting?.onFailure === 'memory' ? new MemoryLimits(spec) : undefined;
    this.now = 'countsNow' in store ? (key) => store.countNow(key) : undefined;
  }

  /** Counts one request of `key` on every limit, or on none when one refuses it. */
  hit(key: string, deadline?: Deadline): readonly Count[] | Promise<readonly Count[]> {
    if (this.now) return this.now(key);
    const refused = this.#refused.get(key);
    if (refused !== undefined) return refused.counts;
    const store = this.#store as Extract<LimitsCounter, { countsAsync: true }>;
    return within(
      this.#waiting,
      deadline,
      this.#fallback,
      () => store.count(key),
      // A copy of the memory fallback's live state, taken at once: the requests whose deadlines end together fall
      // back in one turn, and each must read its own count, not the last one's.
      (fallback) => fallback.countNow(key).map(({ count, resetAt }) => ({ count, resetAt })),
    ).then((counts) => {
      // Refused until every limit that refused it frees a request.
      let until = 0;
      counts.forEach((count, i) => {
        if (count.count > (this.spec.limits[i] as Limit).limit) until = Math.max(until, count.resetAt);
      });
      if (until > 0) this.#refused.remember(key, { counts, until });
      return counts;
    });
  }

  /** How many keys this counter remembers as refused. */
  get refusals(): number {
    return this.#refused.size;
  }

  /** Whether the store's counter can read a key without counting and forget it. */
  get readable(): boolean {
    return typeof this.#store.peek === 'function' && typeof this.#store.reset === 'function';
  }

  /** Each limit's state for `key`, read without counting (a count of 0 for a limit with none counted). */
  get(key: string): Promise<readonly Count[]> {
    const store = this.#store as { peek(key: string): readonly Count[] | Promise<readonly Count[]> };
    return within(
      this.#waiting,
      undefined,
      this.#fallback,
      () => Promise.resolve().then(() => store.peek(key)),
      (fallback) => fallback.peek(key),
    );
  }

  /** Forgets `key` on every limit, and its remembered refusal; true when it had a request counted. */
  delete(key: string): Promise<boolean> {
    this.#refused.forget(key);
    const store = this.#store as { reset(key: string): boolean | Promise<boolean> };
    return within(
      this.#waiting,
      undefined,
      this.#fallback,
      () => Promise.resolve().then(() => store.reset(key)),
      (fallback) => fallback.reset(key),
    );
  }

  forget(key: string): void {
    this.#refused.forget(key);
  }
}
