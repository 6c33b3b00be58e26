// The stores: the memory store's MemoryLimiter per endpoint, and the contract every store keeps, run against each.
import type { GlideClient } from '@valkey/valkey-glide';
import type Redis from 'ioredis';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import request from 'supertest';
import {
  type Count,
  type CounterSpec,
  type LimitsSpec,
  memoryStore,
  redisStore,
  type Store,
  type StoreFailurePolicy,
} from '../lib';
import { partsOf } from '../lib/stores/rlf';
import { Resilient } from '../lib/stores/resilient';
import { MemoryLimiter } from '../lib/stores/memory/limiter';
import { MemoryCounter } from '../lib/stores/memory/counter';
import { createApp } from './helpers/app';
import { describeRedis, glideClient, redisForBlock } from './helpers/redis';
import { useFakeClock, useFakeWindows } from './helpers/stores';

const endpoint = { method: 'GET', path: '/v1/bots/:id', name: 'GET /v1/bots/:id', limit: 2, windowMs: 1000 };

describe('memoryStore', () => {
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());

  it('gives each endpoint a MemoryLimiter with its limit and window, and no key prefix', () => {
    const limiter = memoryStore()(endpoint);
    expect(limiter).toBeInstanceOf(MemoryLimiter);
    expect(limiter.points).toBe(2);
    expect(limiter.duration).toBe(1);
    expect(limiter.getKey('a')).toBe('a');
  });

  it('gives each endpoint counters of its own', async () => {
    const store = memoryStore();
    const first = store(endpoint) as MemoryLimiter;
    const second = store({ ...endpoint, name: 'GET /v1/bots' });
    first.countNow('a');
    first.countNow('a');
    expect((await second.consume('a')).consumedPoints).toBe(1);
  });

  it('keeps clients apart', () => {
    const limiter = memoryStore()(endpoint) as MemoryLimiter;
    const count = (key: string) => ({ ...limiter.countNow(key) });
    expect(count('a').count).toBe(1);
    expect(count('a').count).toBe(2);
    expect(count('b').count).toBe(1);
    expect(count('a').count).toBe(3);
  });
});

describe('the middleware with the memory store', () => {
  beforeEach(useFakeClock);
  afterEach(() => jest.useRealTimers());

  it('counts with countNow(), without a promise, and answers as consume() would', async () => {
    const limiters: MemoryLimiter[] = [];
    const store: Store = (e) => {
      const limiter = memoryStore()(e) as MemoryLimiter;
      jest.spyOn(limiter, 'countNow');
      jest.spyOn(limiter, 'consume');
      limiters.push(limiter);
      return limiter;
    };
    const app = createApp({ listing: 'B', options: { store } });
    const first = await request(app).get('/v1/bots/1').expect(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect(first.headers['x-ratelimit-reset-after']).toBe('1');
    await request(app).get('/v1/bots/1').expect(200);
    const limited = await request(app).get('/v1/bots/1').expect(429);
    expect(limited.headers['retry-after']).toBe('1');
    expect(limiters.reduce((calls, l) => calls + jest.mocked(l.countNow).mock.calls.length, 0)).toBe(3);
    for (const limiter of limiters) expect(limiter.consume).not.toHaveBeenCalled();
  });
});

/** A store as the contract suite makes it, and what it declares. */
interface ContractCase {
  readonly name: string;
  readonly redis: boolean;
  make(redis: { client: Redis; glide: () => Promise<GlideClient> }, prefix: string): Store | Promise<Store>;
  /** What its counters declare: counts now (in this process), and whether `limits()` counts. */
  readonly countsNow: boolean;
  readonly limits: boolean;
  readonly state: boolean;
  readonly failure: StoreFailurePolicy | undefined;
}

const contractCases: ContractCase[] = [
  {
    name: 'memoryStore()',
    redis: false,
    make: () => memoryStore(),
    countsNow: true,
    limits: true,
    state: true,
    failure: undefined,
  },
  {
    name: 'redisStore(ioredis)',
    redis: true,
    make: ({ client }, prefix) => redisStore(client, { prefix, timeoutMs: 5000, onFailure: 'closed' }),
    countsNow: false,
    limits: true,
    state: true,
    failure: { timeoutMs: 5000, onFailure: 'closed', callTimeoutMs: 2000 },
  },
  {
    name: 'redisStore(GLIDE)',
    redis: true,
    make: async ({ glide }, prefix) => redisStore(await glide(), { prefix }),
    countsNow: false,
    limits: true,
    state: true,
    failure: { timeoutMs: 200, onFailure: 'memory', callTimeoutMs: 2000 },
  },
  {
    name: 'a factory of rate-limiter-flexible limiters with a limits factory, through the adapter',
    redis: false,
    make: () =>
      Object.assign(
        (spec: CounterSpec) => new RateLimiterMemory({ keyPrefix: spec.name, points: spec.limit, duration: 60 }),
        {
          // A limits counter as a custom store may write one: each call a promise.
          limits: (spec: LimitsSpec) => {
            const counter = new MemoryCounter(spec);
            return {
              countsAsync: true as const,
              count: (key: string) => Promise.resolve(counter.countNow(key).map((count) => ({ ...count }))),
              peek: (key: string) => Promise.resolve(counter.peek(key)),
              reset: (key: string) => Promise.resolve(counter.reset(key)),
            };
          },
        },
      ),
    countsNow: false,
    limits: true,
    state: false,
    // A limiter may fail: the adapter gives it the Redis store's policy.
    failure: { timeoutMs: 200, onFailure: 'memory', callTimeoutMs: 2000 },
  },
];

/** The contract every store keeps with the middleware, run against each: counters, reads, limits, what it declares. */
function contractSuite(store: ContractCase): void {
  const shared = store.redis ? redisForBlock() : undefined;
  let glide: GlideClient | undefined;
  afterAll(() => glide?.close());
  let made = 0;
  const contract = async () => {
    const redis = {
      get client() {
        return (shared as NonNullable<typeof shared>).client;
      },
      glide: async () => (glide ??= await glideClient((shared as NonNullable<typeof shared>).url)),
    };
    return partsOf(await store.make(redis, `contract-${process.pid}-${++made}`));
  };
  const spec: LimitsSpec = { name: 'GET /v1/things', window: 'fixed', limits: [{ limit: 2, windowMs: 60_000 }] };
  /** A count as data: the count, and whether it ends within the window from now. */
  const seen = (counts: readonly Count[]) => {
    const [count] = counts as [Count];
    return { count: count.count, inWindow: count.resetAt > Date.now() && count.resetAt <= Date.now() + 60_000 };
  };
  const none = { count: 0, inWindow: false };

  it('declares what it can do, how it fails, and whether it keeps the runtime state', async () => {
    const c = await contract();
    const countsLimits = () => {
      try {
        c.counter({ ...spec, window: 'sliding' });
        return true;
      } catch {
        return false;
      }
    };
    expect({
      countsNow: c.counter(spec).now,
      reads: c.counter(spec).reads,
      limits: countsLimits(),
      state: c.state !== undefined,
      failure: c.failure,
    }).toEqual({
      countsNow: store.countsNow,
      reads: true,
      limits: store.limits,
      state: store.state,
      failure: store.failure,
    });
  });

  it('counts each request of a key, past its limit, apart from other keys and other counters', async () => {
    const c = await contract();
    const counter = c.counter(spec);
    const other = c.counter({ ...spec, name: 'GET /v1/others' });
    const counts = [];
    for (const key of ['a', 'a', 'a', 'b']) {
      const answer = counter.hit(key);
      expect(answer instanceof Promise).toBe(!store.countsNow);
      counts.push(seen(await answer));
    }
    counts.push(seen(await other.hit('a')));
    expect(counts.map((count) => count.count)).toEqual([1, 2, 3, 1, 1]);
    expect(counts.every((count) => count.inWindow)).toBe(true);
  });

  it('reads a key without counting it, and forgets it', async () => {
    const counter = (await contract()).counter(spec);
    expect(seen(await counter.peek('a'))).toEqual(none);
    await counter.hit('a');
    expect(seen(await counter.peek('a'))).toEqual({ count: 1, inWindow: true });
    expect(seen(await counter.peek('a'))).toEqual({ count: 1, inWindow: true });
    expect(await counter.reset('a')).toBe(true);
    expect(await counter.reset('a')).toBe(false);
    expect(seen(await counter.peek('a'))).toEqual(none);
    expect(seen(await counter.hit('a'))).toEqual({ count: 1, inWindow: true });
  });

  it('refuses over its limit at once once a store has said so, through the one Resilient', async () => {
    const counter = new Resilient(spec, (await contract()).counter(spec), undefined, undefined);
    const hits = [];
    for (let i = 0; i < 4; i++) {
      const answer = counter.hit('a');
      hits.push({ promise: answer instanceof Promise, count: ((await answer)[0] as Count).count });
    }
    // A store that counts now counts every request; another is asked until it refuses, then not again.
    expect(hits).toEqual([
      { promise: !store.countsNow, count: 1 },
      { promise: !store.countsNow, count: 2 },
      { promise: !store.countsNow, count: 3 },
      { promise: false, count: store.countsNow ? 4 : 3 },
    ]);
    expect(counter.refusals).toBe(store.countsNow ? 0 : 1);
  });

  const limitsSpecs: LimitsSpec[] = [
    { name: 'GET /v1/things', window: 'sliding', limits: [{ limit: 2, windowMs: 60_000 }] },
    {
      name: 'GET /v1/things',
      window: 'fixed',
      limits: [
        { limit: 2, windowMs: 60_000 },
        { limit: 3, windowMs: 120_000 },
      ],
    },
  ];
  it.each(limitsSpecs)(
    'counts $window windows of its limits all or none, reads and forgets them',
    async (limitsSpec) => {
      const counter = (await contract()).counter(limitsSpec);
      expect({ countsNow: counter.now, reads: counter.reads }).toEqual({ countsNow: store.countsNow, reads: true });
      const counts = [];
      for (let i = 0; i < 4; i++) counts.push((await counter.hit('a')).map((count) => count.count));
      const n = limitsSpec.limits.length;
      // The third is refused by the first limit (`limit + 1`), and counted on none: the second limit stays at 2.
      expect(counts).toEqual(
        [
          [1, 1],
          [2, 2],
          [3, 2],
          [3, 2],
        ].map((row) => row.slice(0, n)),
      );
      const peeked = ((await counter.peek('a')) ?? []).map((count) => count.count);
      expect(peeked).toEqual([2, 2].slice(0, n));
      expect(await counter.reset('a')).toBe(true);
      expect(((await counter.peek('a')) ?? []).map((count) => count.count)).toEqual([0, 0].slice(0, n));
      const refused = new Resilient(limitsSpec, counter, undefined, undefined);
      for (let i = 0; i < 3; i++) await refused.hit('b');
      expect(refused.hit('b') instanceof Promise).toBe(false);
    },
  );
}

describe.each(contractCases.filter((c) => !c.redis))('the store contract: $name', contractSuite);
describeRedis.each(contractCases.filter((c) => c.redis))('the store contract: $name', contractSuite);
