// Sliding windows and several limits per endpoint in Redis, on Redis' own clock: short windows, real time.
import type { Server } from 'node:http';
import type Redis from 'ioredis';
import { createClient } from 'redis';
import request from 'supertest';
import { type EndpointRow, type ListingLimitsMiddleware, type ListingLimitsOptions, redisStore } from '../lib';
import { createApp } from './helpers/app';
import {
  describeRedisServer,
  glideClient,
  ioredisClient,
  RedisCluster,
  RedisServer,
  scanKeys,
  scriptRuns,
} from './helpers/redis';
import { withClients } from './helpers/redis-env';
import { useFakeClock } from './helpers/stores';

const SECOND = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A client of each kind the store takes, on a Redis of its own (a Cluster of three masters for `cluster`). */
interface Connection {
  readonly client: Parameters<typeof redisStore>[0];
  /** Every server's script runs (EVAL and EVALSHA), summed. */
  scripts(): Promise<number>;
  /** Every key under `pattern`, over all servers. */
  keys(pattern: string): Promise<string[]>;
  close(): Promise<void>;
}

async function over<T>(servers: readonly RedisServer[], read: (node: Redis) => Promise<T>): Promise<T[]> {
  return Promise.all(
    servers.map(async (server) => {
      const node = await ioredisClient(server.url);
      try {
        return await read(node);
      } finally {
        node.disconnect();
      }
    }),
  );
}

/** A connection to servers of its own: each server's script runs and keys, summed; `close` also stops them. */
function connection(
  servers: readonly RedisServer[],
  client: Connection['client'],
  disconnect: () => void,
  stop: () => Promise<void>,
): Connection {
  return {
    client,
    scripts: async () => (await over(servers, scriptRuns)).reduce((a, b) => a + b),
    keys: async (pattern) => (await over(servers, (node) => scanKeys(node, pattern))).flat().sort(),
    close: async () => {
      disconnect();
      await stop();
    },
  };
}

/** The connections whose client package loads here (all of them under CI): see withClients. */
const connections = withClients<[string, () => Promise<Connection>]>(
  [
    [
      'ioredis',
      async () => {
        const server = await RedisServer.start();
        const client = await ioredisClient(server.url);
        return connection(
          [server],
          client,
          () => client.disconnect(),
          () => server.close(),
        );
      },
    ],
    [
      'node-redis',
      async () => {
        const server = await RedisServer.start();
        const client = createClient({ url: server.url });
        client.on('error', () => {});
        await client.connect();
        return connection(
          [server],
          client,
          () => client.destroy(),
          () => server.close(),
        );
      },
    ],
    [
      'Valkey GLIDE',
      async () => {
        const server = await RedisServer.start();
        const client = await glideClient(server.url);
        return connection(
          [server],
          client,
          () => client.close(),
          () => server.close(),
        );
      },
    ],
    [
      'an ioredis Cluster of three masters',
      async () => {
        const cluster = await RedisCluster.start(3);
        const client = await cluster.client();
        return connection(
          cluster.servers,
          client,
          () => client.disconnect(),
          () => cluster.close(),
        );
      },
    ],
  ],
  ([name]) => (name === 'Valkey GLIDE' ? 'glide' : name === 'node-redis' ? 'node-redis' : 'ioredis'),
);

/** An endpoint of one row, or of a burst limit and a longer cap. */
const row = (limit: number, windowMs = SECOND): EndpointRow => ({ method: 'GET', path: '/v1/bots', limit, windowMs });
const twoRows = [row(2), row(3, 10 * SECOND)];

describeRedisServer.each(connections)('the Redis store through %s', (_name, connect) => {
  let redis: Connection;
  let server: Server | undefined;
  let made = 0;
  beforeAll(async () => {
    redis = await connect();
  }, 30_000);
  afterAll(() => redis?.close());
  afterEach(() => {
    server?.close();
    server = undefined;
    jest.useRealTimers();
  });

  /** An app counting in Redis under a prefix of its own, listening. */
  const listen = (listing: readonly EndpointRow[], options: ListingLimitsOptions = {}) => {
    const prefix = `windows-${++made}`;
    // Counting must never fall back to memory here: a generous timeout, and any failure a loud 503.
    const store = redisStore(redis.client, { prefix, timeoutMs: 5000, onFailure: 'closed' });
    const app = createApp({ listing, options: { store, ...options } });
    server = app.listen(0);
    return { server, prefix, limiter: app.locals.limiter as ListingLimitsMiddleware };
  };
  const get = (app: Server) => request(app).get('/v1/bots').set('Authorization', 'Bot one');
  const statuses = async (app: Server, n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push((await get(app)).status);
    return out;
  };

  it.each([
    ['fixed', [200, 200, 200]],
    ['sliding', [200, 429, 429]],
  ] as const)(
    '%s windows: of a request, two more 0.4 s later, and three once the first has left, %j of the last pass',
    async (window, last) => {
      const { server: app } = listen([row(3)], { window });
      const sent = Date.now();
      const first = await get(app).expect(200);
      expect(first.headers['ratelimit']).toBe('"GET /v1/bots";r=2;t=1');
      await sleep(400);
      expect(await statuses(app, 1)).toEqual([200]);
      // The second request reached Redis at most this long after the first: 0.4 s, and what the machine added.
      const gap = Date.now() - sent;
      expect(await statuses(app, 1)).toEqual([200]);
      const refused = await get(app).expect(429);
      // The first request leaves (sliding) or the window ends (fixed) 1 s after the first request reached Redis.
      const leavesInMs = Number(refused.headers['x-ratelimit-reset-after']) * 1000;
      expect(leavesInMs).toBeGreaterThan(0);
      expect(leavesInMs).toBeLessThanOrEqual(600);
      await sleep(leavesInMs + 50);
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push(await get(app));
      expect(answers.map((res) => res.status)).toEqual(last);
      if (window === 'sliding') {
        // Freed next when the second request leaves: at most `gap` after the first left.
        const next = Number(answers[1]?.headers['x-ratelimit-reset-after']) * 1000;
        expect(next).toBeGreaterThan(0);
        expect(next).toBeLessThanOrEqual(gap);
      }
    },
  );

  it('sliding windows count on Redis time: a process clock months off changes nothing', async () => {
    useFakeClock(); // Date.now() is 2026-01-01, months before the real time Redis counts with
    const { server: app, prefix } = listen([row(2, 60 * SECOND)], { window: 'sliding' });
    expect(await statuses(app, 3)).toEqual([200, 200, 429]);
    const refused = await get(app).expect(429);
    expect(Number(refused.headers['x-ratelimit-reset-after'])).toBeGreaterThan(59);
    expect(Number(refused.headers['x-ratelimit-reset-after'])).toBeLessThanOrEqual(60);
    // One key: a list of the two requests' times.
    const keys = await redis.keys(`${prefix}:*`);
    expect(keys).toEqual([expect.stringMatching(new RegExp(`^${prefix}:GET /v1/bots:\\{t:[\\w-]+\\}:s60$`))]);
  });

  it('a client refused in a sliding window costs Redis no script until its oldest request leaves', async () => {
    const { server: app } = listen([row(2, 60 * SECOND)], { window: 'sliding' });
    expect(await statuses(app, 3)).toEqual([200, 200, 429]);
    const before = await redis.scripts();
    expect(await statuses(app, 10)).toEqual(Array(10).fill(429));
    expect(await redis.scripts()).toBe(before);
  });

  it.each(['fixed', 'sliding'] as const)(
    'several limits, %s windows: one script per request, and a refused request charges no row',
    async (window) => {
      const { server: app, prefix } = listen(twoRows, { window });
      const before = await redis.scripts();
      expect(await statuses(app, 2)).toEqual([200, 200]);
      expect(await redis.scripts()).toBe(before + 2);
      // Refused by the one-second row: the 10-second row still has its third request.
      const burst = await get(app).expect(429);
      expect(burst.headers['ratelimit']).toMatch(
        /^"GET \/v1\/bots per 1s";r=0;t=1, "GET \/v1\/bots per 10s";r=1;t=10$/,
      );
      await sleep(Number(burst.headers['x-ratelimit-reset-after']) * 1000 + 50);
      expect(await statuses(app, 1)).toEqual([200]);
      // Refused by the 10-second row: the one-second row still has its second request.
      const capped = await get(app).expect(429);
      expect(capped.headers['ratelimit']).toMatch(
        /^"GET \/v1\/bots per 1s";r=1;t=1, "GET \/v1\/bots per 10s";r=0;t=(9|10)$/,
      );
      expect(capped.headers['x-ratelimit-bucket']).toBe('GET /v1/bots per 10s');
      // One key per row, on the client's hash tag (one Cluster slot); the one-second key may have expired already.
      const kind = window === 'sliding' ? 's' : 'f';
      const keys = (await redis.keys(`${prefix}:*`)).map((key) => key.replace(/\{t:[\w-]+\}/, '{t:…}'));
      expect(keys).toContain(`${prefix}:GET /v1/bots:{t:…}:${kind}10`);
      expect(keys.filter((key) => key !== `${prefix}:GET /v1/bots:{t:…}:${kind}1`)).toEqual([
        `${prefix}:GET /v1/bots:{t:…}:${kind}10`,
      ]);
    },
  );

  it('a runtime grant is counted in sliding windows too', async () => {
    const { server: app, limiter } = listen([row(2, 60 * SECOND)], { window: 'sliding' });
    await limiter.grant({ token: 'Bot one' }, { multiplier: 2 });
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await get(app));
    expect(answers.map((res) => res.status)).toEqual([200, 200, 200, 200, 429]);
    expect(answers[0]?.headers['ratelimit-policy']).toBe('"GET /v1/bots (x2)";q=4;w=60');
  });
});

describeRedisServer('sliding windows and several limits while Redis is down', () => {
  let redis: RedisServer;
  let client: Redis;
  let server: Server | undefined;
  beforeAll(async () => {
    redis = await RedisServer.start();
    client = await ioredisClient(redis.url);
    await redis.stop();
  }, 30_000);
  afterAll(async () => {
    client?.disconnect();
    await redis?.close();
  });
  afterEach(() => server?.close());

  it.each([
    ['counts a sliding window in memory', 'memory', { window: 'sliding' }, [row(2, 60 * SECOND)], [200, 200, 429]],
    ['counts several limits in memory', 'memory', {}, twoRows, [200, 200, 429]],
    ['answers 503 for a sliding window', 'closed', { window: 'sliding' }, [row(2, 60 * SECOND)], [503, 503, 503]],
  ] as const)('%s (onFailure %s)', async (_name, onFailure, options, listing, expected) => {
    const store = redisStore(client, { prefix: 'down', timeoutMs: 200, onFailure });
    server = createApp({ listing, options: { store, ...options } }).listen(0);
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await request(server).get('/v1/bots')).status);
    expect(statuses).toEqual(expected);
  });
});

describeRedisServer('sliding windows and several limits while Redis hangs', () => {
  let redis: RedisServer;
  let client: Redis;
  let server: Server | undefined;
  beforeAll(async () => {
    redis = await RedisServer.start();
    client = await ioredisClient(redis.url);
  }, 30_000);
  afterAll(async () => {
    client?.disconnect();
    await redis?.close();
  });
  afterEach(() => {
    server?.close();
    redis.resume();
  });

  it.each([
    ['a sliding window', { window: 'sliding' }, [row(25, 60 * SECOND)]],
    ['several limits', {}, [row(25, 60 * SECOND), row(30, 120 * SECOND)]],
  ] as const)(
    '%s: of 30 requests whose deadlines end together, each counted in memory reads its own count',
    async (_name, options, listing) => {
      const store = redisStore(client, { prefix: 'hanging', timeoutMs: 500, onFailure: 'memory' });
      const app = createApp({ listing, options: { store, ...options } }).listen(0);
      server = app;
      redis.pause();
      const answers = await Promise.all(
        Array.from({ length: 30 }, () => request(app).get('/v1/bots').set('Authorization', 'Bot one').timeout(10_000)),
      );
      const passed = answers.filter((res) => res.status === 200);
      expect(passed).toHaveLength(25);
      expect(answers.filter((res) => res.status === 429)).toHaveLength(5);
      // One request per count: 24 left after the first, 0 after the 25th.
      const left = passed.map((res) => Number(res.headers['x-ratelimit-remaining'])).sort((a, b) => a - b);
      expect(left).toEqual(Array.from({ length: 25 }, (_, i) => i));
    },
  );
});
