// The stores every contract test runs against, each with a way to move its clock forward.
import { memoryStore, type Store } from '../../lib';

export interface StoreCase {
  readonly name: string;
  /** A fresh, empty store. */
  make(): Store;
  /** Moves time forward by `ms` for the store and for Date.now(). */
  advance(ms: number): Promise<void>;
}

/** A fixed start, so that header values are exact: 2026-01-01T00:00:00.000Z. */
export const T0 = Date.UTC(2026, 0, 1);

/** Fakes Date only: sockets, timers and promises run for real, counters see the fake clock. */
export function useFakeClock(): void {
  jest.useFakeTimers({
    now: T0,
    doNotFake: [
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'requestAnimationFrame',
      'cancelAnimationFrame',
      'requestIdleCallback',
      'cancelIdleCallback',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'setTimeout',
      'clearTimeout',
    ],
  });
}

export const memoryCase: StoreCase = {
  name: 'memory store',
  make: memoryStore,
  advance: async (ms) => {
    jest.setSystemTime(Date.now() + ms);
  },
};

export const storeCases: StoreCase[] = [memoryCase];
