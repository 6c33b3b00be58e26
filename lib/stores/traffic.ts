// The requests of one minute, as an instance counts them and adds them to a shared store's traffic.

export const MINUTE_MS = 60_000;
/** The minutes of the last hour that the operator's page and `traffic()` show. */
export const MINUTES = 60;
/** Refused clients kept per minute at the most; refusals of any more count under one `(others)` key. */
const CLIENTS_PER_MINUTE = 1000;
export const OTHER_CLIENTS = '(others)';
/** A shared store's: its read sums the hour's clients in one script, which Redis runs with nothing else. */
export const STORED_CLIENTS_PER_MINUTE = 100;
/** The clients refused most often that a summary shows. */
export const TOP_CLIENTS = 10;

/** One minute's requests: per endpoint `[allowed, refused]`, and the refusals of each client key. */
export interface Minute {
  /** The minute's number: epoch ms / 60,000, rounded down. */
  readonly at: number;
  /** Endpoint → `[allowed, refused]`. */
  readonly endpoints: Map<string, [number, number]>;
  /** Client key → refusals. */
  readonly refused: Map<string, number>;
}

export const newMinute = (at: number): Minute => ({ at, endpoints: new Map(), refused: new Map() });

/** Counts `n` requests of an endpoint in `minute`; a refused one for `key` too, unless it is undefined. */
export function countIn(minute: Minute, endpoint: string, refused: boolean, key: string | undefined, n = 1): void {
  let counts = minute.endpoints.get(endpoint);
  if (!counts) {
    counts = [0, 0];
    minute.endpoints.set(endpoint, counts);
  }
  counts[refused ? 1 : 0] += n;
  if (!refused || key === undefined) return;
  const kept = minute.refused.has(key) || minute.refused.size < CLIENTS_PER_MINUTE ? key : OTHER_CLIENTS;
  minute.refused.set(kept, (minute.refused.get(kept) ?? 0) + n);
}

/** The last hour of every instance that shares a store, as one of them read it when it added its own counts. */
export interface SiteHour {
  /** Instances that added their counts within their last three intervals, this one included. */
  readonly instances: number;
  /** The minutes of the hour (their `refused` empty): per endpoint, every instance's requests. */
  readonly minutes: readonly Minute[];
  /** The clients refused most often in the hour, most first, with their refusals. */
  readonly refused: ReadonlyMap<string, number>;
}

/** A shared store's traffic: each instance adds its minutes in one call every `intervalMs`, and may read the hour. */
export interface TrafficStore {
  /** How often each instance adds its counts (ms). */
  readonly intervalMs: number;
  /**
   * Adds `minutes` (those of the last hour only) and marks this instance alive for three intervals. With `read`, the
   * number of the hour's last minute, answers the hour; `skipped` is told each entry found in the store that was not
   * the store's own (never thrown).
   */
  add(
    minutes: readonly Minute[],
    read: number | undefined,
    skipped: (entry: string, problem: string) => void,
  ): Promise<SiteHour | undefined>;
}
