// An endpoint compiled once for the request path: its counter in the store and its precomputed header strings.
import { type HeaderTemplate, headerTemplate } from '../contract/headers.js';
import { type Counter, type StoreParts, timed } from '../stores/counter.js';
import { memoryCounter } from '../stores/memory/store.js';
import { Resilient } from '../stores/resilient.js';
import type { LimitsSpec } from '../stores/store.js';
import type { Waiting } from '../stores/waiting.js';
import type { Limit } from '../contract/limit.js';

export type CompiledEndpoint = ReturnType<typeof compileEndpoint>;
/** One limit of an endpoint, with the header strings of its policy. */
export type CompiledLimit = Limit & { readonly headers: HeaderTemplate };

/** Makes a middleware's counter of a spec. */
export type CounterOf = (spec: LimitsSpec) => Counter;

/**
 * A middleware's counters: the store's, timed when the metrics are kept, and resilient (remembered refusals, and
 * with `waiting` the deadline, breaker and fallback) unless the store counts in this process and cannot fail.
 */
export function makeCounters(
  parts: StoreParts,
  waiting: Waiting | undefined,
  latency: ((seconds: number) => void) | undefined,
): CounterOf {
  return (spec) => {
    let counter = parts.counter(spec);
    if (latency) counter = timed(counter, latency);
    if (counter.now && !waiting) return counter;
    const fallback = waiting?.onFailure === 'memory' ? memoryCounter(spec) : undefined;
    return new Resilient(spec, counter, waiting, fallback);
  };
}

/** The spec of a counter of one limit in fixed windows. */
export function fixedSpec(name: string, limit: number, windowMs: number): LimitsSpec {
  return { name, window: 'fixed', limits: [{ limit, windowMs }] };
}

/** The one way an endpoint is compiled, for the table's rows and for granted variants alike. */
export function compileEndpoint(counterOf: CounterOf, spec: LimitsSpec) {
  const { name, window, limits } = spec;
  const several = limits.length > 1;
  const compiled = limits.map(({ limit, windowMs }): CompiledLimit => ({
    limit,
    windowMs,
    // Each policy of an endpoint of several limits is named by its window, so that the IETF fields tell them apart.
    headers: headerTemplate(several ? `${name} per ${windowMs / 1000}s` : name, limit, windowMs),
  }));
  const first = compiled[0] as CompiledLimit;
  return {
    /** `<METHOD> <path>`, with its grant for a granted variant. */
    name,
    window,
    /** One per row, in table order: one for most endpoints. */
    limits: compiled,
    counter: counterOf(spec),
    /** The first limit, as `req.rateLimit` and the headers show it for an endpoint of one limit. */
    limit: first.limit,
    headers: first.headers,
  };
}
