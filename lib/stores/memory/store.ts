// The memory store: counters, limits and runtime state in this process's memory, the default.
import type { LimitsSpec } from '../limits.js';
import { MemoryState } from '../state.js';
import { type CounterSpec, type Store, storeOf } from '../store.js';
import { MemoryLimiter } from './limiter.js';
import { MemoryLimits } from './windows.js';

/**
 * The default store: counters in this process's memory, one map per counter, each entry forgotten when its window
 * ends. Counters are not shared between processes; bans and grants made at runtime are shared by the middlewares
 * that use this store.
 */
export function memoryStore(): Store {
  const counter = (spec: CounterSpec) =>
    new MemoryLimiter({ points: spec.limit, duration: spec.windowMs / 1000, keyPrefix: '' });
  const limits = (spec: LimitsSpec) => new MemoryLimits(spec);
  return storeOf(
    { capabilities: { limits: true }, counter, limits, state: new MemoryState(), failure: undefined },
    { limiter: counter, limits },
  );
}
