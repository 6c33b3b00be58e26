// The memory store's limiter: a rate-limiter-flexible limiter of fixed windows in a map, with no timer per key.
import { type RateLimiterAbstract, RateLimiterCompatibleAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { Checker, MAX_DURATION_MS, show } from '../../shared/check.js';
import type { Count } from '../store.js';
import { MemoryCounter } from './counter.js';

const MAX_SECONDS = MAX_DURATION_MS / 1000;

/** Options of {@link MemoryLimiter}: rate-limiter-flexible's limiter options, less those it does not support. */
interface MemoryLimiterOptions {
  /** Points a key may consume in one window. Required. */
  points: number;
  /** Seconds a window lasts from its first request, up to one year; 0 for windows that never end. Required. */
  duration: number;
  /** Only what `getKey()` returns: each limiter has a map of its own. Default: `'rlflx'`. */
  keyPrefix?: string;
  /** Not supported: only 0 is accepted. Default: `0`. */
  blockDuration?: 0;
  /** Not supported: only false is accepted. Default: `false`. */
  execEvenly?: false;
}

const memoryLimiterCheck: Checker = new Checker('MemoryLimiter');

/** A duration in seconds as milliseconds: none or negative is `fallback`, 0 no end; a RangeError past a year. */
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
function msLeft(count: Count, now: number): number {
  return count.resetAt === Infinity ? -1 : count.resetAt - now;
}

/**
 * RateLimiterMemory's methods over fixed windows, without a timer per key (a Node timer of 24.8 days or more fires at
 * once), so windows of up to a year end on time; ended windows are swept a couple per key added. No `blockDuration`,
 * `execEvenly`, `penalty()`, `reward()` or `block()`. rate-limiter-flexible does not export `RateLimiterAbstract`.
 */
export class MemoryLimiter extends RateLimiterCompatibleAbstract implements RateLimiterAbstract {
  /** This limiter counts synchronously with {@link MemoryLimiter.countNow}. */
  readonly countsNow = true;
  /** Used by `getKey()` only: each limiter has a map of its own, so the prefix changes nothing counted. */
  override readonly keyPrefix: string;
  #points = 0;
  #duration = 0;
  /** The one limit of the counter, whose window follows `duration`. */
  readonly #limit = { limit: 0, windowMs: 0 };
  readonly #counter = new MemoryCounter({ name: '', window: 'fixed', limits: [this.#limit] }, true);

  /** Throws a `ListingLimitsError` naming the option when it cannot work (e.g. a duration over one year). */
  constructor(options: MemoryLimiterOptions) {
    super();
    this.points = options.points;
    this.duration = options.duration;
    const { keyPrefix = 'rlflx', blockDuration, execEvenly }: Record<string, unknown> = { ...options };
    if (typeof keyPrefix !== 'string')
      memoryLimiterCheck.invalid('keyPrefix', `must be a string; got ${show(keyPrefix)}.`);
    this.keyPrefix = keyPrefix;
    if (blockDuration !== undefined && blockDuration !== 0)
      memoryLimiterCheck.invalid('blockDuration', 'is not supported by the memory store.');
    if (execEvenly !== undefined && execEvenly !== false)
      memoryLimiterCheck.invalid('execEvenly', 'is not supported by the memory store.');
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
    this.#limit.windowMs = value * 1000;
  }

  /** `duration` in milliseconds. */
  get msDuration(): number {
    return this.#duration * 1000;
  }

  /** Not supported: only 0 (rate-limiter-flexible may copy a value here for an `insuranceLimiter`). */
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

  /** `getKey()` undone, as `RateLimiterAbstract` declares it. */
  parseKey(rlKey: string): string {
    return this.keyPrefix.length > 0 ? rlKey.substring(this.keyPrefix.length + 1) : rlKey;
  }

  /** Keys held, including those whose window has ended but that the sweep has not reached yet. */
  get size(): number {
    return this.#counter.size;
  }

  /** Counts one point for `key`, as `consume(key)` does, at once; answers the live counter (read it at once). */
  countNow(key: string): Count {
    return this.#counter.hit(key)[0] as Count;
  }

  /** Resolves within `points`, else rejects with the `RateLimiterRes`; `customDuration` for a window it starts. */
  override consume(
    key: string | number,
    pointsToConsume = 1,
    options?: { customDuration?: number },
  ): Promise<RateLimiterRes> {
    const k = String(key);
    const now = Date.now();
    let count = this.#counter.live(k, now);
    const first = count === undefined;
    if (count) count.count += pointsToConsume;
    else {
      const custom = options?.customDuration;
      try {
        // Checked only here: a duration matters only when it starts a window.
        const ms = custom === undefined ? this.msDuration : durationMs(custom, this.duration, 'customDuration');
        count = this.#counter.start(k, pointsToConsume, ms, now);
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const result = this.#result(count, now, first);
    return result.consumedPoints > this.points ? Promise.reject(result) : Promise.resolve(result);
  }

  /** Resolves with the key's counter (`isFirstInDuration` false), or null when it has none or its window has ended. */
  override get(key: string | number): Promise<RateLimiterRes | null> {
    const now = Date.now();
    const live = this.#counter.live(String(key), now);
    return Promise.resolve(live ? this.#result(live, now, false) : null);
  }

  /** Sets the key's points for `secDuration` seconds (0: no end; negative: `duration`), as RateLimiterMemory does. */
  override set(key: string | number, points: number, secDuration: number): Promise<RateLimiterRes> {
    let ms: number;
    try {
      ms = durationMs(secDuration, this.duration, 'set(): secDuration');
    } catch (error) {
      return Promise.reject(error);
    }
    const now = Date.now();
    const count = this.#counter.start(String(key), points, ms, now);
    return Promise.resolve(new RateLimiterRes(0, msLeft(count, now), points, false));
  }

  /** Forgets the key; resolves true when it had a counter whose window had not ended. */
  override delete(key: string | number): Promise<boolean> {
    const k = String(key);
    const live = this.#counter.live(k, Date.now()) !== undefined;
    this.#counter.reset(k);
    return Promise.resolve(live);
  }

  #result(count: Count, now: number, isFirstInDuration: boolean): RateLimiterRes {
    const consumed = count.count;
    return new RateLimiterRes(Math.max(this.points - consumed, 0), msLeft(count, now), consumed, isFirstInDuration);
  }
}
