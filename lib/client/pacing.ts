// One endpoint's budget on the client side: a request holds a place from its send until one window after its answer.
import { MAX_TIMER_MS } from '../shared/check.js';
import { ListingClientError } from './errors.js';
import type { Limit } from '../contract/limit.js';
import type { ServerLimit } from '../contract/read-headers.js';

/** Why a call waits: the table, the server's answers, a 429's `Retry-After`, or a GET's backoff after a failure. */
export type WaitReason = 'table' | 'server' | 'retry-after' | 'backoff';

/** What `onWait` is told when a call has to wait. */
export interface WaitEvent {
  /** `<METHOD> <path>`, as in the table. */
  readonly endpoint: string;
  /** About how long the call waits, in milliseconds. */
  readonly ms: number;
  /** Why the call waits. */
  readonly reason: WaitReason;
}

/** Limits one endpoint may have, the table's and those the server's answers add. */
const MAX_LIMITS = 8;

/** `server`: requests the server counted beyond ours, by another client on the same token. */
interface Spent {
  readonly until: number;
  readonly n: number;
  readonly server: boolean;
}

/** A request holds a place until a window after its answer: no server window, fixed or sliding, holds it then. */
class Budget {
  limit: number;
  windowMs: number;
  inflight = 0;
  readonly #spent: Spent[] = [];
  #total = 0;

  constructor({ limit, windowMs }: Limit) {
    this.limit = limit;
    this.windowMs = windowMs;
  }

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

  get byServer(): boolean {
    return this.#spent.some((spent) => spent.server);
  }

  /** When the `k`-th place held is free; one in flight, a window from now (`exact`: undefined, its answer tells). */
  freedAt(k: number, now: number, exact: boolean): number | undefined {
    for (const spent of this.#spent) {
      k -= spent.n;
      if (k <= 0) return spent.until;
    }
    return exact ? undefined : now + this.windowMs;
  }

  /** About when the call `ahead` places behind the first in line may go. */
  estimate(ahead: number, now: number): number {
    const used = this.used(now);
    const k = used + (ahead % this.limit) + 1 - this.limit;
    const base = k <= 0 ? now : (this.freedAt(k, now, false) as number);
    return base + Math.floor(ahead / this.limit) * this.windowMs;
  }

  /** Undefined when only an answer frees a place. */
  next(now: number): number | undefined {
    const used = this.used(now);
    return used < this.limit ? now : this.freedAt(used - this.limit + 1, now, true);
  }
}

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

/** One endpoint's calls in turn, paced by the table as the server's answers correct it. */
export class Pacer {
  readonly #budgets: Budget[];
  #blockedUntil = 0;
  #unlimited = false;
  /** Only an endpoint whose answers told its limits can be granted unlimited by an answer without them. */
  #spoke = false;
  /** Cleared by a 429 met while unlimited: the silence was a proxy dropping the fields, not a grant. */
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

  tooLong(ms: number, details: { status?: number; body?: unknown; quote?: string } = {}): ListingClientError {
    return new ListingClientError(
      'ERR_WAIT_TOO_LONG',
      this.endpoint,
      `would wait ${ms} ms, more than maxWaitMs${details.quote ?? ''}.`,
      { waitMs: ms, status: details.status, body: details.body },
    );
  }

  /** A `retry` goes first in line, and its wait is not told: the answer that caused it was. */
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

  /** `limits`: what the answer's fields said, `undefined` when it had none. */
  answered(ticket: Ticket, at: number, limits: readonly ServerLimit[] | undefined, ok: boolean): void {
    if (!ticket.open) return;
    ticket.open = false;
    // A success without fields, where earlier answers had them, was not counted: an unlimited grant.
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

  cancel(ticket: Ticket): void {
    if (!ticket.open) return;
    ticket.open = false;
    for (const budget of ticket.budgets) budget.inflight--;
    this.#pump();
  }

  /** Adds a budget for a window the table does not have. */
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

  /** True when calls may now wait longer. */
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
    const beyond = budget.limit - server.remaining - budget.used(at);
    if (beyond > 0) budget.add(at + budget.windowMs, Math.min(beyond, budget.limit), true);
    return longer || beyond > 0;
  }

  refused(retryMs: number, at: number): void {
    if (this.#unlimited) {
      this.#unlimited = false;
      this.#mayBeUnlimited = false;
    }
    this.#blockedUntil = Math.max(this.#blockedUntil, at + retryMs);
    this.#recheck();
    this.#pump();
  }

  clear(reason: unknown): void {
    for (const waiter of this.#queue.splice(0)) {
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.fail(reason);
    }
    this.#stopTimer();
  }

  /** Rejects at once the calls that would now wait beyond maxWaitMs. */
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
      // Only an answer frees a place: the answer, or the request's timeout, pumps again.
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
