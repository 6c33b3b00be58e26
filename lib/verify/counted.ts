// What a server that honours an endpoint's limits has counted for one client, known from when requests went and came.
import type { Limit, WindowKind } from '../contract/limit.js';

/** The server counted a request somewhere between its send and its answer. */
export interface Span {
  readonly sent: number;
  readonly at: number;
}

/** One row, and its window: fixed windows' `opening` and `count`, sliding windows' `stamps`, oldest first. */
interface Slot extends Limit {
  readonly margin: number;
  opening: Span | undefined;
  count: number;
  /** Fixed windows: after a request too near a window's end to tell which window it fell in. */
  unknownUntil: number;
  readonly stamps: Span[];
}

// A request answered within a margin of a window's end may fall on either side: what depends on it is undefined,
// never guessed. With no grace and instant answers, this is the server itself.
export class Counted {
  private readonly slots: Slot[];

  constructor(
    readonly limits: readonly Limit[],
    readonly kind: WindowKind,
    graceMs: number,
  ) {
    this.slots = limits.map(({ limit, windowMs }) => {
      const margin = marginMs(windowMs, graceMs);
      return { limit, windowMs, margin, opening: undefined, count: 0, unknownUntil: 0, stamps: [] };
    });
  }

  record(span: Span, passed: boolean): void {
    if (!passed) return;
    this.slots.forEach((slot) => {
      const { windowMs, margin } = slot;
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
        slot.opening = undefined;
        slot.count = 0;
        slot.unknownUntil = span.at + windowMs + margin;
      }
    });
  }

  count(i: number, span: Span): number | undefined {
    const slot = this.slots[i] as Slot;
    const { windowMs, margin } = slot;
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

  remaining(i: number, span: Span): number | undefined {
    const count = this.count(i, span);
    return count === undefined ? undefined : Math.max((this.limits[i] as Limit).limit - count, 0);
  }

  /** The fewest requests row `i` may have left, whichever side of a window's end the server puts `time`. */
  least(i: number, time: number): number {
    const slot = this.slots[i] as Slot;
    const { limit, windowMs, margin } = slot;
    if (this.kind === 'sliding') {
      return Math.max(limit - slot.stamps.filter((stamp) => stamp.at + windowMs + margin > time).length, 0);
    }
    if (time < slot.unknownUntil) return 0;
    const { opening } = slot;
    return opening && time < opening.at + windowMs + margin ? Math.max(limit - slot.count, 0) : limit;
  }

  private nearEnd(i: number, time: number): boolean {
    const slot = this.slots[i] as Slot;
    const { windowMs, margin } = slot;
    const near = (span: Span) => time >= span.sent + windowMs - margin && time < span.at + windowMs + margin;
    if (this.kind === 'sliding') return slot.stamps.some(near);
    return time < slot.unknownUntil || (slot.opening !== undefined && near(slot.opening));
  }

  private changes(): number[] {
    return this.slots.flatMap((slot) => {
      const { windowMs, margin } = slot;
      if (this.kind === 'sliding') return slot.stamps.map((stamp) => stamp.at + windowMs + margin);
      return [slot.unknownUntil, ...(slot.opening ? [slot.opening.at + windowMs + margin] : [])];
    });
  }

  /** The first time when only row `except` may refuse a request. */
  readyAt(time: number, except?: number): number {
    return this.first(time, (t) =>
      this.limits.every((_limit, i) => !this.nearEnd(i, t) && (i === except || this.least(i, t) >= 1)),
    );
  }

  freesAt(i: number, time: number): number {
    return this.first(time, (t) => this.least(i, t) >= 1);
  }

  // After the last change, every window has ended.
  private first(time: number, holds: (t: number) => boolean): number {
    if (holds(time)) return time;
    const later = this.changes()
      .filter((t) => t > time)
      .sort((a, b) => a - b);
    return later.find(holds) ?? later.at(-1) ?? time;
  }

  /** The row the legacy fields show: the fewest requests left, then the latest reset. */
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

  private resetRange(i: number, span: Span): readonly [number, number] {
    const slot = this.slots[i] as Slot;
    const { windowMs, margin } = slot;
    const of = (s: Span) => [s.sent + windowMs, s.at + windowMs] as const;
    if (this.kind === 'sliding') {
      const oldest = slot.stamps.find((stamp) => stamp.at + windowMs + margin > span.sent);
      return of(oldest ?? span);
    }
    return of(slot.opening && span.sent < slot.opening.at + windowMs + margin ? slot.opening : span);
  }

  /** How a server that honours the rows answers at `time`, on its own clock. */
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

/** At most a quarter of the window, so that both sides of its end fit in a window however short. */
export function marginMs(windowMs: number, graceMs: number): number {
  return Math.min(graceMs, windowMs / 4);
}
