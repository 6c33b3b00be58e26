// What a server that honours an endpoint's limits has counted for one client, known from when requests went and came.
import type { Limit, WindowKind } from '../contract/limit.js';

/** When a request was sent and when its answer came: the server counted it somewhere in between. */
export interface Span {
  readonly sent: number;
  readonly at: number;
}

/** One row's window. */
interface Slot {
  /** Fixed windows: the request that opened the window, and the requests counted in it so far. */
  opening: Span | undefined;
  count: number;
  /**
   * Fixed windows: until when the window cannot be told, after a request that came too near its end to tell whether
   * it opened the next one. Once it has passed, every window it may have been has ended.
   */
  unknownUntil: number;
  /** Sliding windows: the requests counted that may still be in the window, oldest first. */
  readonly stamps: Span[];
}

/**
 * The counts of every row of one client's counter on one endpoint, in windows of one kind, as a server that honours
 * them keeps them. Each row keeps a margin on either side of its windows' ends (the grace, at most a quarter of the
 * window): a request answered within it may fall on either side, and what depends on that side is not told
 * (`undefined`), never guessed. With no grace and requests answered as they are sent, it is the server itself.
 */
export class Counted {
  private readonly slots: Slot[];
  private readonly margins: number[];

  constructor(
    readonly limits: readonly Limit[],
    readonly kind: WindowKind,
    graceMs: number,
  ) {
    this.slots = limits.map(() => ({ opening: undefined, count: 0, unknownUntil: 0, stamps: [] }));
    this.margins = limits.map(({ windowMs }) => marginMs(windowMs, graceMs));
  }

  /** Records a request: counted on every row when it passed, on none when it was refused. */
  record(span: Span, passed: boolean): void {
    if (!passed) return;
    this.slots.forEach((slot, i) => {
      const { windowMs } = this.limits[i] as Limit;
      const margin = this.margins[i] as number;
      if (this.kind === 'sliding') {
        const gone = slot.stamps.findIndex((stamp) => stamp.at + windowMs + margin > span.sent);
        slot.stamps.splice(0, gone === -1 ? slot.stamps.length : gone);
        slot.stamps.push(span);
      } else if (span.sent < slot.unknownUntil) {
        slot.unknownUntil = Math.max(slot.unknownUntil, span.at + windowMs + margin);
      } else if (!slot.opening || span.sent >= slot.opening.at + windowMs + margin) {
        slot.opening = span;
        slot.count = 1;
      } else if (span.at < slot.opening.sent + windowMs - margin) {
        slot.count++;
      } else {
        // It may have opened the next window, or been the last of this one: every window it may be in ends by then.
        slot.opening = undefined;
        slot.count = 0;
        slot.unknownUntil = span.at + windowMs + margin;
      }
    });
  }

  /** The requests row `i` counts for a request sent and answered at `span` (itself included), or undefined. */
  count(i: number, span: Span): number | undefined {
    const slot = this.slots[i] as Slot;
    const { windowMs } = this.limits[i] as Limit;
    const margin = this.margins[i] as number;
    if (this.kind === 'sliding') {
      const maybe = slot.stamps.filter((stamp) => stamp.at + windowMs + margin > span.sent).length;
      const surely = slot.stamps.filter((stamp) => stamp.sent + windowMs - margin > span.at).length;
      return maybe === surely ? maybe : undefined;
    }
    if (span.sent < slot.unknownUntil) return undefined;
    const { opening } = slot;
    if (!opening || span.sent >= opening.at + windowMs + margin) return 0;
    return span.at < opening.sent + windowMs - margin ? slot.count : undefined;
  }

  /** The requests row `i` has left for a request sent and answered at `span`, or undefined. */
  remaining(i: number, span: Span): number | undefined {
    const count = this.count(i, span);
    return count === undefined ? undefined : Math.max((this.limits[i] as Limit).limit - count, 0);
  }

  /** The fewest requests row `i` may have left at `time`, whichever side of a window's end the server puts it. */
  least(i: number, time: number): number {
    const slot = this.slots[i] as Slot;
    const { limit, windowMs } = this.limits[i] as Limit;
    const margin = this.margins[i] as number;
    if (this.kind === 'sliding') {
      return Math.max(limit - slot.stamps.filter((stamp) => stamp.at + windowMs + margin > time).length, 0);
    }
    if (time < slot.unknownUntil) return 0;
    const { opening } = slot;
    return opening && time < opening.at + windowMs + margin ? Math.max(limit - slot.count, 0) : limit;
  }

  /** Whether `time` falls within the margin around the end of one of row `i`'s windows. */
  private nearEnd(i: number, time: number): boolean {
    const slot = this.slots[i] as Slot;
    const { windowMs } = this.limits[i] as Limit;
    const margin = this.margins[i] as number;
    const near = (span: Span) => time >= span.sent + windowMs - margin && time < span.at + windowMs + margin;
    if (this.kind === 'sliding') return slot.stamps.some(near);
    return time < slot.unknownUntil || (slot.opening !== undefined && near(slot.opening));
  }

  /** The times at which something may change: each window's end, with its margin. */
  private changes(): number[] {
    return this.slots.flatMap((slot, i) => {
      const { windowMs } = this.limits[i] as Limit;
      const margin = this.margins[i] as number;
      if (this.kind === 'sliding') return slot.stamps.map((stamp) => stamp.at + windowMs + margin);
      return [slot.unknownUntil, ...(slot.opening ? [slot.opening.at + windowMs + margin] : [])];
    });
  }

  /**
   * The first time from `time` on when a request falls near no window's end and every row but `except` surely lets
   * it pass: when it is sent then, only row `except` may refuse it.
   */
  readyAt(time: number, except?: number): number {
    return this.first(time, (t) =>
      this.limits.every((_limit, i) => !this.nearEnd(i, t) && (i === except || this.least(i, t) >= 1)),
    );
  }

  /** The first time from `time` on when row `i` surely has room for one more request. */
  freesAt(i: number, time: number): number {
    return this.first(time, (t) => this.least(i, t) >= 1);
  }

  /** The first of `time` and the changes after it that `holds`; after the last change, every window has ended. */
  private first(time: number, holds: (t: number) => boolean): number {
    if (holds(time)) return time;
    const later = this.changes()
      .filter((t) => t > time)
      .sort((a, b) => a - b);
    return later.find(holds) ?? later.at(-1) ?? time;
  }

  /**
   * The row the legacy fields show for a request at `span`: the fewest requests left, then the latest reset; undefined
   * when that cannot be told.
   */
  shown(span: Span): number | undefined {
    if (this.limits.length === 1) return 0;
    const left = this.limits.map((_limit, i) => this.remaining(i, span));
    if (left.some((r) => r === undefined)) return undefined;
    const fewest = Math.min(...(left as number[]));
    const tied = left.flatMap((r, i) => (r === fewest ? [i] : []));
    if (tied.length === 1) return tied[0];
    const resets = tied.map((i) => ({ i, range: this.resetRange(i, span) }));
    const latest = resets.reduce((best, r) => (r.range[0] > best.range[0] ? r : best));
    // Told only when its earliest reset is after every other's latest.
    return resets.every((r) => r === latest || r.range[1] < latest.range[0]) ? latest.i : undefined;
  }

  /** When row `i` resets for a request at `span`: the earliest and latest it can be. */
  private resetRange(i: number, span: Span): readonly [number, number] {
    const slot = this.slots[i] as Slot;
    const { windowMs } = this.limits[i] as Limit;
    const margin = this.margins[i] as number;
    const of = (s: Span) => [s.sent + windowMs, s.at + windowMs] as const;
    if (this.kind === 'sliding') {
      const oldest = slot.stamps.find((stamp) => stamp.at + windowMs + margin > span.sent);
      return of(oldest ?? span);
    }
    return of(slot.opening && span.sent < slot.opening.at + windowMs + margin ? slot.opening : span);
  }

  /**
   * How a server that honours the rows answers a request at `time` (its own clock, so `span` is one instant): pass
   * and count it, or refuse it with the whole seconds until the last of the rows that refuse frees a request.
   */
  answer(time: number): { passed: true } | { passed: false; retryAfter: number } {
    const span = { sent: time, at: time };
    const full = this.limits.flatMap((_limit, i) => ((this.remaining(i, span) ?? 0) < 1 ? [i] : []));
    if (full.length === 0) {
      this.record(span, true);
      return { passed: true };
    }
    const frees = Math.max(...full.map((i) => this.freesAt(i, time)));
    return { passed: false, retryAfter: Math.max(Math.ceil((frees - time) / 1000), 1) };
  }
}

/**
 * How far from a window's end requests are kept on either side of it: the grace, but at most a quarter of the
 * window, so that both sides fit in a window however short.
 */
export function marginMs(windowMs: number, graceMs: number): number {
  return Math.min(graceMs, windowMs / 4);
}
