// One endpoint's budget on the client side: a request holds a place from its send until one window after its answer.
import { MAX_TIMER_MS } from '../shared/check.js';
import { ListingClientError } from './errors.js';
import type { Limit } from '../contract/limit.js';
import type { ServerLimit } from '../contract/read-headers.js';

/** Why a call waits before it is sent. */
export type WaitReason = 'table' | 'server' | 'retry-after' | 'backoff';

/** What `onWait` is told when a call has to wait. */
export interface WaitEvent {
  /** `<METHOD> <path>`, as in the table. */
  readonly endpoint: string;
  /** About how long the call waits, in milliseconds. */
  readonly ms: number;
  /**
   * `'table'`: the table's limit is spent in this window; `'server'`: the server's answers said so (another process
   * on the same token, or other limits); `'retry-after'`: a 429 said how long to wait; `'backoff'`: a GET waits
   * before it is sent again after a network error, a timeout or a 5xx.
   */
  readonly reason: WaitReason;
}

/** Limits one endpoint may have, the table's and those the server's answers add. */
const MAX_LIMITS = 8;

/** Requests of one limit that hold a place until `until`; `server`: those the server's answers counted beyond ours. */
interface Spent {
  readonly until: number;
  readonly n: number;
  readonly server: boolean;
}

/**
 * One limit's places. A request holds one from when it is sent until one window after its answer arrived: the
 * server counted it somewhere in between, so once that time has passed, no window of the server (fixed or
 * sliding, whenever it started) can hold it together with a request sent from then on.
 */
class Budget {
  limit: number;
  windowMs: number;
  /** Requests sent whose answer has not arrived. */
  inflight = 0;
  /** Answered requests still holding a place, by the time they free it, earliest first. */
  readonly #spent: Spent[] = [];
  #total = 0;

  constructor({ limit, windowMs }: Limit) {
    this.limit = limit;
    this.windowMs = windowMs;
  }

  /** Places held at `now`. */
  used(now: number): number {
    let gone = 0;
    while (gone < this.#spent.length && (this.#spent[gone] as Spent).until <= now) {
      this.#total -= (this.#spent[gone] as Spent).n;
      gone++;
    }
    if (gone > 0) this.#spent.splice(0, gone);
    return this.inflight + this.#total;
  }

  add(until: number, n: number, server: boolean): void {
    let at = this.#spent.length;
    while (at > 0 && (this.#spent[at - 1] as Spent).until > until) at--;
    this.#spent.splice(at, 0, { until, n, server });
    this.#total += n;
  }

  /** Whether the server's answers hold some of the places. */
  get byServer(): boolean {
    return this.#spent.some((spent) => spent.server);
  }

  /**
   * When the `k`-th place held (1-based, earliest first) is free again; a request in flight is counted as if its
   * answer arrived now, or, with `exact`, gives undefined: only its answer will tell.
   */
  freedAt(k: number, now: number, exact: boolean): number | undefined {
    for (const spent of this.#spent) {
      k -= spent.n;
      if (k <= 0) return spent.until;
    }
    return exact ? undefined : now + this.windowMs;
  }

  /** When a call `ahead` places behind the first in line may go: about, for the waits told and bounded. */
  estimate(ahead: number, now: number): number {
    const used = this.used(now);
    const k = used + (ahead % this.limit) + 1 - this.limit;
    const base = k <= 0 ? now : (this.freedAt(k, now, false) as number);
    return base + Math.floor(ahead / this.limit) * this.windowMs;
  }

  /** When the first in line may go: `now` when a place is free, undefined when only an answer frees one. */
  next(now: number): number | undefined {
    const used = this.used(now);
    return used < this.limit ? now : this.freedAt(used - this.limit + 1, now, true);
  }
}

/** A request the pacer let go: it holds a place in each limit of its endpoint until its answer is in. */
export class Ticket {
  open = true;
  constructor(readonly budgets: readonly Budget[]) {}
}

interface Waiter {
  readonly grant: (ticket: Ticket) => void;
  readonly fail: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * One endpoint's pacing: calls take turns in order, and one goes when every limit of the endpoint has a free
 * place (see Budget). The server's answers correct it: its limits and windows replace the table's, what it counts
 * beyond this client's own requests holds places for a window, a 429 blocks the endpoint until its Retry-After. An
 * answer without any rate-limit field, where earlier answers carried them, is an unlimited grant: calls go unpaced
 * until the fields return. Where they never came (a server that sends none), silence is no grant, and every request
 * holds its place.
 * A waiting call keeps the process alive, as a pending fetch does: its timer is not unref'd, and no timer is set
 * beyond MAX_TIMER_MS. `onWait` is told each wait of a call in line, and must not throw (the settings' does not).
 */
export class Pacer {
  readonly #budgets: Budget[];
  /** A 429's Retry-After: nothing goes before. */
  #blockedUntil = 0;
  #unlimited = false;
  /** Whether an answer on this endpoint told its limits: only then can an answer without them be a grant. */
  #spoke = false;
  /** Cleared by a 429 met while unlimited: the server's silence was not a grant (a proxy dropping the fields). */
  #mayBeUnlimited = true;
  readonly #queue: Waiter[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly endpoint: string,
    limits: readonly Limit[],
    private readonly maxWaitMs: number,
    private readonly onWait: (event: WaitEvent) => void,
  ) {
    this.#budgets = limits.map((limit) => new Budget(limit));
  }

  /** The longest window of the endpoint: what a 429 without any time in it is taken to ask. */
  get windowMs(): number {
    return Math.max(...this.#budgets.map((budget) => budget.windowMs));
  }

  /** About how long the call `ahead` places behind the first in line waits from `now`, and why. */
  #estimate(ahead: number, now: number): { ms: number; reason: WaitReason } {
    let at = now;
    let reason: WaitReason = 'table';
    if (!this.#unlimited) {
      for (const budget of this.#budgets) {
        const go = budget.estimate(ahead, now);
        if (go > at) {
          at = go;
          reason = budget.byServer ? 'server' : 'table';
        }
      }
    }
    if (this.#blockedUntil > at) {
      at = this.#blockedUntil;
      reason = 'retry-after';
    }
    return { ms: at - now, reason };
  }

  /** The rejection of a call that would wait `ms`; `quote` repeats the answer that asked it (` (answered 429: …)`). */
  tooLong(ms: number, details: { status?: number; body?: unknown; quote?: string } = {}): ListingClientError {
    return new ListingClientError(
      'ERR_WAIT_TOO_LONG',
      this.endpoint,
      `would wait ${ms} ms, more than maxWaitMs${details.quote ?? ''}.`,
      { waitMs: ms, status: details.status, body: details.body },
    );
  }

  /**
   * Resolves, in turn, when the call may be sent; rejects at once with ERR_WAIT_TOO_LONG when its wait would be
   * longer than maxWaitMs. `retry` puts a call sent again before the calls that came after it; its wait is not
   * told, the answer that caused it was.
   */
  take(signal: AbortSignal | undefined, retry = false): Promise<Ticket> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const { ms, reason } = this.#estimate(retry ? 0 : this.#queue.length, Date.now());
    if (ms > this.maxWaitMs) return Promise.reject(this.tooLong(ms));
    if (ms > 0 && !retry) this.onWait({ endpoint: this.endpoint, ms, reason });
    return new Promise<Ticket>((grant, fail) => {
      const waiter: Waiter = {
        grant,
        fail,
        signal,
        onAbort: () => {
          const at = this.#queue.indexOf(waiter);
          if (at >= 0) this.#queue.splice(at, 1);
          fail(signal?.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      if (retry) this.#queue.unshift(waiter);
      else this.#queue.push(waiter);
      this.#pump();
    });
  }

  /**
   * The answer to a ticket's request arrived at `at` (or the request failed then): the request frees its places
   * one window later. `limits` is what the answer's fields said, `undefined` when it had none, `ok` whether it was
   * a success.
   */
  answered(ticket: Ticket, at: number, limits: readonly ServerLimit[] | undefined, ok: boolean): void {
    if (!ticket.open) return;
    ticket.open = false;
    // A success without any field, from a server that told this endpoint's limits before, is an unlimited grant: it
    // was not counted, and holds no place. Any other answer was counted, and holds its place for a window.
    const grant = ok && limits === undefined && this.#spoke && this.#mayBeUnlimited;
    for (const budget of ticket.budgets) {
      budget.inflight--;
      if (!grant) budget.add(at + budget.windowMs, 1, false);
    }
    let longer = false;
    if (grant) this.#unlimited = true;
    else if (limits !== undefined) {
      this.#unlimited = false;
      if (limits.length > 0) this.#spoke = true;
      for (const limit of limits) longer = this.#correct(limit, limits.length, at) || longer;
    }
    if (longer) this.#recheck();
    this.#pump();
  }

  /** A ticket whose request was never sent gives its places back. */
  cancel(ticket: Ticket): void {
    if (!ticket.open) return;
    ticket.open = false;
    for (const budget of ticket.budgets) budget.inflight--;
    this.#pump();
  }

  /** The budget a limit of the server's answer speaks of; one it adds when the answer shows a window of its own. */
  #budgetOf(server: ServerLimit, reported: number): Budget | undefined {
    const budgets = this.#budgets;
    if (budgets.length === 1 && reported === 1) return budgets[0];
    if (server.windowMs === undefined) return budgets.find((budget) => budget.limit === server.limit);
    const same = budgets.find((budget) => budget.windowMs === server.windowMs);
    if (same || server.limit === undefined || budgets.length >= MAX_LIMITS) return same;
    const added = new Budget({ limit: server.limit, windowMs: server.windowMs });
    budgets.push(added);
    return added;
  }

  /** Follows one limit of an answer; true when that can make calls wait longer. */
  #correct(server: ServerLimit, reported: number, at: number): boolean {
    const budget = this.#budgetOf(server, reported);
    if (!budget) return false;
    let longer = false;
    if (server.limit !== undefined) {
      longer = server.limit < budget.limit;
      budget.limit = server.limit;
    }
    if (server.windowMs !== undefined) {
      longer ||= server.windowMs > budget.windowMs;
      budget.windowMs = server.windowMs;
    }
    // What the server counts beyond the places this client holds was spent by another client on the same token.
    const beyond = budget.limit - server.remaining - budget.used(at);
    if (beyond > 0) budget.add(at + budget.windowMs, Math.min(beyond, budget.limit), true);
    return longer || beyond > 0;
  }

  /** A 429: nothing goes until `retryMs` from `at` has passed. */
  refused(retryMs: number, at: number): void {
    if (this.#unlimited) {
      this.#unlimited = false;
      this.#mayBeUnlimited = false;
    }
    this.#blockedUntil = Math.max(this.#blockedUntil, at + retryMs);
    this.#recheck();
    this.#pump();
  }

  /** Rejects every waiting call with `reason`. */
  clear(reason: unknown): void {
    for (const waiter of this.#queue.splice(0)) {
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.fail(reason);
    }
    this.#stopTimer();
  }

  /** After an answer made waits longer: the calls that would now wait beyond maxWaitMs reject at once. */
  #recheck(): void {
    const now = Date.now();
    for (let ahead = 0; ahead < this.#queue.length;) {
      const { ms } = this.#estimate(ahead, now);
      if (ms <= this.maxWaitMs) {
        ahead++;
        continue;
      }
      const [waiter] = this.#queue.splice(ahead, 1) as [Waiter];
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.fail(this.tooLong(ms));
    }
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Lets the first calls in line go while every limit has a place; else waits for a place or an answer. */
  #pump(): void {
    this.#stopTimer();
    while (this.#queue.length > 0) {
      const now = Date.now();
      let at = Math.max(this.#blockedUntil, now);
      let answer = false;
      if (!this.#unlimited) {
        for (const budget of this.#budgets) {
          const next = budget.next(now);
          if (next === undefined) answer = true;
          else at = Math.max(at, next);
        }
      }
      // A place that only an answer frees: the answer (or the request's timeout) calls again.
      if (answer && at === now) return;
      if (at > now) {
        this.#timer = setTimeout(() => this.#pump(), Math.min(at - now, MAX_TIMER_MS));
        return;
      }
      const waiter = this.#queue.shift() as Waiter;
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      for (const budget of this.#budgets) budget.inflight++;
      waiter.grant(new Ticket([...this.#budgets]));
    }
  }
}
