// The memory store: counters, limits and runtime state in this process's memory, the default.
import { type CounterSpec, type LimitsSpec, type Store, storeOf } from '../store.js';
import { MemoryState } from './state.js';
import { MemoryLimiter } from './limiter.js';
import { MemoryLimits } from './windows.js';

const memoryLimiter = (spec: CounterSpec) =>
  new MemoryLimiter({ points: spec.limit, duration: spec.windowMs / 1000, keyPrefix: '' });
const memoryLimits = (spec: LimitsSpec) => new MemoryLimits(spec);

/**
 * The memory counter of a spec: of one limit in fixed windows, or of several limits or sliding windows. What a store
 * that fails with `onFailure: 'memory'` counts on meanwhile.
 */
export function memoryCounterOf(spec: CounterSpec | LimitsSpec): MemoryLimiter | MemoryLimits {
  return 'limits' in spec ? memoryLimits(spec) : memoryLimiter(spec);
}

/**
 * The default store: counters in this process's memory, one map per counter, each entry forgotten when its window
 * ends. Counters are not shared between processes; bans and grants made at runtime are shared by the middlewares
 * that use this store.
 */
export function memoryStore(): Store {
  return storeOf(
    {
      capabilities: { limits: true },
      counter: memoryLimiter,
      limits: memoryLimits,
      state: new MemoryState(),
      failure: undefined,
    },
    { limiter: memoryLimiter, limits: memoryLimits },
  );
}
