// Enforcement at runtime: bans over the whole site, held on every instance sharing the store.
import type { Express } from 'express';
import type Redis from 'ioredis';
import request from 'supertest';
import {
  type EndpointRow,
  type ListingLimitsMiddleware,
  type ListingLimitsOptions,
  memoryStore,
  redisStore,
} from '../lib';
import { createApp } from './helpers/app';
import { describeRedis, ioredisClient, scanKeys, startRedis } from './helpers/redis';
import { useFakeClock } from './helpers/stores';

const rows: readonly EndpointRow[] = [{ method: 'GET', path: '/v1/things', limit: 2, windowMs: 60_000 }];
const ban = { after: 1, within: 60_000, duration: 600_000 } as const;

/** Two app instances whose middlewares share one store's state, as two processes behind a load balancer would. */
interface PairCase {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Two instances with `options` and a fresh, shared store. */
  pair(options: ListingLimitsOptions): [Express, Express];
  /** The Redis both instances use, for the Redis case. */
  readonly redis: Redis | undefined;
  readonly prefix: string | undefined;
}

const memoryPair: PairCase = {
  name: 'memory store',
  start: async () => {},
  stop: async () => {},
  pair(options) {
    const store = memoryStore();
    return [0, 1].map(() => createApp({ listing: rows, options: { ...options, store } })) as [Express, Express];
  },
  redis: undefined,
  prefix: undefined,
};

function redisPair(): PairCase {
  let server: Awaited<ReturnType<typeof startRedis>> | undefined;
  let clients: Redis[] = [];
  let made = 0;
  let prefix: string | undefined;
  return {
    name: 'redis store',
    async start() {
      server = await startRedis();
      clients = await Promise.all([0, 1, 2].map(() => ioredisClient((server as { url: string }).url)));
    },
    async stop() {
      const [admin] = clients;
      if (admin) {
        const keys = await scanKeys(admin, `runtime-${process.pid}-*`);
        if (keys.length > 0) await admin.del(...keys);
      }
      for (const client of clients) client.disconnect();
      await server?.close();
    },
    pair(options) {
      prefix = `runtime-${process.pid}-${++made}`;
      return [0, 1].map((i) => {
        const store = redisStore(clients[i] as Redis, { prefix, timeoutMs: 5000, onFailure: 'closed' });
        return createApp({ listing: rows, options: { ...options, store } });
      }) as [Express, Express];
    },
    get redis() {
      return clients[2];
    },
    get prefix() {
      return prefix;
    },
  };
}

const pairCases: PairCase[] = [memoryPair, ...(describeRedis === describe ? [redisPair()] : [])];

/** Retries `check` until it passes, for up to 10 s: a bound for a hang, not a speed the machine must keep. */
async function eventually(check: () => Promise<void>): Promise<void> {
  const end = Date.now() + 10_000;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > end) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

const BANNED_BODY =
  '{"success":false,"code":403,"message":"You are banned from this API for circumventing its rate limits",' +
  '"bannedUntil":"2026-01-01T00:10:00.000Z","retryAfter":600}';

/** Every command Redis has run, by name, from INFO commandstats. */
async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const info = String(await redis.info('commandstats'));
  return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1] as string, Number(m[2])]));
}

describe.each(pairCases)('$name', (pairs) => {
  let apps: Express[] = [];
  const make = (options: ListingLimitsOptions) => {
    const made = pairs.pair(options);
    apps.push(...made);
    return made;
  };
  beforeAll(() => pairs.start(), 30_000);
  afterAll(() => pairs.stop());
  beforeEach(useFakeClock);
  afterEach(() => {
    for (const app of apps) (app.locals.limiter as ListingLimitsMiddleware).close();
    apps = [];
    jest.useRealTimers();
  });

  /** Bans `token` by the rule on `app`: two requests served, the third refused with 429, which bans. */
  const banByRule = async (app: Express, token: string) => {
    for (const status of [200, 200, 429, 403]) {
      await request(app).get('/v1/things').set('Authorization', token).expect(status);
    }
  };

  describe('bans cover the site', () => {
    it('refuses a banned client on routes outside the table, on the instance that banned and on the other', async () => {
      const [a, b] = make({ ban });
      await banByRule(a, 'Bot cheater');
      const res = await request(a).get('/v1/unlimited').set('Authorization', 'Bot cheater').expect(403);
      expect(res.text).toBe(BANNED_BODY);
      expect(res.headers['retry-after']).toBe('600');
      await eventually(async () => {
        const other = await request(b).get('/v1/unlimited').set('Authorization', 'Bot cheater');
        expect([other.status, other.text]).toEqual([403, BANNED_BODY]);
      });
    });

    it('lets other clients through outside the table, uncounted and without rate-limit headers', async () => {
      const [a] = make({ ban });
      await banByRule(a, 'Bot cheater');
      for (let i = 0; i < 3; i++) {
        const res = await request(a).get('/v1/unlimited').set('Authorization', 'Bot honest').expect(200);
        expect(res.body).toEqual({ route: 'unlimited' });
        expect(Object.keys(res.headers).filter((h) => /ratelimit|retry-after/i.test(h))).toEqual([]);
      }
      const counted = await request(a).get('/v1/things').set('Authorization', 'Bot honest').expect(200);
      expect(counted.headers['x-ratelimit-remaining']).toBe('1');
    });

    it.each([
      { scope: 'site', outside: 403 },
      { scope: 'table', outside: 200 },
      { scope: undefined, outside: 403 },
    ] as const)('with scope $scope, a banned client gets $outside outside the table and 403 in it', async (t) => {
      const [a] = make({ ban: t.scope ? { ...ban, scope: t.scope } : ban });
      await banByRule(a, 'Bot cheater');
      await request(a).get('/v1/unlimited').set('Authorization', 'Bot cheater').expect(t.outside);
      await request(a).get('/v1/things').set('Authorization', 'Bot cheater').expect(403);
    });
  });
});

describeRedis('the Redis store: what requests outside the table cost', () => {
  const pairs = redisPair();
  beforeAll(() => pairs.start(), 30_000);
  afterAll(() => pairs.stop());

  it.each([
    { bans: 'no ban active', banFirst: false },
    { bans: 'another client banned', banFirst: true },
  ])('requests of unbanned clients outside the table send Redis no command ($bans)', async ({ banFirst }) => {
    const [a, b] = pairs.pair({ ban });
    const limiters = [a, b].map((app) => app.locals.limiter as ListingLimitsMiddleware);
    try {
      if (banFirst) {
        for (const status of [200, 200, 429, 403]) {
          await request(a).get('/v1/things').set('Authorization', 'Bot cheater').expect(status);
        }
        await eventually(async () => {
          await request(b).get('/v1/unlimited').set('Authorization', 'Bot cheater').expect(403);
        });
      }
      const redis = pairs.redis as Redis;
      const before = await commandCalls(redis);
      for (let i = 0; i < 40; i++) {
        await request(i % 2 ? a : b)
          .get('/v1/unlimited')
          .set('Authorization', `Bot honest-${i}`)
          .expect(200);
        await request(i % 2 ? a : b)
          .get('/v1/elsewhere')
          .expect(404);
      }
      const after = await commandCalls(redis);
      // Besides INFO itself, only each instance's background read of the bans' version (HGET, twice a second).
      const sent = [...after].filter(([name, calls]) => !['info', 'hget'].includes(name) && calls !== before.get(name));
      expect(sent).toEqual([]);
    } finally {
      for (const limiter of limiters) limiter.close();
    }
  });
});
