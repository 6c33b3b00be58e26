// One counter as the middleware counts with it: count, peek and reset, whatever store keeps it and however it fails.
import { StoreUnavailableError } from '../shared/errors.js';
import type { Count, CountAnswer, CounterSpec, LimitsSpec, StoreCounter } from './store.js';
import type { CallBound } from './call-bound.js';
import { AFTER_DEADLINE, BREAKER_OPEN, type Deadline, TIMED_OUT, type Waiting } from './waiting.js';
import { type Limit } from '../contract/limit.js';

/** Refusals a counter remembers at the most; the oldest are forgotten first beyond that. */
export const REMEMBERED_REFUSALS = 10_000;

/** A refusal remembered: the answer to give, and until when. */
interface Refusal<A> {
  readonly answer: A;
  readonly until: number;
}

/**
 * The answers a shared store gave to keys over their limit, kept until the time each stays refused: until then the
 * key is refused from here, at no store command.
 */
class Refusals<A> {
  readonly #refused = new Map<string, Refusal<A>>();

  /** The remembered answer for `key`, while it holds. */
  get(key: string): A | undefined {
    const refusal = this.#refused.get(key);
    if (refusal === undefined) return undefined;
    if (refusal.until > Date.now()) return refusal.answer;
    this.#refused.delete(key);
    return undefined;
  }

  remember(key: string, refusal: Refusal<A>): void {
    const refused = this.#refused;
    if (refused.size >= REMEMBERED_REFUSALS && !refused.has(key)) {
      refused.delete(refused.keys().next().value as string);
    }
    refused.set(key, refusal);
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
  route: string,
): Promise<T> {
  if (!waiting) return call();
  let answer: Promise<T>;
  if (deadline?.expired) answer = Promise.reject(AFTER_DEADLINE);
  else if (!waiting.allow(route)) answer = Promise.reject(BREAKER_OPEN);
  else {
    answer = (deadline ? deadline.race(call()) : call()).then((value) => {
      waiting.succeeded(route);
      return value;
    });
  }
  return answer.catch((error: unknown) => {
    if (error === TIMED_OUT) waiting.failed(route);
    if (error instanceof StoreUnavailableError) throw error;
    if (fallback !== undefined) return onFallback(fallback);
    throw new StoreUnavailableError(waiting.onFailure as 'open' | 'closed', { cause: error });
  });
}

/** A call's answer as a promise, whether it answers at once or not; what it throws, a rejection. */
function promised<T>(call: () => T | Promise<T>): Promise<T> {
  try {
    const answer = call();
    return answer instanceof Promise ? answer : Promise.resolve(answer);
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/** The refusal to remember of an answer, or undefined for an answer that allowed the request. */
function refusalOf(spec: CounterSpec | LimitsSpec, answer: CountAnswer): Refusal<CountAnswer> | undefined {
  if (!Array.isArray(answer)) {
    const { count, resetAt } = answer as Count;
    const { limit } = spec as CounterSpec;
    return count > limit ? { answer: { count: limit + 1, resetAt }, until: resetAt } : undefined;
  }
  // Refused until every limit that refused it frees a request.
  let until = 0;
  answer.forEach((count: Count, i) => {
    if (count.count > ((spec as LimitsSpec).limits[i] as Limit).limit) until = Math.max(until, count.resetAt);
  });
  return until > 0 ? { answer, until } : undefined;
}

/**
 * A copy of a memory counter's live answer, taken at once: the requests whose deadlines end together fall back in
 * one turn, and each must read its own count, not the last one's.
 */
function copied(answer: CountAnswer): CountAnswer {
  if (Array.isArray(answer)) return answer.map(({ count, resetAt }: Count) => ({ count, resetAt }));
  const { count, resetAt } = answer as Count;
  return { count, resetAt };
}

/**
 * A counter of a store: one limit in fixed windows (its answer a `Count`), or several limits, or sliding windows
 * (each limit's `Count` in order). Counts answer synchronously when the store's counter counts now (the memory store),
 * or when the store has already said that this key is over its limit until its window ends: that refusal is
 * remembered (at most REMEMBERED_REFUSALS keys), so a client over its limit costs the store no command for the rest
 * of the window. Other calls go to the store through a promise that settles within the request's deadline. A store
 * with a failure policy that fails (or whose breaker is open) is handled as the policy says: counted in this
 * process's memory meanwhile, or a StoreUnavailableError (`open`/`closed`); without a policy, its error is passed on.
 */
export class Counter<A extends CountAnswer = CountAnswer> {
  readonly spec: CounterSpec | LimitsSpec;
  readonly #store: StoreCounter<A>;
  readonly #waiting: Waiting | undefined;
  readonly #fallback: StoreCounter<A> | undefined;
  /** Whether the store's counter counts now, in this process: counts answer at once. */
  readonly countsNow: boolean;
  readonly #refused = new Refusals<A>();

  constructor(spec: CounterSpec | LimitsSpec, store: StoreCounter<A>, waiting: Waiting | undefined) {
    this.spec = spec;
    this.#store = store;
    this.#waiting = waiting;
    this.#fallback = waiting?.fallback?.(spec) as StoreCounter<A> | undefined;
    this.countsNow = store.capabilities.countsNow;
  }

  /** Counts one request of `key`: on every limit, or on none when one refuses it. */
  count(key: string, deadline?: Deadline): A | Promise<A> {
    if (this.countsNow) return this.#store.count(key) as A;
    const refused = this.#refused.get(key);
    if (refused !== undefined) return refused;
    return this.#call(
      key,
      deadline,
      () => this.#store.count(key) as Promise<A>,
      (fallback) => copied(fallback.count(key) as A) as A,
    ).then((answer) => {
      const refusal = refusalOf(this.spec, answer);
      if (refusal !== undefined) this.#refused.remember(key, refusal as Refusal<A>);
      return answer;
    });
  }

  /** How many keys this counter remembers as refused. */
  get refusals(): number {
    return this.#refused.size;
  }

  /** Whether the store's counter can read a key without counting (`peek`) and forget it (`reset`). */
  get reads(): boolean {
    return this.#store.capabilities.reads;
  }

  /**
   * `key`'s state, read without counting: undefined (a counter of one limit) or counts of 0 (several) when it has
   * none.
   */
  peek(key: string, deadline?: Deadline): Promise<A | undefined> {
    return this.#call(
      key,
      deadline,
      () => promised(() => this.#store.peek(key)),
      (fallback) => fallback.peek(key),
    );
  }

  /** Forgets the refusal remembered for `key`: the store's count of it was cleared, here or by another instance. */
  forgetRefusal(key: string): void {
    this.#refused.forget(key);
  }

  /**
   * `key`'s state for an operator's call (`usage()`): read from the store itself, never from the fallback, within the
   * call's bound.
   */
  peekWithin(key: string, bound: CallBound): Promise<A | undefined> {
    return bound.race(promised(() => this.#store.peek(key)));
  }

  /**
   * Forgets `key` for an operator's call (`reset()`, `unban()`), and its remembered refusal: in the store itself and
   * in the fallback, within the call's bound. True when the store had a request counted.
   */
  resetWithin(key: string, bound: CallBound): Promise<boolean> {
    this.#refused.forget(key);
    void this.#fallback?.reset(key);
    return bound.race(promised(() => this.#store.reset(key)));
  }

  #call<T>(
    key: string,
    deadline: Deadline | undefined,
    call: () => Promise<T>,
    fallback: (counter: StoreCounter<A>) => T | Promise<T>,
  ): Promise<T> {
    return within(this.#waiting, deadline, this.#fallback, call, fallback, this.#store.route?.(key) ?? '');
  }
}
