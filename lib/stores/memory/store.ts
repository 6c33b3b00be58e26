// The memory store: counters, limits and runtime state in this process's memory, the default.
import type { CounterSpec, LimitsSpec, Store } from '../store.js';
import { type Counter, oneLimit, PARTS, type StoreParts } from '../counter.js';
import { MemoryState } from './state.js';
import { MemoryLimiter } from './limiter.js';
import { MemoryCounter } from './counter.js';

/** The memory counter of a spec; also what a store that fails with `onFailure: 'memory'` counts on meanwhile. */
export function memoryCounter(spec: LimitsSpec): Counter {
  return new MemoryCounter(spec, oneLimit(spec) !== undefined);
}

/**
 * The default store: counters in this process's memory, one map per counter, each entry forgotten when its window
 * ends. Counters are not shared between processes; bans and grants made at runtime are shared by the middlewares
 * that use this store.
 */
export function memoryStore(): Store {
  const state = new MemoryState();
  const parts: StoreParts = { counter: memoryCounter, state, failure: undefined };
  return Object.assign(
    (spec: CounterSpec) => new MemoryLimiter({ points: spec.limit, duration: spec.windowMs / 1000, keyPrefix: '' }),
    { state, limits: (spec: LimitsSpec) => new MemoryCounter(spec), [PARTS]: parts },
  );
}
