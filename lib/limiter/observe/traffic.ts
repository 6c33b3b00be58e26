// The requests done in this process, each counted once: totals for the metrics, and the last hour, per minute.
import { type Outcome, OUTCOMES } from './metrics.js';
import type { TrafficSummary } from '../types.js';

const MINUTE_MS = 60_000;
const MINUTES = 60;
/** Refused clients kept per minute at the most; refusals of any more count under one `(others)` key. */
const CLIENTS_PER_MINUTE = 1000;
export const OTHER_CLIENTS = '(others)';

interface Minute {
  at: number;
  /** Endpoint → [allowed, refused]. */
  readonly endpoints: Map<string, [number, number]>;
  readonly refused: Map<string, number>;
}

/**
 * Every request done, counted once, into what is kept of them: the totals by endpoint and outcome, when the metrics
 * read them; and a ring of 60 minutes, once the operator's page asks for it (`on`). Until either is kept, `count` is
 * never called, and the request path pays one boolean test (`counting`).
 */
export class Traffic {
  /** Whether a request done is to be counted: the metrics are kept, or the last hour is. */
  counting: boolean;
  #hour = false;
  readonly #ring: Minute[] = [];
  readonly #endpoints: readonly string[];
  /** Endpoint → outcome → requests since the start; undefined without metrics. */
  readonly #totals: Map<string, Map<Outcome, number>> | undefined;

  constructor(endpoints: readonly string[], totals = false) {
    this.#endpoints = endpoints;
    this.#totals = totals ? new Map() : undefined;
    for (const endpoint of totals ? endpoints : []) this.#outcomes(endpoint);
    this.counting = totals;
  }

  /** Whether the last hour is kept: from the first time it is asked for on. */
  get on(): boolean {
    return this.#hour;
  }

  set on(value: boolean) {
    this.#hour = value;
    this.counting = value || this.#totals !== undefined;
  }

  #outcomes(endpoint: string): Map<Outcome, number> {
    const totals = this.#totals as Map<string, Map<Outcome, number>>;
    let outcomes = totals.get(endpoint);
    if (!outcomes) {
      outcomes = new Map(OUTCOMES.map((o) => [o, 0]));
      totals.set(endpoint, outcomes);
    }
    return outcomes;
  }

  /** Endpoint → outcome → requests since the start, every outcome of every endpoint counted so far (empty without). */
  totals(): ReadonlyMap<string, ReadonlyMap<Outcome, number>> {
    return this.#totals ?? new Map();
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
  count(endpoint: string, outcome: Outcome, client: { readonly key: string } | undefined): void {
    if (this.#totals) {
      const outcomes = this.#outcomes(endpoint);
      outcomes.set(outcome, (outcomes.get(outcome) as number) + 1);
    }
    if (!this.#hour) return;
    const refused = outcome === 'limited' || outcome === 'banned';
    if (!refused && outcome !== 'allowed' && outcome !== 'shadow_limited') return;
    const minute = this.#minute(Date.now());
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

  /** The last 60 minutes: every endpoint of the table, and the `top` clients refused most often. */
  summary(top = 10, now = Date.now()): TrafficSummary {
    const since = Math.floor(now / MINUTE_MS) - MINUTES + 1;
    const endpoints = new Map<string, [number, number]>(this.#endpoints.map((e) => [e, [0, 0]]));
    const refused = new Map<string, number>();
    for (const minute of this.#ring) {
      if (!minute || minute.at < since) continue;
      for (const [endpoint, [allowed, denied]] of minute.endpoints) {
        const sum = endpoints.get(endpoint) ?? [0, 0];
        endpoints.set(endpoint, [sum[0] + allowed, sum[1] + denied]);
      }
      for (const [key, n] of minute.refused) refused.set(key, (refused.get(key) ?? 0) + n);
    }
    return {
      endpoints: [...endpoints].map(([endpoint, [allowed, denied]]) => ({ endpoint, allowed, refused: denied })),
      refused: [...refused]
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .slice(0, top)
        .map(([key, count]) => ({ key, count })),
    };
  }
}
