// The options of a store in another process (Redis, the cluster's primary): its namespace, its waits, its fallback.
import { type Checker, MAX_TIMER_MS, show } from '../shared/check.js';
import type { StoreFailurePolicy } from './store.js';
import { DEFAULT_FAILURE } from './waiting.js';

/** A store's namespace and failure policy, all given. */
interface FailureOptions extends Required<StoreFailurePolicy> {
  readonly prefix: string;
}

const optionNames = ['prefix', 'timeoutMs', 'onFailure', 'callTimeoutMs'] as const;
const failureModes: readonly StoreFailurePolicy['onFailure'][] = ['memory', 'open', 'closed'];

/**
 * Checks `{ prefix, timeoutMs, onFailure, callTimeoutMs }`, each with its default, and allows the store's `more`
 * options, left for the store to check in `options`.
 */
export function checkFailureOptions(
  check: Checker,
  options: unknown,
  defaultPrefix: string,
  more: readonly string[] = [],
): FailureOptions & { options: Record<string, unknown> } {
  const names = [...optionNames, ...more];
  const o = check.options(options, 'options', `{ ${names.join(', ')} }`);
  check.unknownKeys(o, names, (key) => `options.${key}`);
  const {
    prefix = defaultPrefix,
    timeoutMs = DEFAULT_FAILURE.timeoutMs,
    onFailure = DEFAULT_FAILURE.onFailure,
    callTimeoutMs = DEFAULT_FAILURE.callTimeoutMs,
  } = o;
  if (typeof prefix !== 'string' || prefix === '')
    check.invalid('options.prefix', `must be a non-empty string; got ${show(prefix)}.`);
  check.whole(timeoutMs, 'options.timeoutMs', { unit: 'milliseconds', least: 1, most: MAX_TIMER_MS });
  check.whole(callTimeoutMs, 'options.callTimeoutMs', { unit: 'milliseconds', least: 1, most: MAX_TIMER_MS });
  return {
    options: o,
    prefix,
    timeoutMs: timeoutMs as number,
    callTimeoutMs: callTimeoutMs as number,
    onFailure: check.oneOf(onFailure, failureModes, 'options.onFailure'),
  };
}

/** What requests get while a store does not answer, as a warning says it. */
export const meanwhile: Readonly<Record<StoreFailurePolicy['onFailure'], string>> = {
  memory:
    "each instance counts in its own memory (onFailure: 'memory'), so that N instances let a client through up to " +
    'N times the limits',
  open: "requests pass uncounted (onFailure: 'open')",
  closed: "requests are answered 503 (onFailure: 'closed')",
};
