// The memory store's limiter: fixed windows in a map this package owns, with no timer per key.
import { type RateLimiterAbstract, RateLimiterCompatibleAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { MAX_DURATION_MS } from '../../shared/check.js';
import { Checker, show } from '../../shared/check.js';
import { SweptMap } from '../../shared/swept.js';
import type { Count } from '../store.js';
import type { Counter, Counts } from '../counter.js';

const MAX_SECONDS = MAX_DURATION_MS / 1000;

/** Options of {@link MemoryLimiter}: rate-limiter-flexible's limiter options, less those it does not support. */
interface MemoryLimiterOptions {
  /** Points a key may consume in one window. Required. */
  points: number;
  /**
   * Seconds a window lasts from its first request, up to `MAX_DURATION_MS / 1000` (one year); 0 makes windows that
   * never end. Required.
   */
  duration: number;
  /**
   * Accepted for compatibility and returned by `getKey()`. Each limiter has a map of its own, so the prefix does
   * not change what is counted. Default: `'rlflx'`.
   */
  keyPrefix?: string;
  /** Not supported: only 0 is accepted. Default: `0`. */
  blockDuration?: 0;
  /** Not supported: only false is accepted. Default: `false`. */
  execEvenly?: false;
}

/** A key's counter. Updated in place, so that counting a request allocates nothing. */
class KeyCount implements Count {
  count: number;
  resetAt: number;

  constructor(count: number, resetAt: number) {
    this.count = count;
    this.resetAt = resetAt;
  }
}

const memoryLimiterCheck: Checker = new Checker('MemoryLimiter');

/**
 * Milliseconds of a duration given in seconds to a method: undefined or negative means the limiter's duration,
 * as in rate-limiter-flexible; 0 means no end. Throws a RangeError past one year or when not a number.
 */
function durationMs(seconds: number | undefined, fallback: number, what: string): number {
  const chosen = seconds === undefined || seconds < 0 ? fallback : seconds;
  const ms = chosen * 1000;
  // Written so that NaN fails too.
  if (!(ms <= MAX_DURATION_MS)) {
    const got = String(seconds);
    throw new RangeError(`MemoryLimiter: ${what} must be at most ${MAX_SECONDS} seconds (one year); got ${got}.`);
  }
  return ms;
}

/** rate-limiter-flexible's `msBeforeNext`: -1 for a counter that never expires. */
function msLeft(entry: KeyCount, now: number): number {
  return entry.resetAt === Infinity ? -1 : entry.resetAt - now;
}

/** The map's key: 7 and '7' are one key, as they are in rate-limiter-flexible's prefixed keys. */
function mapKey(key: string | number): string {
  return typeof key === 'string' ? key : String(key);
}

/**
 * A rate-limiter-flexible limiter that counts in this process's memory, in fixed windows: a key's window starts
 * with its first request and lasts `duration` seconds; once it has ended, the next request starts a new one.
 *
 * Unlike rate-limiter-flexible's RateLimiterMemory, it sets no timer per key, so windows, bans and blocks of any
 * length up to one year (`MAX_DURATION_MS`) end on time (a Node timer of 2^31 ms or more, about 24.8 days, fires
 * at once). The clock is `Date.now()`, read on every call. An ended window is removed when its key is next used,
 * or by a sweep that examines a couple of entries each time a key is added, so memory stays bounded without a
 * scan of the map. Entries that never expire (duration 0) stay until deleted.
 *
 * Its methods resolve and reject as RateLimiterMemory's do, except: `blockDuration` and `execEvenly` are not
 * supported (the constructor refuses them), `get()` resolves null once a window has ended, and there is no
 * `penalty()`, `reward()`, `block()` (they throw, as rate-limiter-flexible's abstract limiter does), `dump()` or
 * `restore()`. As a counter of the store contract, it counts with `count()` and reads with `peek()` and
 * `reset()`, each at once.
 *
 * rate-limiter-flexible declares `RateLimiterAbstract` in its types but does not export it, so this class extends
 * the exported `RateLimiterCompatibleAbstract`, which its wrappers (RateLimiterUnion, RLWrapperTimeouts, an
 * `insuranceLimiter`) accept, and implements every member `RateLimiterAbstract` declares.
 */
export class MemoryLimiter extends RateLimiterCompatibleAbstract implements RateLimiterAbstract, Counter {
  /** This limiter counts synchronously with {@link MemoryLimiter.countNow}. */
  readonly countsNow = true;
  readonly now = true;
  readonly reads = true;
  /** What `hit()` answers: the key's live counter, in one array reused, so that counting allocates nothing. */
  readonly #counts: Count[] = [];
  /** Used by `getKey()` only: each limiter has a map of its own, so the prefix changes nothing counted. */
  override readonly keyPrefix: string;
  #points = 0;
  #duration = 0;
  readonly #entries = new SweptMap<KeyCount>((entry) => entry.resetAt);

  /** Throws a `ListingLimitsError` naming the option when it cannot work (e.g. a duration over one year). */
  constructor(options: MemoryLimiterOptions) {
    super();
    this.points = options.points;
    this.duration = options.duration;
    const {
      keyPrefix = 'rlflx',
      blockDuration,
      execEvenly,
    } = options as {
      keyPrefix?: unknown;
      blockDuration?: unknown;
      execEvenly?: unknown;
    };
    if (typeof keyPrefix !== 'string')
      memoryLimiterCheck.invalid('keyPrefix', `must be a string; got ${show(keyPrefix)}.`);
    this.keyPrefix = keyPrefix;
    if (blockDuration !== undefined && blockDuration !== 0) {
      memoryLimiterCheck.invalid('blockDuration', 'is not supported by the memory store.');
    }
    if (execEvenly !== undefined && execEvenly !== false) {
      memoryLimiterCheck.invalid('execEvenly', 'is not supported by the memory store.');
    }
  }

  /** Points a key may consume in one window. */
  get points(): number {
    return this.#points;
  }

  set points(value: number) {
    if (!Number.isFinite(value)) memoryLimiterCheck.invalid('points', `must be a finite number; got ${show(value)}.`);
    this.#points = value;
  }

  /** Seconds a window lasts, from 0 (windows never end) to one year; a change applies to windows started after it. */
  get duration(): number {
    return this.#duration;
  }

  set duration(value: number) {
    if (typeof value !== 'number' || !(value >= 0 && value * 1000 <= MAX_DURATION_MS)) {
      const got = String(value);
      memoryLimiterCheck.invalid(
        'duration',
        `must be a number of seconds from 0 to ${MAX_SECONDS} (one year); got ${got}.`,
      );
    }
    this.#duration = value;
  }

  /** `duration` in milliseconds. */
  get msDuration(): number {
    return this.#duration * 1000;
  }

  /**
   * Not supported: the constructor refuses any value but 0, and the limiter never blocks on its own.
   * rate-limiter-flexible may copy a limiter's value here when this one is its `insuranceLimiter`.
   */
  override blockDuration = 0;
  /** Not supported: the constructor refuses any value but false, and calls are never delayed. */
  override execEvenly = false;

  /** Always 0, as `blockDuration` is not supported. */
  get msBlockDuration(): number {
    return 0;
  }

  /** Always 0, as `execEvenly` is not supported. */
  get execEvenlyMinDelayMs(): number {
    return 0;
  }

  /** The key as rate-limiter-flexible stores it: prefixed with `keyPrefix` when there is one. */
  getKey(key: string | number): string {
    return this.keyPrefix.length > 0 ? `${this.keyPrefix}:${key}` : String(key);
  }

  /**
   * The key of a stored key: `getKey()` undone. Kept because `RateLimiterAbstract`, what a store's factory returns,
   * declares it.
   */
  parseKey(rlKey: string): string {
    return this.keyPrefix.length > 0 ? rlKey.substring(this.keyPrefix.length + 1) : rlKey;
  }

  /** Keys held, including those whose window has ended but that the sweep has not reached yet. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * Counts one point for `key`, as `consume(key)` does, and returns the key's counter at once: the request is
   * allowed while `count <= points`, and its window ends at `resetAt`.
   *
   * The returned object is the live counter, not a copy, so that counting allocates nothing: read its fields at
   * once, before the next call on this limiter changes them.
   */
  countNow(key: string): Count {
    const now = Date.now();
    const entry = this.#entries.get(key);
    if (entry !== undefined && now < entry.resetAt) {
      entry.count += 1;
      return entry;
    }
    return this.#start(key, entry, 1, this.duration * 1000, now);
  }

  /**
   * Consumes points: resolves while the key's consumed points are at most `points`, and rejects with the
   * `RateLimiterRes` (remainingPoints 0) over it. `options.customDuration` (seconds) sets the length of a window
   * this call starts. Rejects with a RangeError for a customDuration over one year.
   */
  override consume(
    key: string | number,
    pointsToConsume = 1,
    options?: { customDuration?: number },
  ): Promise<RateLimiterRes> {
    let result: RateLimiterRes;
    try {
      result = this.#add(mapKey(key), pointsToConsume, options?.customDuration);
    } catch (error) {
      return Promise.reject(error);
    }
    return result.consumedPoints > this.points ? Promise.reject(result) : Promise.resolve(result);
  }

  /** Resolves with the key's counter (`isFirstInDuration` false), or null when it has none or its window has ended. */
  override get(key: string | number): Promise<RateLimiterRes | null> {
    const k = mapKey(key);
    const entry = this.#entries.get(k);
    const now = Date.now();
    if (entry === undefined) return Promise.resolve(null);
    if (entry.resetAt <= now) {
      this.#entries.delete(k);
      return Promise.resolve(null);
    }
    return Promise.resolve(this.#result(entry, now, false));
  }

  /**
   * Sets the key's consumed points for `secDuration` seconds from now, replacing its window: 0 means no end, a
   * negative or missing value the limiter's duration. Resolves with remainingPoints 0, as RateLimiterMemory does;
   * rejects with a RangeError for a duration over one year.
   */
  override set(key: string | number, points: number, secDuration: number): Promise<RateLimiterRes> {
    return this.#put(mapKey(key), points, secDuration, 'set(): secDuration');
  }

  /** Forgets the key; resolves true when it had a counter whose window had not ended. */
  override delete(key: string | number): Promise<boolean> {
    return Promise.resolve(this.reset(mapKey(key)));
  }

  /** {@link MemoryLimiter.countNow} as a counter answers. */
  hit(key: string): Counts {
    const counts = this.#counts;
    counts[0] = this.countNow(key);
    return counts;
  }

  /** The key's count, read without counting: a copy; 0 when it has none or its window has ended. */
  peek(key: string): Counts {
    const entry = this.#entries.get(key);
    if (entry === undefined || entry.resetAt <= Date.now()) return [{ count: 0, resetAt: 0 }];
    return [{ count: entry.count, resetAt: entry.resetAt }];
  }

  /** Forgets the key; true when it had a counter whose window had not ended. */
  reset(key: string): boolean {
    const entry = this.#entries.get(key);
    if (entry === undefined) return false;
    this.#entries.delete(key);
    return Date.now() < entry.resetAt;
  }

  /** What consume does: add to the current window, or start one with the points. */
  #add(key: string, points: number, customDuration: number | undefined): RateLimiterRes {
    const now = Date.now();
    const entry = this.#entries.get(key);
    if (entry !== undefined && now < entry.resetAt) {
      entry.count += points;
      return this.#result(entry, now, false);
    }
    // Checked only here: a duration matters only when it starts a window.
    const ms =
      customDuration === undefined ? this.duration * 1000 : durationMs(customDuration, this.duration, 'customDuration');
    return this.#result(this.#start(key, entry, points, ms, now), now, true);
  }

  #put(key: string, points: number, secDuration: number, what: string): Promise<RateLimiterRes> {
    let ms: number;
    try {
      ms = durationMs(secDuration, this.duration, what);
    } catch (error) {
      return Promise.reject(error);
    }
    const now = Date.now();
    const entry = this.#start(key, this.#entries.get(key), points, ms, now);
    return Promise.resolve(new RateLimiterRes(0, msLeft(entry, now), points, false));
  }

  /** Starts a window of `ms` (0: no end) for the key with `points`, reusing its ended entry when it has one. */
  #start(key: string, entry: KeyCount | undefined, points: number, ms: number, now: number): KeyCount {
    const resetAt = ms > 0 ? now + ms : Infinity;
    if (entry !== undefined) {
      entry.count = points;
      entry.resetAt = resetAt;
      return entry;
    }
    return this.#entries.add(key, new KeyCount(points, resetAt), now);
  }

  #result(entry: KeyCount, now: number, isFirstInDuration: boolean): RateLimiterRes {
    const consumed = entry.count;
    return new RateLimiterRes(Math.max(this.points - consumed, 0), msLeft(entry, now), consumed, isFirstInDuration);
  }
}
