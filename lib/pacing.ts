// One endpoint's budget on the client side: a sliding window of the requests sent, corrected by the server's answers.
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

/** A sent request, to read its answer against: how many the pacer had sent once this one was. */
export interface Ticket {
  readonly index: number;
}

interface Waiter {
  readonly grant: (ticket: Ticket) => void;
  readonly fail: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * One endpoint's budget, kept as a sliding window: the times of the requests that count in the last `windowMs`,
 * oldest first, so that no interval of `windowMs` ever holds more than `limit` of them. That is never refused by a
 * server that counts fixed windows (each of which is such an interval) nor by one that counts sliding windows.
 * Calls take turns in order; when the window is full, the first in line waits for its oldest request to leave (one
 * timer, unref'd). What the server's answers say was spent beyond the client's own requests (another process on
 * the same token) is added as if spent at the moment of the answer, which can only wait longer than needed.
 */
export class Pacer {
  limit: number;
  windowMs: number;
  /** When each request counted in the window was spent, oldest first, and what says so. */
  readonly #times: number[] = [];
  readonly #sources: WaitReason[] = [];
  /** Requests this pacer has let go, in all. */
  #sent = 0;
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

  /** Forgets the requests that have left the window. */
  #slide(now: number): void {
    let gone = 0;
    while (gone < this.#times.length && (this.#times[gone] as number) <= now - this.windowMs) gone++;
    this.#times.splice(0, gone);
    this.#sources.splice(0, gone);
  }

  /**
   * When the call `ahead` places from the front of the line goes, and why it waits: the window's free places go at
   * once; after them, each call goes when the request a window before it leaves.
   */
  #turn(now: number, ahead: number): { ms: number; reason: WaitReason } {
    this.#slide(now);
    const q = ahead - (this.limit - this.#times.length);
    if (q < 0) return { ms: 0, reason: 'table' };
    const place = q % this.limit;
    const at = place < this.#times.length ? (this.#times[place] as number) : now;
    // Told as the server's doing when its answers filled the window beyond the client's own requests.
    const sources = this.#sources;
    const reason = sources.includes('retry-after') ? 'retry-after' : sources.includes('server') ? 'server' : 'table';
    return { ms: at + (Math.floor(q / this.limit) + 1) * this.windowMs - now, reason };
  }

  /** How long a call queued now would wait before it is sent, as far as the client knows. */
  waitFor(now: number, first = false): number {
    return this.#turn(now, first ? 0 : this.#queue.length).ms;
  }

  /**
   * Resolves, in turn, when the call may be sent. `first` puts a retry before the calls that came after it; its wait
   * is not told again, the 429 that caused it was.
   */
  take(now: number, signal: AbortSignal | undefined, first = false): Promise<Ticket> {
    if (!first) {
      const { ms, reason } = this.#turn(now, this.#queue.length);
      if (ms > 0) this.onWait({ endpoint: this.endpoint, ms, reason });
    }
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

  /**
   * Reads an answer's limit fields: the server's limit and window replace the table's, and what it counts beyond
   * this client's own requests (those sent up to this one, and those sent since, which it has not counted yet) is
   * added as spent now.
   */
  correct(ticket: Ticket, server: ServerLimit, now: number): void {
    if (server.limit !== undefined) this.limit = server.limit;
    if (server.windowMs !== undefined) this.windowMs = server.windowMs;
    this.#slide(now);
    const spent = Math.max(this.limit - server.remaining, 0) + (this.#sent - ticket.index);
    this.#spend(spent - this.#times.length, now, 'server');
    this.#pump();
  }

  /** A 429: nothing is left until `retryMs` has passed. */
  refused(retryMs: number, now: number): void {
    this.#slide(now);
    // Every request of the window is taken to leave no earlier than `retryMs` from now.
    const leaves = now + retryMs - this.windowMs;
    for (let i = 0; i < this.#times.length; i++) {
      if ((this.#times[i] as number) < leaves) {
        this.#times[i] = leaves;
        this.#sources[i] = 'retry-after';
      }
    }
    this.#spend(this.limit - this.#times.length, leaves, 'retry-after');
  }

  /** Adds `n` requests spent at `at` (the newest so far), when `n` is positive. */
  #spend(n: number, at: number, source: WaitReason): void {
    for (let i = 0; i < n; i++) {
      this.#times.push(at);
      this.#sources.push(source);
    }
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
      this.#slide(now);
      if (this.#times.length >= this.limit) {
        this.#timer = setTimeout(() => this.#pump(), (this.#times[0] as number) + this.windowMs - now);
        this.#timer.unref?.();
        return;
      }
      const waiter = this.#queue.shift() as Waiter;
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      this.#spend(1, now, 'table');
      this.#sent++;
      waiter.grant({ index: this.#sent });
    }
  }
}
