// An endpoint compiled once for the request path: its counter in the store and its precomputed header strings.
import type { Checker } from '../shared/check.js';
import { Counter, Limits } from '../stores/counter.js';
import { type HeaderTemplate, headerTemplate } from '../contract/headers.js';
import { show } from '../shared/check.js';
import type { CounterSpec, Store } from '../stores/store.js';
import type { Waiting } from '../stores/waiting.js';
import type { Limit, WindowKind } from '../contract/limit.js';

/** One limit of an endpoint, with the header strings of its policy. */
export interface CompiledLimit extends Limit {
  readonly headers: HeaderTemplate;
}

export interface CompiledEndpoint {
  /** `<METHOD> <path>`, with its grant for a granted variant. */
  readonly name: string;
  readonly window: WindowKind;
  /** The endpoint's limits, one per row, in table order: one for most endpoints. */
  readonly limits: readonly CompiledLimit[];
  /**
   * Counts a request: a {@link Counter} (one limit in fixed windows, any rate-limiter-flexible limiter) answers its
   * one count, {@link Limits} (sliding windows, or several limits) answers each limit's.
   */
  readonly counter: Counter | Limits;
  /** The first limit, as `req.rateLimit` and the headers show it for an endpoint of one limit. */
  readonly limit: number;
  readonly windowMs: number;
  readonly headers: HeaderTemplate;
}

/** What an endpoint is compiled from: its name, its window kind, and its limits. */
interface EndpointSpec {
  readonly name: string;
  readonly window: WindowKind;
  readonly limits: readonly Limit[];
}

/** Asks the store for a counter, refusing at once a store that gives no rate-limiter-flexible limiter. */
export function counterOf(check: Checker, store: Store, waiting: Waiting | undefined, spec: CounterSpec): Counter {
  const limiter = store(spec);
  if (typeof limiter !== 'object' || limiter === null || typeof limiter.consume !== 'function') {
    check.invalid(
      'options.store',
      `returned ${show(limiter)} for ${spec.name}; a store must return a rate-limiter-flexible limiter.`,
    );
  }
  return new Counter(spec, limiter, waiting);
}

/** Asks the store for the counter of sliding windows or several limits, refusing a store that cannot keep it. */
function limitsOf(check: Checker, store: Store, waiting: Waiting | undefined, spec: EndpointSpec): Limits {
  if (typeof store.limits !== 'function') {
    const why =
      spec.window === 'sliding'
        ? 'sliding windows'
        : `several limits on one endpoint (${spec.name} has ${spec.limits.length})`;
    check.fail(
      'ERR_UNSUPPORTED_STORE',
      'options.store',
      `cannot count ${why}: a rate-limiter-flexible limiter counts one fixed window. ` +
        'Use memoryStore() or redisStore(), whose `limits` factory counts them.',
    );
  }
  const counter = store.limits(spec);
  const c = counter as { countsNow?: unknown; countNow?: unknown; countsAsync?: unknown; count?: unknown };
  if (
    !(c.countsNow === true && typeof c.countNow === 'function') &&
    !(c.countsAsync === true && typeof c.count === 'function')
  ) {
    check.invalid(
      'options.store',
      `limits() returned ${show(counter)} for ${spec.name}; it must return a limits counter.`,
    );
  }
  return new Limits(spec, counter, waiting);
}

/** The one way an endpoint is compiled, for the table's rows and for granted variants alike. */
export function compileEndpoint(
  check: Checker,
  store: Store,
  waiting: Waiting | undefined,
  spec: EndpointSpec,
): CompiledEndpoint {
  const { name, window, limits } = spec;
  const several = limits.length > 1;
  const compiled = limits.map(({ limit, windowMs }) => ({
    limit,
    windowMs,
    // Each policy of an endpoint of several limits is named by its window, so that the IETF fields tell them apart.
    headers: headerTemplate(several ? `${name} per ${windowMs / 1000}s` : name, limit, windowMs),
  }));
  const first = compiled[0] as CompiledLimit;
  const counter =
    window === 'fixed' && !several
      ? counterOf(check, store, waiting, { name, limit: first.limit, windowMs: first.windowMs })
      : limitsOf(check, store, waiting, spec);
  return {
    name,
    window,
    limits: compiled,
    counter,
    limit: first.limit,
    windowMs: first.windowMs,
    headers: first.headers,
  };
}
