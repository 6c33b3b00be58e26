// Counters with several limits, in fixed or sliding windows, kept in this process's memory: all limits or none charged.
import { SweptMap } from '../../shared/swept.js';
import type { Count, CountsLimitsNow, LimitsSpec } from '../store.js';
import type { Counter } from '../counter.js';
import type { Limit } from '../../contract/limit.js';

/** One limit of one key, updated in place. */
class LimitSlot implements Count {
  count = 0;
  resetAt = 0;
  /** Sliding windows: the times of the requests counted, oldest first, from `head` on. */
  readonly times: number[] = [];
  head = 0;
}

/** A key's limits, and when the last of them is empty again (the map forgets the key then). */
interface KeyLimits {
  readonly slots: LimitSlot[];
  endsAt: number;
}

/** The state of a limit with nothing counted. */
const none: Count = Object.freeze({ count: 0, resetAt: 0 });

/** Times a sliding slot lets pile up before the front of its array is cut off. */
const COMPACT_AFTER = 32;

/** The memory store's counter of sliding windows and several limits: a slot per limit, a request's time 8 bytes. */
export class MemoryLimits implements CountsLimitsNow, Counter {
  readonly countsNow = true;
  readonly now = true;
  readonly reads = true;
  readonly #limits: readonly Limit[];
  readonly #sliding: boolean;
  readonly #longest: number;
  readonly #entries = new SweptMap<KeyLimits>((entry) => entry.endsAt);

  constructor(spec: LimitsSpec) {
    this.#limits = spec.limits;
    this.#sliding = spec.window === 'sliding';
    this.#longest = Math.max(...spec.limits.map((limit) => limit.windowMs));
  }

  /** Keys held, including those whose windows have all ended but that the sweep has not reached yet. */
  get size(): number {
    return this.#entries.size;
  }

  /** Counts a request of `key` when every limit allows it; answers the key's live state (read it at once). */
  countNow(key: string): readonly Count[] {
    return this.hit(key);
  }

  hit(key: string): readonly Count[] {
    const now = Date.now();
    const limits = this.#limits;
    let entry = this.#entries.get(key);
    // A new key's windows have not started: it is kept for the longest of them, until a request sets its end.
    if (entry === undefined) {
      const slots = Array.from({ length: limits.length }, () => new LimitSlot());
      entry = this.#entries.add(key, { slots, endsAt: now + this.#longest }, now);
    }
    const { slots } = entry;
    let allowed = true;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as LimitSlot;
      const { limit, windowMs } = limits[i] as Limit;
      if (this.#sliding) slide(slot, now - windowMs, windowMs);
      else if (now >= slot.resetAt) slot.count = 0;
      if (slot.count >= limit) allowed = false;
    }
    if (!allowed) {
      // Told in place, at no allocation: a full slot as over its limit, an empty one as a window from now.
      for (let i = 0; i < slots.length; i++) {
        const slot = slots[i] as LimitSlot;
        const { limit, windowMs } = limits[i] as Limit;
        if (slot.count >= limit) slot.count = limit + 1;
        else if (slot.count === 0) slot.resetAt = now + windowMs;
      }
      return slots;
    }
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as LimitSlot;
      const { windowMs } = limits[i] as Limit;
      if (this.#sliding) {
        slot.times.push(now);
        if (slot.count === 0) slot.resetAt = now + windowMs;
      } else if (slot.count === 0) slot.resetAt = now + windowMs;
      slot.count += 1;
      // A sliding slot is empty once its newest request has left; a fixed one when its window ends.
      const empty = this.#sliding ? now + windowMs : slot.resetAt;
      if (empty > entry.endsAt) entry.endsAt = empty;
    }
    return slots;
  }

  /** Each limit's state for `key`, read without counting: a new array. */
  peek(key: string): readonly Count[] {
    const now = Date.now();
    const entry = this.#entries.get(key);
    return this.#limits.map(({ limit, windowMs }, i) => {
      const slot = entry?.slots[i];
      if (!slot) return { count: 0, resetAt: 0 };
      if (!this.#sliding)
        return now < slot.resetAt ? { count: Math.min(slot.count, limit), resetAt: slot.resetAt } : none;
      const from = now - windowMs;
      const { times } = slot;
      // The first time counted after `from`, by bisection: times are in order.
      let lo = slot.head;
      let hi = times.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((times[mid] as number) <= from) lo = mid + 1;
        else hi = mid;
      }
      const count = times.length - lo;
      return count === 0 ? none : { count, resetAt: (times[lo] as number) + windowMs };
    });
  }

  /** Forgets `key`; returns whether it had a request counted in a window that has not ended. */
  reset(key: string): boolean {
    const counted = this.peek(key).some((count) => count.count > 0);
    this.#entries.delete(key);
    return counted;
  }
}

/** Drops the requests of a sliding slot made at or before `from`, and sets its count and the time it frees one. */
function slide(slot: LimitSlot, from: number, windowMs: number): void {
  const { times } = slot;
  let { head } = slot;
  while (head < times.length && (times[head] as number) <= from) head++;
  if (head >= COMPACT_AFTER && head * 2 >= times.length) {
    times.splice(0, head);
    head = 0;
  }
  slot.head = head;
  slot.count = times.length - head;
  if (slot.count > 0) slot.resetAt = (times[head] as number) + windowMs;
}
