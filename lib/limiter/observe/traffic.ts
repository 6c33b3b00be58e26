// The requests done in this process, each counted once: totals for the metrics, and the last hour, per minute.
import type { TrafficMinute, TrafficSummary } from '../types.js';

const MINUTE_MS = 60_000;
const MINUTES = 60;
/** Refused clients kept per minute at the most; refusals of any more count under one `(others)` key. */
const CLIENTS_PER_MINUTE = 1000;
export const OTHER_CLIENTS = '(others)';

/** What happened to a request, as `listing_limits_requests_total` labels it. */
const OUTCOMES = ['allowed', 'limited', 'banned', 'shadow_limited', 'store_unavailable'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** The `endpoint` label of a banned request that matched no row of the table. */
export const NO_ENDPOINT = '(none)';

interface Minute {
  at: number;
  /** Endpoint → [allowed, refused]. */
  readonly endpoints: Map<string, [number, number]>;
  readonly refused: Map<string, number>;
}

// The totals by endpoint and outcome (with metrics) and a ring of 60 minutes (once the operator's page asks for it).
// Until either is kept, the request path pays one boolean test (`counting`).
export class Traffic {
  counting: boolean;
  #hour = false;
  readonly #ring: Minute[] = [];
  readonly #endpoints: readonly string[];
  /** Endpoint → outcome → requests since the start, with metrics. */
  readonly totals: Map<string, Map<Outcome, number>> | undefined;

  constructor(endpoints: readonly string[], totals = false) {
    this.#endpoints = endpoints;
    this.totals = totals ? new Map() : undefined;
    for (const endpoint of totals ? endpoints : []) this.#outcomes(endpoint);
    this.counting = totals;
  }

  /** From the first time the last hour is asked for. */
  keepHour(): void {
    this.#hour = true;
    this.counting = true;
  }

  #outcomes(endpoint: string): Map<Outcome, number> {
    const totals = this.totals as Map<string, Map<Outcome, number>>;
    let outcomes = totals.get(endpoint);
    if (!outcomes) {
      outcomes = new Map(OUTCOMES.map((o) => [o, 0]));
      totals.set(endpoint, outcomes);
    }
    return outcomes;
  }

  #minute(now: number): Minute {
    const at = Math.floor(now / MINUTE_MS);
    const slot = at % MINUTES;
    let minute = this.#ring[slot];
    if (!minute || minute.at !== at) {
      minute = { at, endpoints: new Map(), refused: new Map() };
      this.#ring[slot] = minute;
    }
    return minute;
  }

  /** Counts a request; `client` is undefined for one that failed before it was identified (never a refused one). */
  count(endpoint: string, outcome: Outcome, client: { readonly key: string } | undefined, now?: number): void {
    if (this.totals) {
      const outcomes = this.#outcomes(endpoint);
      outcomes.set(outcome, (outcomes.get(outcome) as number) + 1);
    }
    if (!this.#hour) return;
    const refused = outcome === 'limited' || outcome === 'banned';
    if (!refused && outcome !== 'allowed' && outcome !== 'shadow_limited') return;
    const minute = this.#minute(now ?? Date.now());
    let counts = minute.endpoints.get(endpoint);
    if (!counts) {
      counts = [0, 0];
      minute.endpoints.set(endpoint, counts);
    }
    counts[refused ? 1 : 0]++;
    if (!refused || !client) return;
    const { key } = client;
    const kept = minute.refused.has(key) || minute.refused.size < CLIENTS_PER_MINUTE ? key : OTHER_CLIENTS;
    minute.refused.set(kept, (minute.refused.get(kept) ?? 0) + 1);
  }

  /** How often `key` was refused in the last 60 minutes (0 for a client counted among the others). */
  refusalsOf(key: string, now = Date.now()): number {
    const since = Math.floor(now / MINUTE_MS) - MINUTES + 1;
    let n = 0;
    for (const minute of this.#ring) if (minute && minute.at >= since) n += minute.refused.get(key) ?? 0;
    return n;
  }

  /** The last 60 minutes, oldest first: per endpoint, all together, and the `top` clients refused most often. */
  summary(top = 10, now = Date.now()): TrafficSummary {
    const since = Math.floor(now / MINUTE_MS) - MINUTES + 1;
    // Endpoint → [allowed, refused] of each minute; a minute the ring does not hold counted nothing.
    const perMinute = (): [number, number][] => Array.from({ length: MINUTES }, () => [0, 0]);
    const add = (counts: [number, number][], i: number, allowed: number, denied: number) => {
      const sums = counts[i] as [number, number];
      sums[0] += allowed;
      sums[1] += denied;
    };
    const endpoints = new Map(this.#endpoints.map((e) => [e, perMinute()]));
    const all = perMinute();
    const refused = new Map<string, number>();
    for (const minute of this.#ring) {
      // A minute past this one (the clock was set back) is no part of this hour.
      if (!minute || minute.at < since || minute.at >= since + MINUTES) continue;
      const i = minute.at - since;
      for (const [endpoint, [allowed, denied]] of minute.endpoints) {
        let counts = endpoints.get(endpoint);
        if (!counts) endpoints.set(endpoint, (counts = perMinute()));
        add(counts, i, allowed, denied);
        add(all, i, allowed, denied);
      }
      for (const [key, n] of minute.refused) refused.set(key, (refused.get(key) ?? 0) + n);
    }
    const minutes = (counts: [number, number][]): TrafficMinute[] =>
      counts.map(([allowed, denied], i) => ({ at: new Date((since + i) * MINUTE_MS), allowed, refused: denied }));
    const sum = (list: readonly TrafficMinute[], of: 'allowed' | 'refused') => list.reduce((n, m) => n + m[of], 0);
    return {
      endpoints: [...endpoints].map(([endpoint, counts]) => {
        const series = minutes(counts);
        return { endpoint, allowed: sum(series, 'allowed'), refused: sum(series, 'refused'), minutes: series };
      }),
      refused: [...refused]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, top)
        .map(([key, count]) => ({ key, count })),
      minutes: minutes(all),
    };
  }
}
