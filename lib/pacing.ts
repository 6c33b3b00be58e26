// One endpoint's budget on the client side: the table's window kept locally, corrected by the server's answers.
import type { ServerLimit } from './server-limits.js';

/** Why a call waits before it is sent. */
export type WaitReason = 'table' | 'server' | 'retry-after';

/** What `onWait` is told when a call has to wait. */
export interface WaitEvent {
  /** `<METHOD> <path>`, as in the table. */
  readonly endpoint: string;
  /** About how long the call waits, in milliseconds. */
  readonly ms: number;
  /**
   * `'table'`: the table's limit is spent in this window; `'server'`: the server's answers said so (another process
   * on the same token, or other limits); `'retry-after'`: a 429 said how long to wait.
   */
  readonly reason: WaitReason;
}

/** Where a sent request stands in its window, to read its answer against. */
export interface Ticket {
  readonly window: number;
  /** The count of the window's requests once this one was taken. */
  readonly index: number;
}

interface Waiter {
  readonly grant: (ticket: Ticket) => void;
  readonly fail: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * A fixed window per endpoint, as the server counts: calls take turns in order, each takes one request of the
 * window, and when none is left the first in line waits for the window to end (one timer, unref'd).
 */
export class Pacer {
  limit: number;
  windowMs: number;
  #used = 0;
  /** When the current window ends (epoch ms); 0 before the first request. */
  #resetAt = 0;
  #window = 0;
  /** What set the current window's end or count: the table, or the server's answer. */
  #source: WaitReason = 'table';
  readonly #queue: Waiter[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    readonly endpoint: string,
    limit: number,
    windowMs: number,
    private readonly onWait: (event: WaitEvent) => void,
  ) {
    this.limit = limit;
    this.windowMs = windowMs;
  }

  /** How long a call queued now would wait before it is sent, as far as the client knows. */
  waitFor(now: number, first = false): number {
    const ahead = first ? 0 : this.#queue.length;
    if (now >= this.#resetAt) return ahead < this.limit ? 0 : Math.floor(ahead / this.limit) * this.windowMs;
    const over = this.#used + ahead - this.limit;
    return over < 0 ? 0 : this.#resetAt - now + Math.floor(over / this.limit) * this.windowMs;
  }

  /**
   * Resolves, in turn, when the call may be sent. `first` puts a retry before the calls that came after it; its wait
   * is not told again, the 429 that caused it was.
   */
  take(now: number, signal: AbortSignal | undefined, first = false): Promise<Ticket> {
    const ms = this.waitFor(now, first);
    if (ms > 0 && !first) this.onWait({ endpoint: this.endpoint, ms, reason: this.#source });
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
      if (first) this.#queue.unshift(waiter);
      else this.#queue.push(waiter);
      this.#pump();
    });
  }

  /** Reads an answer's limit fields: the server's count and reset replace the local ones. */
  correct(ticket: Ticket, server: ServerLimit, now: number): void {
    if (server.limit !== undefined) this.limit = server.limit;
    if (server.windowMs !== undefined) this.windowMs = server.windowMs;
    if (ticket.window === this.#window) {
      // Requests sent after this one in the same window are not in the server's count yet.
      this.#used = Math.max(this.limit - server.remaining, 0) + (this.#used - ticket.index);
      this.#resetAt = now + server.resetMs;
      this.#source = 'server';
    }
    this.#pump();
  }

  /** A 429: nothing is left until `retryMs` has passed. */
  refused(retryMs: number, now: number): void {
    this.#used = this.limit;
    this.#resetAt = Math.max(this.#resetAt, now + retryMs);
    this.#source = 'retry-after';
  }

  /** Rejects every waiting call with `reason`. */
  clear(reason: unknown): void {
    for (const waiter of this.#queue.splice(0)) {
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.fail(reason);
    }
    this.#stopTimer();
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #pump(): void {
    this.#stopTimer();
    while (this.#queue.length > 0) {
      const now = Date.now();
      if (now >= this.#resetAt) {
        this.#window++;
        this.#used = 0;
        this.#resetAt = now + this.windowMs;
        this.#source = 'table';
      }
      if (this.#used >= this.limit) {
        this.#timer = setTimeout(() => this.#pump(), this.#resetAt - now);
        this.#timer.unref?.();
        return;
      }
      const waiter = this.#queue.shift() as Waiter;
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      this.#used++;
      waiter.grant({ window: this.#window, index: this.#used });
    }
  }
}
