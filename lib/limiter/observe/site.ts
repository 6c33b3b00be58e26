// This instance's part of a shared store's traffic: its counts added every interval, the whole site's hour read back.
import { RuntimeStateError } from '../../shared/errors.js';
import type { OnError } from '../../shared/hooks.js';
import { CallBound } from '../../stores/call-bound.js';
import { MINUTE_MS, MINUTES, type Minute, newMinute, type SiteHour, type TrafficStore } from '../../stores/traffic.js';

interface SiteContext {
  /** The endpoints the hour shows; another middleware's on the same prefix are left out. */
  readonly endpoints: ReadonlySet<string>;
  readonly callTimeoutMs: number;
  readonly report: OnError;
  /** Tells an entry of the store's traffic that was not the store's own, once. */
  readonly skipped: (entry: string, problem: string) => void;
}

/**
 * Counts wait here until the next flush, one script call every interval, off the request path. A flush that fails
 * drops its counts; the second in a row is told to `onError`, once until one succeeds.
 */
export class SiteTraffic {
  #pending = new Map<number, Minute>();
  #sending: readonly Minute[] = [];
  #hour: SiteHour | undefined;
  #reading = false;
  #flushing = false;
  #failures = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly store: TrafficStore,
    private readonly context: SiteContext,
  ) {}

  /** The minute `at` of the counts not yet sent. */
  minute(at: number): Minute {
    let minute = this.#pending.get(at);
    if (!minute) this.#pending.set(at, (minute = newMinute(at)));
    return minute;
  }

  start(): void {
    this.#timer ??= setInterval(() => void this.flush(), this.store.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** From the first time the hour is asked for, each flush reads it too; the first at once. */
  read(): void {
    if (this.#reading) return;
    this.#reading = true;
    void this.flush();
  }

  /** Sends the counts of the last hour, bounded by the store's `callTimeoutMs`; never rejects. */
  async flush(now = Date.now()): Promise<void> {
    if (this.#flushing) return;
    this.#flushing = true;
    const last = Math.floor(now / MINUTE_MS);
    // A minute past this one (the clock was set back) or before the hour is no part of it.
    this.#sending = [...this.#pending.values()].filter((m) => m.at <= last && m.at > last - MINUTES);
    this.#pending = new Map();
    const { callTimeoutMs, skipped, report } = this.context;
    try {
      const added = this.store.add(this.#sending, this.#reading ? last : undefined, skipped);
      const hour = await new CallBound('listing-limits traffic', callTimeoutMs).race(added);
      if (hour) this.#hour = this.#ours(hour);
      this.#failures = 0;
    } catch (error) {
      if (++this.#failures === 2) {
        const message = "this instance's traffic was not added to the store twice in a row: the hour misses it.";
        report(new RuntimeStateError('ERR_STATE_WRITE', message, { cause: error }), undefined);
      }
    } finally {
      this.#sending = [];
      this.#flushing = false;
    }
  }

  #ours(hour: SiteHour): SiteHour {
    const { endpoints } = this.context;
    for (const minute of hour.minutes) {
      for (const endpoint of minute.endpoints.keys()) if (!endpoints.has(endpoint)) minute.endpoints.delete(endpoint);
    }
    return hour;
  }

  /** The site's hour as last read, with this instance's counts since; undefined before the first read. */
  get hour(): { minutes: Minute[]; refused: ReadonlyMap<string, number>; instances: number } | undefined {
    const hour = this.#hour;
    if (!hour) return undefined;
    const minutes = [...hour.minutes, ...this.#sending, ...this.#pending.values()];
    return { minutes, refused: hour.refused, instances: hour.instances };
  }
}
