// An endpoint compiled once for the request path: its counter in the store and its precomputed header strings.
import type { Checker } from './check.js';
import { Counter } from './counter.js';
import { type HeaderTemplate, headerTemplate } from './headers.js';
import { show } from './check.js';
import type { CounterSpec, Store } from './stores.js';
import type { Waiting } from './waiting.js';

export interface CompiledEndpoint extends CounterSpec {
  readonly counter: Counter;
  readonly headers: HeaderTemplate;
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

/** The one way an endpoint is compiled, for the table's rows and for granted variants alike. */
export function compileEndpoint(
  check: Checker,
  store: Store,
  waiting: Waiting | undefined,
  spec: CounterSpec,
): CompiledEndpoint {
  const { name, limit, windowMs } = spec;
  return {
    name,
    limit,
    windowMs,
    counter: counterOf(check, store, waiting, { name, limit, windowMs }),
    headers: headerTemplate(name, limit, windowMs),
  };
}
