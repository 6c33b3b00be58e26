// How long an operator's call waits for a store: one deadline for the whole call, and what it rejects with past it.
import { AsyncLocalStorage } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { ListingLimitsError } from '../shared/errors.js';

/** The bound of an operator's call when the store does not say (a custom store): two seconds. */
export const DEFAULT_CALL_TIMEOUT_MS = 2000;

/** A store's answer to a change it got after the call's `applyBy`: refused whole, so nothing changed. */
export class TooLate extends Error {
  constructor() {
    super('listing-limits: the store took the change after its time had passed, and refused it');
    this.name = 'TooLate';
  }
}

const NOTHING = 'Nothing of this call was changed: try again once it answers.';

/**
 * The deadline of one operator's call: it settles within `ms` or rejects with `ERR_STORE_UNAVAILABLE`. Its changes
 * must reach the store by `applyBy` (three quarters of `ms`), so that a call that rejected changed nothing.
 */
export class CallBound {
  /** When the store must have taken a change of the call (`performance.now()`). */
  readonly applyBy: number | undefined;
  readonly #end: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #waiting = new Set<(error: Error) => void>();

  constructor(
    /** The call, as its errors name it: `limits.ban`. */
    readonly source: string,
    readonly ms: number | undefined,
  ) {
    const now = performance.now();
    this.#end = ms === undefined ? Infinity : now + ms;
    this.applyBy = ms === undefined ? undefined : now + Math.floor((ms * 3) / 4);
  }

  /** `call`'s answer, or `ERR_STORE_UNAVAILABLE`; `late` gets an answer that came after the call rejected. */
  race<T>(call: Promise<T>, late?: (value: T) => void): Promise<T> {
    if (this.ms === undefined) return call;
    const remaining = this.#end - performance.now();
    if (remaining <= 0) {
      call.then(late, () => {});
      return Promise.reject(this.#timedOut());
    }
    // One timer while a store call waits; none once none does.
    this.#timer ??= setTimeout(() => setImmediate(() => this.#expire()), remaining);
    this.#timer.unref?.();
    return new Promise<T>((resolve, reject) => {
      let waiting = true;
      const timedOut = (error: Error) => {
        waiting = false;
        reject(error);
      };
      const settled = () => {
        this.#waiting.delete(timedOut);
        if (this.#waiting.size > 0) return;
        clearTimeout(this.#timer);
        this.#timer = undefined;
      };
      this.#waiting.add(timedOut);
      call.then(
        (value) => {
          settled();
          if (waiting) resolve(value);
          else late?.(value);
        },
        (error: unknown) => {
          settled();
          reject(this.#failed(error));
        },
      );
    });
  }

  #expire(): void {
    if (!this.#timer) return;
    this.#timer = undefined;
    const error = this.#timedOut();
    for (const reject of this.#waiting) reject(error);
    this.#waiting.clear();
  }

  #timedOut(): ListingLimitsError {
    return this.#unavailable(`did not answer within ${this.ms} ms (its callTimeoutMs). ${NOTHING}`);
  }

  /** A store's failure as the call's; the package's own errors (a bad argument) as they are. */
  #failed(error: unknown): unknown {
    if (error instanceof ListingLimitsError) return error;
    if (error instanceof TooLate) {
      return this.#unavailable(
        `took a change after three quarters of ${this.ms} ms (its callTimeoutMs), and refused it. ${NOTHING}`,
      );
    }
    const why = error instanceof Error ? error.message : String(error);
    return this.#unavailable(`failed (${why}). ${NOTHING}`, error);
  }

  #unavailable(message: string, cause?: unknown): ListingLimitsError {
    return new ListingLimitsError('ERR_STORE_UNAVAILABLE', 'options.store', message, this.source, { cause });
  }
}

/** The bound of the call under way, so that the calls it makes (a page's load, a decision's grant) share it. */
const current = new AsyncLocalStorage<CallBound>();

/** Runs an operator's call within its bound, or within the bound of the call under way (a page's load). */
export function bounded<T>(source: string, ms: number | undefined, run: (bound: CallBound) => Promise<T>): Promise<T> {
  const outer = current.getStore();
  if (outer) return run(outer);
  const bound = new CallBound(source, ms);
  return current.run(bound, () => run(bound));
}

/** Runs `next` (the rest of a page's handling) within one bound for every store call it makes. */
export function withBound(source: string, ms: number | undefined, next: () => void): void {
  current.run(new CallBound(source, ms), next);
}
