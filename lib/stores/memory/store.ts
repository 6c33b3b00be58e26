// The memory store: counters, limits and runtime state in this process's memory, the default.
import type { CounterSpec, LimitsSpec, Store } from '../store.js';
import { type Counter, oneLimit, storeWith } from '../counter.js';
import { MemoryState } from './state.js';
import { MemoryLimiter } from './limiter.js';
import { MemoryLimits } from './windows.js';

const memoryLimiter = (spec: CounterSpec) =>
  new MemoryLimiter({ points: spec.limit, duration: spec.windowMs / 1000, keyPrefix: '' });
const memoryLimits = (spec: LimitsSpec) => new MemoryLimits(spec);

/** The memory counter of a spec; also what a store that fails with `onFailure: 'memory'` counts on meanwhile. */
export function memoryCounter(spec: LimitsSpec): Counter {
  const one = oneLimit(spec);
  return one ? memoryLimiter(one) : memoryLimits(spec);
}

/**
 * The default store: counters in this process's memory, one map per counter, each entry forgotten when its window
 * ends. Counters are not shared between processes; bans and grants made at runtime are shared by the middlewares
 * that use this store.
 */
export function memoryStore(): Store {
  return storeWith({ state: new MemoryState(), failure: undefined }, memoryLimiter, memoryLimits);
}
