// The requests done in this process, each counted once: totals for the metrics, and the last hour, per minute.
import type { TrafficMinute, TrafficSummary } from '../types.js';
import { countIn, type Minute, MINUTE_MS, MINUTES, newMinute, TOP_CLIENTS } from '../../stores/traffic.js';
import type { SiteTraffic } from './site.js';

/** What happened to a request, as `listing_limits_requests_total` labels it. */
const OUTCOMES = ['allowed', 'limited', 'banned', 'shadow_limited', 'store_unavailable'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** The `endpoint` label of a banned request that matched no row of the table. */
export const NO_ENDPOINT = '(none)';

// The totals by endpoint and outcome (with metrics), a ring of 60 minutes (once the operator's page asks for it), and
// a shared store's traffic from the start. Until one is kept, the request path pays one boolean test (`counting`).
export class Traffic {
  counting: boolean;
  #hour = false;
  readonly #ring: Minute[] = [];
  readonly #endpoints: readonly string[];
  /** Endpoint → outcome → requests since the start, with metrics. */
  readonly totals: Map<string, Map<Outcome, number>> | undefined;

  constructor(
    endpoints: readonly string[],
    totals = false,
    readonly site?: SiteTraffic,
  ) {
    this.#endpoints = endpoints;
    this.totals = totals ? new Map() : undefined;
    for (const endpoint of totals ? endpoints : []) this.#outcomes(endpoint);
    this.counting = totals || site !== undefined;
  }

  /** From the first time the last hour is asked for. */
  keepHour(): void {
    this.#hour = true;
    this.counting = true;
    this.site?.read();
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

  #minute(at: number): Minute {
    const slot = at % MINUTES;
    let minute = this.#ring[slot];
    if (!minute || minute.at !== at) {
      minute = newMinute(at);
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
    if (!this.#hour && !this.site) return;
    const refused = outcome === 'limited' || outcome === 'banned';
    if (!refused && outcome !== 'allowed' && outcome !== 'shadow_limited') return;
    const at = Math.floor((now ?? Date.now()) / MINUTE_MS);
    // This instance's own hour is kept once asked for (its client page's refusals); the site's from the start.
    if (this.#hour) countIn(this.#minute(at), endpoint, refused, client?.key);
    if (this.site) countIn(this.site.minute(at), endpoint, refused, client?.key);
  }

  /** How often `key` was refused in the last 60 minutes (0 for a client counted among the others). */
  refusalsOf(key: string, now = Date.now()): number {
    const since = Math.floor(now / MINUTE_MS) - MINUTES + 1;
    let n = 0;
    for (const minute of this.#ring) if (minute && minute.at >= since) n += minute.refused.get(key) ?? 0;
    return n;
  }

  /**
   * The last 60 minutes, oldest first: per endpoint, all together, and the `top` clients refused most often. With a
   * shared store's traffic, every instance's as last read, with this one's since.
   */
  summary(top = TOP_CLIENTS, now = Date.now()): TrafficSummary {
    const site = this.site?.hour;
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
    const refused = new Map(site?.refused);
    for (const minute of site?.minutes ?? this.#ring) {
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
      instances: site?.instances,
    };
  }
}
