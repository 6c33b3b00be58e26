// A counter of a shared store as a request waits for it: remembered refusals, the deadline, the breaker, the fallback.
import { StoreUnavailableError } from '../shared/errors.js';
import type { Count, LimitsSpec } from './store.js';
import type { CallBound } from './call-bound.js';
import type { Counter, Counts } from './counter.js';
import { AFTER_DEADLINE, BREAKER_OPEN, type Deadline, TIMED_OUT, type Waiting } from './waiting.js';

/** Refusals a counter remembers at the most; the oldest are forgotten first beyond that. */
export const REMEMBERED_REFUSALS = 10_000;

interface Refusal {
  readonly answer: Counts;
  readonly until: number;
}

/** A call's answer for `key` as a promise, whether it answers at once or not; what it throws, a rejection. */
function promised<T>(call: (key: string) => T | Promise<T>, key: string): Promise<T> {
  try {
    const answer = call(key);
    return answer instanceof Promise ? answer : Promise.resolve(answer);
  } catch (error) {
    return Promise.reject(error as Error);
  }
}

/** The refusal to remember of an answer, each refusing limit at `limit + 1`; undefined when it allowed the request. */
function refusalOf(spec: LimitsSpec, answer: Counts): Refusal | undefined {
  let until = 0;
  let refused = answer;
  for (let i = 0; i < answer.length; i++) {
    const { count, resetAt } = answer[i] as Count;
    const limit = spec.limits[i]?.limit ?? Infinity;
    if (count <= limit) continue;
    // Refused until every limit that refused it frees a request.
    until = Math.max(until, resetAt);
    if (count > limit + 1) refused = refused.map((c, at) => (at === i ? { count: limit + 1, resetAt } : c));
  }
  return until > 0 ? { answer: refused, until } : undefined;
}

/** A copy of a memory counter's live answer: requests that fall back in one turn must each read their own count. */
function copied(answer: Counts): Counts {
  return answer.map(({ count, resetAt }) => ({ count, resetAt }));
}

/**
 * A shared store's counter: its refusals answered from here until their window ends, at no command. With `waiting`,
 * calls race the deadline and the breaker; a failure counts on `fallback` or rejects with a StoreUnavailableError.
 */
export class Resilient implements Counter {
  readonly now: boolean;
  readonly reads: boolean;
  readonly #refused = new Map<string, Refusal>();
  readonly #hits = (key: string) => this.store.hit(key);
  readonly #peeks = (key: string) => this.store.peek(key);

  constructor(
    readonly spec: LimitsSpec,
    readonly store: Counter,
    private readonly waiting: Waiting | undefined,
    readonly fallback: Counter | undefined,
  ) {
    this.now = store.now;
    this.reads = store.reads;
  }

  hit(key: string, deadline?: Deadline): Counts | Promise<Counts> {
    if (this.now) return this.store.hit(key);
    const refused = this.#remembered(key);
    if (refused !== undefined) return refused;
    return this.#call(key, deadline, true);
  }

  /** `key`'s counts without counting it, within the request's deadline. */
  peek(key: string, deadline?: Deadline): Promise<Counts> {
    return this.#call(key, deadline, false);
  }

  /** Forgets `key` here, in the fallback and in the store. */
  reset(key: string): boolean | Promise<boolean> {
    this.forget(key);
    void this.fallback?.reset(key);
    return this.store.reset(key);
  }

  get refusals(): number {
    return this.#refused.size;
  }

  /** Forgets the refusal remembered for `key`: the store's count of it was cleared, here or by another instance. */
  forget(key: string): void {
    this.#refused.delete(key);
    this.store.forget?.(key);
  }

  #remembered(key: string): Counts | undefined {
    const refusal = this.#refused.get(key);
    if (refusal === undefined) return undefined;
    if (refusal.until > Date.now()) return refusal.answer;
    this.#refused.delete(key);
    return undefined;
  }

  #remember(key: string, refusal: Refusal): void {
    const refused = this.#refused;
    if (refused.size >= REMEMBERED_REFUSALS && !refused.has(key)) {
      refused.delete(refused.keys().next().value as string);
    }
    refused.set(key, refusal);
  }

  /** A hit (or a peek) within the deadline and the breaker, then a hit's refusal kept, in one step each. */
  #call(key: string, deadline: Deadline | undefined, hit: boolean): Promise<Counts> {
    const { waiting } = this;
    if (!waiting) return promised(hit ? this.#hits : this.#peeks, key).then((answer) => this.#kept(key, hit, answer));
    const route = this.store.route?.(key) ?? '';
    let answer: Promise<Counts>;
    if (deadline?.expired) answer = Promise.reject(AFTER_DEADLINE);
    else if (!waiting.allow(route)) answer = Promise.reject(BREAKER_OPEN);
    else {
      answer = promised(hit ? this.#hits : this.#peeks, key);
      if (deadline) answer = deadline.race(answer);
    }
    // Two closures a call, the fewest a request's answer can wait with: its key and route are the call's own.
    return answer.then(
      (value) => {
        waiting.succeeded(route);
        return this.#kept(key, hit, value);
      },
      (error: unknown) => {
        if (error === TIMED_OUT) waiting.failed(route);
        if (error instanceof StoreUnavailableError) throw error;
        const { fallback } = this;
        if (fallback === undefined)
          throw new StoreUnavailableError(waiting.onFailure as 'open' | 'closed', { cause: error });
        return hit ? this.#kept(key, hit, copied(fallback.hit(key) as Counts)) : fallback.peek(key);
      },
    );
  }

  /** A hit's answer, its refusal remembered. */
  #kept(key: string, hit: boolean, answer: Counts): Counts {
    const refusal = hit ? refusalOf(this.spec, answer) : undefined;
    if (refusal !== undefined) this.#remember(key, refusal);
    return answer;
  }
}

/** `key`'s counts for an operator's call: from the store itself, never its fallback, within the call's bound. */
export function peekWithin(counter: Counter, key: string, bound: CallBound): Promise<Counts> {
  const store = counter instanceof Resilient ? counter.store : counter;
  return bound.race(promised((k) => store.peek(k), key));
}

/** Forgets `key` for an operator's call, with its remembered refusal and its fallback's count, within the bound. */
export function resetWithin(counter: Counter, key: string, bound: CallBound): Promise<boolean> {
  return bound.race(promised((k) => counter.reset(k), key));
}
