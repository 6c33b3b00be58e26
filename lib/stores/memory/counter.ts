// The memory store's one counter: fixed or sliding windows, one limit or several, each key's counts kept in place.
import { SweptMap } from '../../shared/swept.js';
import type { Count, CountsLimitsNow, LimitsSpec } from '../store.js';
import type { Counter, Counts } from '../counter.js';
import type { Limit } from '../../contract/limit.js';

/** One limit's count of one key, updated in place: what `hit()` answers. */
class KeyCount implements Count {
  count = 0;
  resetAt = 0;
}

/** A count in a sliding window, with the times of its requests, oldest first from `head` on, 8 bytes each. */
class SlidingCount extends KeyCount {
  readonly times: number[] = [];
  head = 0;
}

/** Times a sliding count lets pile up before the front of its array is cut off. */
const COMPACT_AFTER = 32;

/**
 * A counter in this process's memory, with no timer: ended keys are swept a couple per key added. With `everyRequest`
 * (one limit in fixed windows) it counts refused requests too, as rate-limiter-flexible does; else all limits or none.
 */
export class MemoryCounter implements Counter, CountsLimitsNow {
  readonly now = true;
  readonly reads = true;
  readonly countsNow = true;
  /** The limits, read at each request: a limiter's `duration` changes the windows started after it. */
  readonly #limits: readonly Limit[];
  readonly #sliding: boolean;
  readonly #entries = new SweptMap<KeyCount[]>((slots) => this.#endsAt(slots));

  constructor(
    spec: LimitsSpec,
    private readonly everyRequest = false,
  ) {
    this.#limits = spec.limits;
    this.#sliding = spec.window === 'sliding';
  }

  /** Keys held, including those whose windows have all ended but that the sweep has not reached yet. */
  get size(): number {
    return this.#entries.size;
  }

  countNow(key: string): Counts {
    return this.hit(key);
  }

  /** Counts a request of `key`; answers the key's live state (read it at once), allocating nothing for a known key. */
  hit(key: string): Counts {
    return this.everyRequest ? this.#hitOne(key) : this.#hitAll(key);
  }

  /** One limit in fixed windows: a window starts with the first request after the last one ended. */
  #hitOne(key: string): Counts {
    const now = Date.now();
    const slots = this.#entries.get(key);
    const slot = slots?.[0];
    if (slot !== undefined && now < slot.resetAt) slot.count += 1;
    else this.start(key, 1, (this.#limits[0] as Limit).windowMs, now);
    return slots ?? (this.#entries.get(key) as Counts);
  }

  /** All limits or none. */
  #hitAll(key: string): Counts {
    const now = Date.now();
    const limits = this.#limits;
    let slots = this.#entries.get(key);
    const known = slots !== undefined;
    slots ??= limits.map(() => (this.#sliding ? new SlidingCount() : new KeyCount()));
    let allowed = true;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as KeyCount;
      const { limit, windowMs } = limits[i] as Limit;
      if (this.#sliding) slide(slot as SlidingCount, now - windowMs, windowMs);
      else if (now >= slot.resetAt) slot.count = 0;
      if (slot.count >= limit) allowed = false;
    }
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as KeyCount;
      const { limit, windowMs } = limits[i] as Limit;
      if (!allowed) {
        // Told in place: a full count as over its limit, an empty one as a window from now.
        if (slot.count >= limit) slot.count = limit + 1;
        else if (slot.count === 0) slot.resetAt = now + windowMs;
        continue;
      }
      if (slot.count === 0) slot.resetAt = now + windowMs;
      slot.count += 1;
      if (this.#sliding) (slot as SlidingCount).times.push(now);
    }
    if (!known) this.#entries.add(key, slots, now);
    return slots;
  }

  /** Each limit's state for `key`, read without counting: a new array. */
  peek(key: string): Counts {
    const now = Date.now();
    const slots = this.#entries.get(key);
    return this.#limits.map(({ limit, windowMs }, i) => {
      const slot = slots?.[i];
      if (slot === undefined) return { count: 0, resetAt: 0 };
      if (!this.#sliding) {
        if (now >= slot.resetAt) return { count: 0, resetAt: 0 };
        return { count: this.everyRequest ? slot.count : Math.min(slot.count, limit), resetAt: slot.resetAt };
      }
      const { times, head } = slot as SlidingCount;
      // The first time counted after the window's start, by bisection: times are in order.
      let lo = head;
      let hi = times.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((times[mid] as number) <= now - windowMs) lo = mid + 1;
        else hi = mid;
      }
      const count = times.length - lo;
      return count === 0 ? { count: 0, resetAt: 0 } : { count, resetAt: (times[lo] as number) + windowMs };
    });
  }

  /** Forgets `key`; returns whether it had a request counted in a window that has not ended. */
  reset(key: string): boolean {
    const counted = this.peek(key).some((count) => count.count > 0);
    this.#entries.delete(key);
    return counted;
  }

  /** The first count of `key` while its window lasts, for rate-limiter-flexible's methods. */
  live(key: string, now: number): KeyCount | undefined {
    const slot = this.#entries.get(key)?.[0];
    return slot !== undefined && now < slot.resetAt ? slot : undefined;
  }

  /** Sets `key`'s first count to `count` for a window of `ms` (0: no end), as rate-limiter-flexible's `set()`. */
  start(key: string, count: number, ms: number, now: number): KeyCount {
    const slots = this.#entries.get(key);
    const slot = slots?.[0] ?? new KeyCount();
    slot.count = count;
    slot.resetAt = ms > 0 ? now + ms : Infinity;
    // Added once set: the sweep drops an entry that has ended.
    if (slots === undefined) this.#entries.add(key, [slot], now);
    return slot;
  }

  /** When a key holds nothing any more: a fixed window's end, a sliding one's newest request's. */
  #endsAt(slots: readonly KeyCount[]): number {
    let end = 0;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i] as KeyCount;
      const newest = this.#sliding ? (slot as SlidingCount).times.at(-1) : undefined;
      end = Math.max(end, newest === undefined ? slot.resetAt : newest + (this.#limits[i] as Limit).windowMs);
    }
    return end;
  }
}

/** Drops the requests of a sliding count made at or before `from`, and sets its count and the time it frees one. */
function slide(slot: SlidingCount, from: number, windowMs: number): void {
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
