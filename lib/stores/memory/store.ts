// The memory store: counters, limits and runtime state in this process's memory, the default.
import { Checker, show } from '../../shared/check.js';
import type { CounterSpec, LimitsSpec, Store } from '../store.js';
import { type Counter, oneLimit, PARTS, type StoreParts } from '../counter.js';
import { MemoryState } from './state.js';
import { MemoryLimiter } from './limiter.js';
import { MemoryCounter } from './counter.js';

/** The memory counter of a spec; also what a store that fails with `onFailure: 'memory'` counts on meanwhile. */
export function memoryCounter(spec: LimitsSpec): Counter {
  return new MemoryCounter(spec, oneLimit(spec) !== undefined);
}

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Counts in each process alone, on purpose: no `LISTING_LIMITS_PER_PROCESS` warning in a `node:cluster` worker or a
   * PM2 instance. Default: `false`.
   */
  perProcess?: boolean;
}

const memoryCheck = new Checker('memoryStore');

/**
 * The default store: counters in this process's memory, one map per counter, each entry forgotten when its window
 * ends. Counters are not shared between processes (a worker of several warns once: see `perProcess`); bans and grants
 * made at runtime are shared by the middlewares that use this store.
 */
export function memoryStore(options?: MemoryStoreOptions): Store {
  const o = memoryCheck.options(options, 'options', '{ perProcess }');
  memoryCheck.unknownKeys(o, ['perProcess'], (key) => `options.${key}`);
  if (o.perProcess !== undefined && typeof o.perProcess !== 'boolean')
    memoryCheck.invalid('options.perProcess', `must be true or false; got ${show(o.perProcess)}.`);
  const state = new MemoryState();
  const countsAlone = o.perProcess !== true;
  const parts: StoreParts = { counter: memoryCounter, state, failure: undefined, countsAlone };
  return Object.assign(
    (spec: CounterSpec) => new MemoryLimiter({ points: spec.limit, duration: spec.windowMs / 1000, keyPrefix: '' }),
    { state, limits: (spec: LimitsSpec) => new MemoryCounter(spec), [PARTS]: parts },
  );
}
