// How long requests wait for a store that can fail: a deadline per request, one timer for all, and a breaker.
import { performance } from 'node:perf_hooks';
import type { StoreFailurePolicy } from './store.js';
import { DEFAULT_CALL_TIMEOUT_MS } from './call-bound.js';

/** How a store that can fail fails when it does not say: the Redis store's defaults, a custom store's. */
export const DEFAULT_FAILURE: Required<StoreFailurePolicy> = Object.freeze({
  timeoutMs: 200,
  onFailure: 'memory',
  callTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
});

/** The event loop's idle time (ms): an answer that came then was read at once. 0 where the runtime cannot tell. */
const timing = performance.nodeTiming as { readonly idleTime?: number } | undefined;
const idleMs: () => number = typeof timing?.idleTime === 'number' ? () => timing.idleTime as number : () => 0;

/** However busy the process, no request waits longer than this many times `timeoutMs`. */
const BUSY_WAIT_FACTOR = 5;

/** Why a store call was not waited for: its request's time ran out, or the breaker is open. */
class StoreTimeout extends Error {
  constructor(message: string) {
    super(`listing-limits: ${message}`);
    this.name = 'StoreTimeout';
  }
}

/** The rejection of a call its request's deadline ended. */
export const TIMED_OUT = new StoreTimeout('the store did not answer within timeoutMs');

/** The rejection of a call made after its request's deadline: the timeout was counted once, not again. */
export const AFTER_DEADLINE = new StoreTimeout("the request's deadline had passed");

/** The rejection of a call not made because the breaker is open: not a failure of its own. */
export const BREAKER_OPEN = new StoreTimeout('the store keeps failing; not waiting for it');

/** One request's deadline: all its store calls race it. Its store's {@link Waiting} times every deadline. */
export class Deadline {
  expired = false;
  done = false;
  #waiting: ((error: Error) => void)[] | undefined;

  constructor(
    /** When `timeoutMs` has passed on the wall clock. */
    readonly at: number,
    /** The event loop's idle time when the request began to wait. */
    readonly idleAt: number,
    /** When `BUSY_WAIT_FACTOR × timeoutMs` has passed: the end, however busy the process. */
    readonly lastAt: number,
  ) {}

  race<T>(call: Promise<T>): Promise<T> {
    if (this.expired) {
      call.catch(() => {});
      return Promise.reject(AFTER_DEADLINE);
    }
    return new Promise<T>((resolve, reject) => {
      (this.#waiting ??= []).push(reject);
      call.then(resolve, reject);
    });
  }

  expire(): void {
    this.expired = true;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting) for (const reject of waiting) reject(TIMED_OUT);
  }

  clear(): void {
    this.done = true;
    this.#waiting = undefined;
  }
}

/** Timeouts in a row that open a breaker; while open, one request per PROBE_EVERY_MS probes the store. */
const FAILURES_TO_OPEN = 3;
export const PROBE_EVERY_MS = 500;

/** The breaker of one part of a store: its timeouts in a row, and until when it is open. */
interface Breaker {
  failures: number;
  openUntil: number;
}

/**
 * How a middleware's requests wait for one store: deadlines ended in order by one timer (they end in the order they
 * begin), once `timeoutMs` of idle time has passed, and a breaker per route (a Cluster's node) that any answer closes.
 */
export class Waiting {
  readonly timeoutMs: number;
  readonly onFailure: StoreFailurePolicy['onFailure'];
  /** Deadlines from `#head` on are pending, in the order they end. */
  #queue: Deadline[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined;
  /** The breaker of a store of one part (route ''), and those of the other routes. */
  readonly #one: Breaker = { failures: 0, openUntil: 0 };
  readonly #breakers = new Map<string, Breaker>();

  constructor(policy: StoreFailurePolicy) {
    this.timeoutMs = policy.timeoutMs;
    this.onFailure = policy.onFailure;
  }

  start(): Deadline {
    const now = Date.now();
    const deadline = new Deadline(now + this.timeoutMs, idleMs(), now + this.timeoutMs * BUSY_WAIT_FACTOR);
    this.#queue.push(deadline);
    if (!this.#timer) this.#arm();
    return deadline;
  }

  #arm(delayMs?: number): void {
    const head = this.#queue[this.#head];
    if (!head) return;
    this.#timer = setTimeout(() => setImmediate(() => this.#sweep()), delayMs ?? Math.max(head.at - Date.now(), 0));
    this.#timer.unref();
  }

  #sweep(): void {
    this.#timer = undefined;
    const now = Date.now();
    const idle = idleMs();
    const queue = this.#queue;
    let head = this.#head;
    let waitMore: number | undefined;
    for (; head < queue.length; head++) {
      const deadline = queue[head] as Deadline;
      if (deadline.done) continue;
      if (deadline.at > now) break;
      const waitedIdle = idle - deadline.idleAt;
      if (waitedIdle < this.timeoutMs && now < deadline.lastAt) {
        // The process was busy: its time is not the store's delay.
        waitMore = Math.max(Math.min(this.timeoutMs - waitedIdle, deadline.lastAt - now), 1);
        break;
      }
      deadline.expire();
    }
    if (head === queue.length) {
      this.#queue = [];
      head = 0;
    } else if (head > 1024 && head * 2 > queue.length) {
      this.#queue = queue.slice(head);
      head = 0;
    }
    this.#head = head;
    this.#arm(waitMore);
  }

  #breaker(route: string): Breaker {
    if (route === '') return this.#one;
    let breaker = this.#breakers.get(route);
    if (!breaker) this.#breakers.set(route, (breaker = { failures: 0, openUntil: 0 }));
    return breaker;
  }

  /** Whether a call may go to `route` now: not while its breaker is open, but for one probe per interval. */
  allow(route = ''): boolean {
    const breaker = this.#breaker(route);
    if (breaker.failures < FAILURES_TO_OPEN) return true;
    const now = Date.now();
    if (now < breaker.openUntil) return false;
    breaker.openUntil = now + PROBE_EVERY_MS;
    return true;
  }

  succeeded(route = ''): void {
    const breaker = route === '' ? this.#one : this.#breakers.get(route);
    if (breaker) breaker.failures = 0;
  }

  failed(route = ''): void {
    const breaker = this.#breaker(route);
    if (++breaker.failures === FAILURES_TO_OPEN) breaker.openUntil = Date.now() + PROBE_EVERY_MS;
  }
}
