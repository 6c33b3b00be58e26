// The stores every contract test runs against, each with a way to move its clock forward.
import type Redis from 'ioredis';
import { memoryStore, redisStore, type Store } from '../../lib';
import { describeRedis, ioredisClient, scanKeys, startRedis } from './redis';

export interface StoreCase {
  readonly name: string;
  /** Set-up before the store's tests (e.g. start its server), and tear-down after them. */
  start?(): Promise<void>;
  stop?(): Promise<void>;
  /** A fresh, empty store. */
  make(): Store;
  /** Whether two middleware instances given the same store share its counters (as app instances would). */
  readonly shared: boolean;
  /** Moves time forward by `ms` for the store and for Date.now(). */
  advance(ms: number): Promise<void>;
  /** How close to the end of a window the store still counts it: the clock tests step that far before the end. */
  readonly marginMs: number;
  /** The `X-RateLimit-Reset-After` to expect when `ms` are left: exact for a store that counts on the fake clock. */
  resetAfter(ms: number): unknown;
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

declare global {
  namespace jest {
    interface Expect {
      /** A header of seconds with decimals, more than `fromMs` and at most `toMs` milliseconds. */
      secondsBetween(fromMs: number, toMs: number): unknown;
    }
  }
}

expect.extend({
  secondsBetween(received: unknown, fromMs: number, toMs: number) {
    const ms = Number(received) * 1000;
    const pass = typeof received === 'string' && /^\d+(\.\d+)?$/.test(received) && ms > fromMs && ms <= toMs;
    return {
      pass,
      message: () => `expected ${JSON.stringify(received)} to be seconds in (${fromMs / 1000}, ${toMs / 1000}]`,
    };
  },
});

export const memoryCase: StoreCase = {
  name: 'memory store',
  make: memoryStore,
  shared: false,
  advance: async (ms) => {
    jest.setSystemTime(Date.now() + ms);
  },
  marginMs: 1,
  resetAfter: (ms) => String(ms / 1000),
};

/**
 * The Redis store through ioredis. Redis expires keys on its own, real clock, while the tests move a fake Date:
 * `advance` moves both, setting every key's time to live to what the fake clock leaves of its window (and deleting
 * the keys whose window has ended). Between two advances Redis's clock runs on for real, so `X-RateLimit-Reset-After`
 * may read a few milliseconds short, and a window is stepped to 500 ms before its end, not 1.
 */
function redisCase(): StoreCase {
  let server: Awaited<ReturnType<typeof startRedis>> | undefined;
  let client: Redis | undefined;
  const namespace = `contract-${process.pid}`;
  let made = 0;
  /** Window of each endpoint, by key prefix `<prefix>:<endpoint name>`. */
  const windows = new Map<string, number>();
  /** When each key's window ends on the fake clock. */
  const ends = new Map<string, number>();
  const marginMs = 500;

  const windowOf = (key: string) => {
    for (const [keyPrefix, windowMs] of windows) if (key.startsWith(`${keyPrefix}:`)) return windowMs;
    throw new Error(`no endpoint for Redis key ${key}`);
  };

  return {
    name: 'redis store',
    shared: true,
    async start() {
      server = await startRedis();
      client = await ioredisClient(server.url);
    },
    async stop() {
      if (client) {
        const keys = await scanKeys(client, `${namespace}-*`);
        if (keys.length > 0) await client.del(...keys);
        client.disconnect();
      }
      await server?.close();
    },
    make() {
      if (!client) throw new Error('the Redis store case was not started');
      const prefix = `${namespace}-${++made}`;
      // Counting must never fall back to memory here: a generous timeout, and any failure a loud 503.
      const store = redisStore(client, { prefix, timeoutMs: 5000, onFailure: 'closed' });
      return (endpoint) => {
        windows.set(`${prefix}:${endpoint.name}`, endpoint.windowMs);
        return store(endpoint);
      };
    },
    async advance(ms) {
      const redis = client as Redis;
      const now = Date.now();
      // The fake clock stands still between advances, so a key first seen now was created at `now`.
      for (const key of await scanKeys(redis, `${namespace}-*`)) {
        if (!ends.has(key)) ends.set(key, now + windowOf(key));
      }
      jest.setSystemTime(now + ms);
      for (const [key, end] of ends) {
        const left = end - (now + ms);
        if (left > 0 && (await redis.pexpire(key, left)) === 1) continue;
        await redis.del(key);
        ends.delete(key);
      }
    },
    marginMs,
    resetAfter: (ms) => expect.secondsBetween(ms - marginMs, ms),
  };
}

/** Every store, Redis included where Redis can run (and always under CI, where a missing Redis fails). */
export const storeCases: StoreCase[] = [memoryCase, ...(describeRedis === describe ? [redisCase()] : [])];
