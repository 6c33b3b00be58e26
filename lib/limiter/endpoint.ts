// An endpoint compiled once for the request path: its counter in the store and its precomputed header strings.
import type { Checker } from '../shared/check.js';
import { Counter } from '../stores/counter.js';
import { type HeaderTemplate, headerTemplate } from '../contract/headers.js';
import type { Count, CountAnswer, CounterSpec, StoreContract, StoreCounter } from '../stores/store.js';
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
  /** Counts a request: its one count for one limit in fixed windows, each limit's for sliding windows or several. */
  readonly counter: Counter;
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

/** The counter of one limit in fixed windows, from the store. */
export function counterOf(store: StoreContract, waiting: Waiting | undefined, spec: CounterSpec): Counter<Count> {
  return new Counter(spec, store.counter(spec), waiting);
}

/** What a rate-limiter-flexible limiter cannot count of an endpoint: sliding windows, or several limits. */
function beyondALimiter(spec: EndpointSpec): string {
  return spec.window === 'sliding'
    ? 'sliding windows'
    : `several limits on one endpoint (${spec.name} has ${spec.limits.length})`;
}

/** The one way an endpoint is compiled, for the table's rows and for granted variants alike. */
export function compileEndpoint(
  check: Checker,
  store: StoreContract,
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
  // One limit in fixed windows is a rate-limiter-flexible limiter's; sliding windows and several limits need the
  // store's `limits` factory, and a store that declares none is refused.
  const one = window === 'fixed' && !several ? { name, limit: first.limit, windowMs: first.windowMs } : undefined;
  if (!one && !store.capabilities.limits) {
    check.fail(
      'ERR_UNSUPPORTED_STORE',
      'options.store',
      `cannot count ${beyondALimiter(spec)}: a rate-limiter-flexible limiter counts one fixed window. ` +
        'Use memoryStore() or redisStore(), whose `limits` factory counts them.',
    );
  }
  const counted: StoreCounter<CountAnswer> = one ? store.counter(one) : store.limits(spec);
  const counter = new Counter(one ?? spec, counted, waiting);
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
