// Option `metrics`: counts kept in plain numbers, registered on the app's prom-client Registry as its own metrics.
import { type Checker, show } from '../../shared/check.js';
import type { RecordCache } from '../../records/cache.js';
import type { Traffic } from './traffic.js';
import type { MetricsRegistry } from '../types.js';

/** Upper bounds of the store latency histogram, in seconds: from a local Redis to one at its timeout. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1] as const;

interface Value {
  readonly value: number;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly metricName?: string;
}

type MetricType = 'counter' | 'gauge' | 'histogram';

/** A metric as a Registry reads it; `registry.resetMetrics()` leaves it, as a counter only goes up. */
function metric(name: string, help: string, type: MetricType, values: () => Value[]) {
  const get = () => Promise.resolve({ name, help, type, values: values(), aggregator: 'sum' });
  return { name, help, type, aggregator: 'sum', get, reset: () => {} };
}

const LATENCY = 'listing_limits_store_duration_seconds';

/** The metrics of one middleware. */
export class Metrics {
  readonly #buckets = new Array<number>(BUCKETS.length).fill(0);
  #latencyCount = 0;
  #latencySum = 0;
  #cachedRefusals = 0;

  constructor(private readonly requests: Traffic) {}

  /** Registers the metrics: last, once every other option is known to work, so that a failed start leaves none. */
  register(check: Checker, registry: MetricsRegistry, inForce: RecordCache): void {
    const one = (value: number): Value[] => [{ value, labels: {} }];
    const metrics = [
      metric(
        'listing_limits_requests_total',
        'Requests through the middleware, by endpoint of the table and outcome.',
        'counter',
        () => this.#requests(),
      ),
      metric('listing_limits_active_bans', 'Bans in force, of the rules and of operators.', 'gauge', () =>
        one(inForce.bansInForce().length),
      ),
      metric('listing_limits_active_grants', 'Grants made at runtime and in force.', 'gauge', () =>
        one(inForce.grantsInForce().length),
      ),
      metric(
        LATENCY,
        'Time the store took to answer a call that went to it (counts, ban reads and writes).',
        'histogram',
        () => this.#histogram(),
      ),
      metric(
        'listing_limits_refusal_cache_hits_total',
        'Requests refused from the remembered refusals of a shared store, without a store command.',
        'counter',
        () => one(this.#cachedRefusals),
      ),
    ];
    try {
      for (const m of metrics) registry.registerMetric(m as never);
    } catch (error) {
      check.invalid(
        'options.metrics',
        `could not take the metrics (${(error as Error).message}): give each middleware a Registry of its own.`,
      );
    }
  }

  cachedRefusal(): void {
    this.#cachedRefusals++;
  }

  latency(seconds: number): void {
    this.#latencyCount++;
    this.#latencySum += seconds;
    const i = BUCKETS.findIndex((le) => seconds <= le);
    if (i >= 0) this.#buckets[i] = (this.#buckets[i] as number) + 1;
  }

  #requests(): Value[] {
    const values: Value[] = [];
    for (const [endpoint, outcomes] of this.requests.totals ?? []) {
      for (const [outcome, value] of outcomes) values.push({ value, labels: { endpoint, outcome } });
    }
    return values;
  }

  #histogram(): Value[] {
    let cumulative = 0;
    const values: Value[] = BUCKETS.map((le, i) => {
      cumulative += this.#buckets[i] as number;
      return { value: cumulative, labels: { le }, metricName: `${LATENCY}_bucket` };
    });
    values.push({ value: this.#latencyCount, labels: { le: '+Inf' }, metricName: `${LATENCY}_bucket` });
    values.push({ value: this.#latencySum, labels: {}, metricName: `${LATENCY}_sum` });
    values.push({ value: this.#latencyCount, labels: {}, metricName: `${LATENCY}_count` });
    return values;
  }
}

/** Checks the `metrics` option: a prom-client Registry, or undefined. */
export function checkMetrics(check: Checker, metrics: unknown): MetricsRegistry | undefined {
  if (metrics === undefined) return undefined;
  if (typeof metrics !== 'object' || typeof (metrics as Partial<MetricsRegistry> | null)?.registerMetric !== 'function')
    check.invalid('options.metrics', `must be a prom-client Registry (e.g. \`new Registry()\`); got ${show(metrics)}.`);
  return metrics as MetricsRegistry;
}
