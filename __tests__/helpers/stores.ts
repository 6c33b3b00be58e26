// The stores every contract test runs against, each with a way to move its clock forward.
import type Redis from 'ioredis';
import { clusterStore, memoryStore, redisStore, type Store } from '../../lib';
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

const realTimers = [
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
] as const;

/** Fakes Date only: sockets, timers and promises run for real, counters see the fake clock. */
export function useFakeClock(): void {
  jest.useFakeTimers({ now: T0, doNotFake: [...realTimers, 'setTimeout', 'clearTimeout'] });
}

/**
 * Fakes Date and setTimeout: a window ends only when the test moves the clock (`jest.advanceTimersByTime`), never
 * because the machine was slow. The memory store drops a counter with a setTimeout of its window; on a real timer
 * that would end a window of one second early on the fake clock whenever the requests of a test took a second.
 * Sockets, promises and setImmediate run for real. Not for code that caches a time until a setTimeout resets it
 * (lru-cache's `ttl`): that time would stand still.
 */
export function useFakeWindows(): void {
  jest.useFakeTimers({ now: T0, doNotFake: [...realTimers] });
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

const memoryCase: StoreCase = {
  name: 'memory store',
  make: memoryStore,
  shared: false,
  // Fires the counters' timers that fall due on the way, as real time would; only Date moves under useFakeClock().
  advance: async (ms) => {
    jest.advanceTimersByTime(ms);
  },
  marginMs: 1,
  resetAfter: (ms) => String(ms / 1000),
};

let clusters = 0;

/** The cluster store in a process that is not a worker: every call a message to this process's primary side. */
const clusterCase: StoreCase = {
  ...memoryCase,
  name: 'cluster store',
  // Counting must never fall back to memory here: a generous timeout, and any failure a loud 503.
  make: () => clusterStore({ prefix: `contract-${++clusters}`, timeoutMs: 10_000, onFailure: 'closed' }),
  shared: true,
};

/**
 * The Redis store through ioredis. Redis expires keys on its own, real clock, while the tests move a fake Date. So
 * that a window ends only when the fake clock says so, however slow the machine, a key the store counts with waits
 * between two counts with an hour to live, and right before each count, on the same connection, it is given what
 * the fake clock leaves of its window, which the count reads back for the headers; `advance` deletes the keys whose
 * window has ended. Keys written without a count (bans) are set to what the fake clock leaves at each `advance`.
 * Redis's clock still runs for real between the two commands before a count, so `X-RateLimit-Reset-After` may
 * read that much short: hence a margin of 500 ms, far above it, and a window is stepped to it before its end.
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
  /** The keys the store has counted with, which wait with `holdMs` to live between counts. */
  const counted = new Set<string>();
  const holdMs = 3_600_000;
  const marginMs = 500;

  const windowOf = (key: string) => {
    for (const [keyPrefix, windowMs] of windows) if (key.startsWith(`${keyPrefix}:`)) return windowMs;
    throw new Error(`no endpoint for Redis key ${key}`);
  };

  /**
   * Gives `key` what the fake clock leaves of its window, or deletes it when its window has ended. The command is
   * sent, not awaited: the count that follows goes out on the same connection right behind it, so the test store
   * adds no round trip and keeps the order in which requests reach Redis.
   */
  function toFakeClock(redis: Redis, key: string): void {
    const end = ends.get(key);
    if (end === undefined) return;
    const left = end - Date.now();
    if (left > 0) {
      redis.pexpire(key, left).catch(() => {});
      return;
    }
    redis.del(key).catch(() => {});
    ends.delete(key);
    counted.delete(key);
  }

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
      const redis = client;
      if (!redis) throw new Error('the Redis store case was not started');
      const prefix = `${namespace}-${++made}`;
      // Counting must never fall back to memory here: a generous timeout, and any failure a loud 503.
      const store = redisStore(redis, { prefix, timeoutMs: 5000, onFailure: 'closed' });
      const counters: Store = (endpoint) => {
        windows.set(`${prefix}:${endpoint.name}`, endpoint.windowMs);
        const limiter = store(endpoint) as ReturnType<Store> & { count?: (key: string) => Promise<unknown> };
        /** Runs one count of `clientKey` on the fake clock. */
        const onFakeClock = <T>(clientKey: string, count: () => Promise<T>): Promise<T> => {
          const key = `${prefix}:${endpoint.name}:${clientKey}`;
          const now = Date.now();
          toFakeClock(redis, key);
          return count().finally(() => {
            // The fake clock stands still during a count: a key this count created began its window `now`.
            if (!ends.has(key)) ends.set(key, now + endpoint.windowMs);
            counted.add(key);
            redis.pexpire(key, holdMs).catch(() => {});
          });
        };
        const consume = limiter.consume.bind(limiter);
        limiter.consume = (clientKey, ...rest) => onFakeClock(String(clientKey), () => consume(clientKey, ...rest));
        const count = limiter.count?.bind(limiter);
        if (count) limiter.count = (clientKey) => onFakeClock(clientKey, () => count(clientKey));
        return limiter;
      };
      // The store's runtime state (bans, grants) as it is: its records end on the clock the instances pass it.
      return Object.assign(counters, { state: store.state });
    },
    async advance(ms) {
      const redis = client as Redis;
      const now = Date.now();
      // The fake clock stood still since the last advance: a key first seen now was written at `now`.
      for (const key of await scanKeys(redis, `${namespace}-*`)) {
        if (!ends.has(key) && !key.includes(':{runtime}:')) ends.set(key, now + windowOf(key));
      }
      jest.advanceTimersByTime(ms); // also fires what falls due on the way, e.g. the reset of lru-cache's cached time
      for (const [key, end] of ends) {
        if (!counted.has(key) || end <= Date.now()) toFakeClock(redis, key);
      }
      await redis.ping(); // answered after every command sent before it
    },
    marginMs,
    resetAfter: (ms) => expect.secondsBetween(ms - marginMs, ms),
  };
}

/** Every store, Redis included where Redis can run (and always under CI, where a missing Redis fails). */
export const storeCases: StoreCase[] = [memoryCase, clusterCase, ...(describeRedis === describe ? [redisCase()] : [])];
