// The Redis store against real Redis servers: client kinds, keys, a limiter's reads and writes, every failure mode and
// recovery. What each request sends is in redis-commands.test.ts, a Cluster through ioredis in redis-cluster.test.ts.
import { PROBE_EVERY_MS } from '../lib/stores/waiting';
import type { Server } from 'node:http';
import Redis from 'ioredis';
import { createClient } from 'redis';
import { RateLimiterRes } from 'rate-limiter-flexible';
import request from 'supertest';
import {
  type EndpointRow,
  listingLimits,
  ListingLimitsError,
  type RedisFailureMode,
  redisStore,
  type Store,
} from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { createApp } from './helpers/app';
import {
  describeRedis,
  describeRedisServer,
  glideClient,
  ioredisClient,
  RedisServer,
  scanKeys,
  startRedis,
} from './helpers/redis';
import { type ClientPackage, withClients } from './helpers/redis-env';

/** One endpoint with a long window, so that real time never ends it during a test. */
const row: EndpointRow = { method: 'GET', path: '/v1/things/:id', limit: 2, windowMs: 60_000 };
const BUCKET = 'GET /v1/things/:id';
const BODY_503 =
  '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}';

/**
 * How the tests that count in Redis set the store up: no answer of a busy machine's Redis comes 10 s late, and if
 * one did, its request would be a loud 503 rather than a pass counted in memory.
 */
const counting = { timeoutMs: 10_000, onFailure: 'closed' } as const;

let prefixes = 0;
/** A prefix no other test uses, so that tests never share counters, even in one shared Redis (REDIS_URL). */
const freshPrefix = () => `test-${process.pid}-${++prefixes}`;

const serve = (store: Store) => createApp({ listing: [row], options: { store } }).listen(0, '127.0.0.1');

/**
 * GET on the endpoint, with an Authorization value when given; the request must be answered within `deadlineMs`
 * (by default, the counting store's timeout and 5 s more: a bound for a hang, not a speed the machine must keep up).
 */
function get(server: Server, authorization?: string, deadlineMs = counting.timeoutMs + 5000) {
  const req = request(server).get('/v1/things/1').timeout(deadlineMs);
  return authorization === undefined ? req : req.set('Authorization', authorization);
}

/** Status and X-RateLimit-Remaining of each response, for exact comparison. */
const outcome = (res: request.Response) => `${res.status} ${res.headers['x-ratelimit-remaining'] ?? '-'}`;

/** Waits until `condition()`, for up to 20 s: a bound for a hang, not a speed the machine must keep up. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !(await condition()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  if (!(await condition())) throw new Error(`timed out waiting until ${what}`);
}

/** A connected client of one kind, and how to tell it is ready and close it. */
interface Connection {
  readonly client: Parameters<typeof redisStore>[0];
  /** Whether the client is connected; GLIDE, which does not tell, is asked with a PING. */
  ready(): boolean | Promise<boolean>;
  /**
   * Whether its commands wait for a Redis that is down, as for one that hangs (GLIDE: it cannot tell the store it is
   * not connected), instead of failing at once.
   */
  readonly waitsWhileDown?: boolean;
  close(): Promise<void>;
}

/** The client kinds whose package loads here (all of them under CI): see withClients. */
const clientKinds = withClients<[string, (url: string) => Promise<Connection>]>(
  [
    [
      'ioredis',
      async (url) => {
        const client = await ioredisClient(url);
        return { client, ready: () => client.status === 'ready', close: async () => client.disconnect() };
      },
    ],
    [
      'node-redis',
      async (url) => {
        const client = createClient({ url, socket: { reconnectStrategy: 50 } });
        client.on('error', () => {});
        await client.connect();
        return { client, ready: () => client.isReady, close: async () => client.destroy() };
      },
    ],
    [
      'GLIDE',
      async (url) => {
        const client = await glideClient(url);
        const ready = () =>
          client.customCommand(['PING']).then(
            () => true,
            () => false,
          );
        return { client, ready, waitsWhileDown: true, close: async () => client.close() };
      },
    ],
  ],
  ([kind]) => (kind === 'GLIDE' ? 'glide' : (kind as ClientPackage)),
);

describe('redisStore: bad configuration fails at creation, naming the field', () => {
  const client = new Redis({ lazyConnect: true }); // never connects: only its kind is looked at
  afterAll(() => client.disconnect());

  it.each([
    { name: 'options not an object', options: 'x', code: 'ERR_INVALID_OPTION', field: 'options' },
    { name: 'option typo', options: { timeout: 100 }, code: 'ERR_UNKNOWN_OPTION', field: 'options.timeout' },
    { name: 'empty prefix', options: { prefix: '' }, code: 'ERR_INVALID_OPTION', field: 'options.prefix' },
    { name: 'prefix not a string', options: { prefix: 5 }, code: 'ERR_INVALID_OPTION', field: 'options.prefix' },
    { name: 'zero timeout', options: { timeoutMs: 0 }, code: 'ERR_INVALID_OPTION', field: 'options.timeoutMs' },
    { name: 'fractional timeout', options: { timeoutMs: 1.5 }, code: 'ERR_INVALID_OPTION', field: 'options.timeoutMs' },
    {
      name: 'timeout too long',
      options: { timeoutMs: 2 ** 31 },
      code: 'ERR_INVALID_OPTION',
      field: 'options.timeoutMs',
    },
    {
      name: 'timeout as string',
      options: { timeoutMs: '100' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.timeoutMs',
    },
    ...[9, 60_001, 1.5, '5000'].map((trafficIntervalMs) => ({
      name: `traffic interval of ${JSON.stringify(trafficIntervalMs)}`,
      options: { trafficIntervalMs },
      code: 'ERR_INVALID_OPTION',
      field: 'options.trafficIntervalMs',
    })),
    {
      name: 'unknown mode',
      options: { onFailure: 'fallback' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.onFailure',
    },
  ])('$name → $code at $field', ({ options, code, field }) => {
    let error: unknown;
    try {
      redisStore(client, options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ListingLimitsError);
    expect(error).toMatchObject({ code, field });
    expect((error as Error).message).toMatch(new RegExp(`^redisStore: ${field.replace(/[.]/g, '\\.')} `));
  });

  it('suggests the option meant by a typo', () => {
    expect(() => redisStore(client, { timeout: 100 } as never)).toThrow(
      'redisStore: options.timeout is not an option. Did you mean `timeoutMs`?',
    );
  });

  it('refuses a node-redis client without an error listener, which would crash the process when Redis goes away', () => {
    const bare = createClient(); // never connected
    expect(() => redisStore(bare)).toThrow(
      "redisStore: client has no 'error' listener: node-redis would crash the process when Redis goes away. " +
        "Add client.on('error', ...) before calling redisStore().",
    );
    bare.on('error', () => {});
    expect(typeof redisStore(bare)).toBe('function');
  });

  it.each([
    ['undefined', undefined, 'got undefined.'],
    ['a plain object', {}, 'got an object that is none of these.'],
    ['a URL', 'redis://127.0.0.1:6379', 'got "redis://127.0.0.1:6379".'],
  ])('rejects %s as the client', (_name, client, got) => {
    expect(() => redisStore(client as never)).toThrow(
      'redisStore: client must be an ioredis (or iovalkey) client or Cluster, a node-redis (v4 or later) client or ' +
        `cluster, or a Valkey GLIDE GlideClient or GlideClusterClient; ${got}`,
    );
  });
});

describeRedis('redisStore', () => {
  let redis: Awaited<ReturnType<typeof startRedis>>;
  let inspect: Redis; // looks at what the store wrote, the way an operator would
  beforeAll(async () => {
    redis = await startRedis();
    inspect = await ioredisClient(redis.url);
  });
  afterAll(async () => {
    if (inspect) {
      const keys = await scanKeys(inspect, `test-${process.pid}-*`);
      if (keys.length > 0) await inspect.del(...keys);
      inspect.disconnect();
    }
    await redis?.close();
  });

  describe.each(clientKinds)('with %s', (_kind, connect) => {
    let connections: Connection[] = [];
    const open = async () => {
      const connection = await connect(redis.url);
      connections.push(connection);
      return connection.client;
    };
    const servers: Server[] = [];
    const serveOn = (store: Store) => {
      const server = serve(store);
      servers.push(server);
      return server;
    };
    afterEach(async () => {
      for (const server of servers.splice(0)) server.close();
      await Promise.all(connections.map((c) => c.close()));
      connections = [];
    });

    it('counts in Redis: two app instances with their own clients share every counter', async () => {
      const prefix = freshPrefix();
      const one = serveOn(redisStore(await open(), { prefix, ...counting }));
      const two = serveOn(redisStore(await open(), { prefix, ...counting }));
      const first = await get(one).expect(200);
      expect(first.headers).toMatchObject({
        ratelimit: `"${BUCKET}";r=1;t=60`,
        'x-ratelimit-remaining': '1',
        'x-ratelimit-bucket': BUCKET,
      });
      expect(outcome(await get(two))).toBe('200 0');
      const refused = await get(one).expect(429);
      expect(refused.headers['retry-after']).toBe('60');
      expect(outcome(await get(two))).toBe('429 0');
      expect(await inspect.get(`${prefix}:${BUCKET}:ip:127.0.0.1`)).toBe('4');
    });

    it('lets exactly `limit` of many simultaneous requests through two instances', async () => {
      const prefix = freshPrefix();
      const instances = [
        serveOn(redisStore(await open(), { prefix, ...counting })),
        serveOn(redisStore(await open(), { prefix, ...counting })),
      ];
      const statuses = await Promise.all(
        Array.from({ length: 3 * row.limit * 5 }, (_, i) =>
          get(instances[i % 2] as Server, 'Bot burst').then((res) => res.status),
        ),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(row.limit);
      expect(statuses.filter((s) => s === 429)).toHaveLength(3 * row.limit * 5 - row.limit);
    });

    it("its limiters are rate-limiter-flexible limiters on the hits' keys: get, set, consume, penalty, reward, block, delete", async () => {
      const prefix = freshPrefix();
      const limiter = redisStore(await open(), { prefix, ...counting })({ name: 'GET /x', limit: 3, windowMs: 60_000 });
      const counts = limiter as unknown as { hit(key: string): Promise<{ count: number; resetAt: number }[]> };
      const key = `${prefix}:GET /x:k`;
      /** A result as compared, and its time left, which must be within the window it was given. */
      const seen = (result: RateLimiterRes | null, windowMs = 60_000) => {
        if (result === null) return null;
        expect(result.msBeforeNext).toBeGreaterThan(0);
        expect(result.msBeforeNext).toBeLessThanOrEqual(windowMs);
        return `${result.consumedPoints}/${result.remainingPoints}`;
      };
      const refused = (promise: Promise<RateLimiterRes>) =>
        promise.then(
          () => 'passed',
          (rejection: unknown) => (rejection instanceof RateLimiterRes ? `refused ${seen(rejection)}` : rejection),
        );
      expect(seen(await limiter.get('k'))).toBeNull();
      expect((await counts.hit('k'))[0]?.count).toBe(1);
      expect(seen(await limiter.get('k'))).toBe('1/2');
      await limiter.set('k', 2, 30);
      expect([seen(await limiter.get('k'), 30_000), await inspect.get(key)]).toEqual(['2/1', '2']);
      expect(seen(await limiter.consume('k'), 30_000)).toBe('3/0');
      expect(await refused(limiter.consume('k'))).toBe('refused 4/0');
      expect(seen(await limiter.penalty('k', 2), 30_000)).toBe('6/0');
      expect(seen(await limiter.reward('k', 4), 30_000)).toBe('2/1');
      expect(await limiter.delete('k')).toBe(true);
      expect(await limiter.delete('k')).toBe(false);
      expect([seen(await limiter.get('k')), await inspect.exists(key)]).toEqual([null, 0]);
      await limiter.block('k', 10);
      expect([seen(await limiter.get('k'), 10_000), await inspect.get(key)]).toEqual(['4/0', '4']);
    });

    it('reads a runtime state another writer filled with hostile fields and values as every client does', async () => {
      const prefix = freshPrefix();
      const record = `${prefix}:{runtime}:record`;
      // Names that are something else on a plain object, bytes that are not UTF-8, a field that is not a record.
      await inspect.hset(record, '__proto__', '{"x":1}', 'constructor', 'banned!', '#seq', 'nine');
      await inspect.hset(record, Buffer.from([...Buffer.from('ban:t:'), 0xff]), Buffer.from([0xff, 0xfe, 0x00]));
      const limits = listingLimits([row], { store: redisStore(await open(), { prefix, ...counting }) });
      try {
        const foreign = await limits.foreign();
        // Each listed as stored, for an operator to remove: none taken for a record, nor for the state's own fields.
        expect(foreign.map((f) => [f.field, f.text, f.problem])).toEqual([
          ['__proto__', '{"x":1}', 'is of a kind this version does not know ("__proto_")'],
          ['ban:t:\ufffd', '\ufffd\ufffd\u0000', 'is not JSON'],
          ['constructor', 'banned!', 'is of a kind this version does not know ("constructo")'],
        ]);
        expect(await limits.ban({ token: 'Bot after-the-junk' }, { duration: 60_000 })).toBe(true);
        expect((await limits.bans()).map((b) => b.key)).toEqual([tokenKey('Bot after-the-junk')]);
      } finally {
        limits.close();
      }
    });

    it('bans by rule and tokens per address, read and forgotten through the store: unban lets the address back', async () => {
      const ban = { after: 1, within: 60_000, duration: 600_000, tokensPerIp: 2 };
      const app = createApp({
        listing: [row],
        options: { store: redisStore(await open(), { prefix: freshPrefix(), ...counting }), ban },
      });
      const server = app.listen(0, '127.0.0.1');
      servers.push(server);
      const statuses = async (tokens: string[]) => {
        const out: number[] = [];
        for (const token of tokens) out.push((await get(server, token)).status);
        return out;
      };
      // A third token from one address bans the address; a token it presented before is read, over the count too.
      expect(await statuses(['Bot t1', 'Bot t2', 'Bot t3', 'Bot t1'])).toEqual([200, 200, 403, 403]);
      expect(await app.locals.limiter.unban({ ip: '127.0.0.1' })).toBe(true);
      // Its token count forgotten: the tokens it presented are served again, and a new one counts from one.
      expect(await statuses(['Bot t1', 'Bot t2', 'Bot t4'])).toEqual([200, 200, 200]);
      // The second refusal in the window bans the token (after: 1 counts the first).
      expect(await statuses(['Bot t1', 'Bot t1', 'Bot t1'])).toEqual([429, 403, 403]);
    });
  });

  it('keys are <prefix>:<endpoint>:<client key>, and no raw Authorization value is in any key or value', async () => {
    const prefix = freshPrefix();
    const token = 'Bot very-secret-token-5f1c';
    const client = await ioredisClient(redis.url);
    const server = createApp({ listing: 'B', options: { store: redisStore(client, { prefix, ...counting }) } }).listen(
      0,
    );
    try {
      // Endpoints with 15-second windows: no key expires before it is looked at, however slow the machine.
      await request(server).get('/v1/bots/1/upvotes').set('Authorization', token).expect(200);
      await request(server).post('/v1/bots/1').set('Authorization', token).expect(200);
      await request(server).get('/v1/bots/1/upvotes').expect(200);
      await request(server).get('/v1/bots/1/upvotes').expect(200);
      expect(await scanKeys(inspect, `${prefix}:*`)).toEqual([
        `${prefix}:GET /v1/bots/:id/upvotes:ip:127.0.0.1`,
        `${prefix}:GET /v1/bots/:id/upvotes:${tokenKey(token)}`,
        `${prefix}:POST /v1/bots/:id:${tokenKey(token)}`,
      ]);
      for (const key of await scanKeys(inspect, '*')) {
        expect(key).not.toContain('very-secret');
        const type = await inspect.type(key);
        if (type === 'string') expect(await inspect.get(key)).not.toContain('very-secret');
        const dump = await inspect.dumpBuffer(key);
        expect(dump?.includes('very-secret')).toBeFalsy();
      }
      expect(await inspect.get(`${prefix}:GET /v1/bots/:id/upvotes:ip:127.0.0.1`)).toBe('2');
    } finally {
      server.close();
      client.disconnect();
    }
  });

  it('the default prefix is listing-limits', async () => {
    const client = await ioredisClient(redis.url);
    const server = serve(redisStore(client, counting));
    const key = `listing-limits:${BUCKET}:${tokenKey(`default-prefix-${process.pid}`)}`;
    try {
      await get(server, `default-prefix-${process.pid}`).expect(200);
      expect(await inspect.get(key)).toBe('1');
    } finally {
      await inspect.del(key);
      server.close();
      client.disconnect();
    }
  });

  it('apps with different prefixes in one Redis do not share counters', async () => {
    const client = await ioredisClient(redis.url);
    const [a, b] = [freshPrefix(), freshPrefix()];
    const appA = serve(redisStore(client, { prefix: a, ...counting }));
    const appB = serve(redisStore(client, { prefix: b, ...counting }));
    try {
      expect([outcome(await get(appA)), outcome(await get(appA)), outcome(await get(appA))]).toEqual([
        '200 1',
        '200 0',
        '429 0',
      ]);
      expect([outcome(await get(appB)), outcome(await get(appB))]).toEqual(['200 1', '200 0']);
      expect(await inspect.get(`${a}:${BUCKET}:ip:127.0.0.1`)).toBe('3');
      expect(await inspect.get(`${b}:${BUCKET}:ip:127.0.0.1`)).toBe('2');
    } finally {
      appA.close();
      appB.close();
      client.disconnect();
    }
  });
});

describeRedisServer('redisStore when Redis fails', () => {
  /**
   * Short enough to wait for while Redis hangs, yet 1 s, far above any lag of Redis on a busy machine: a request
   * that Redis answers, before the failure or after the recovery, is never handled as a failure.
   */
  const timeoutMs = 1000;
  /**
   * A request to a hanging or stopped Redis is answered only by the store's timeout: without it, never, before the
   * test recovers Redis. So any deadline finds a missing timeout; 5 s above it leave HTTP on a busy machine all the
   * time it needs.
   */
  const deadlineMs = timeoutMs + 5000;

  /**
   * What three requests from one client sent at once get while Redis is away, in each mode (one was counted in
   * Redis before), sorted.
   */
  const during: Record<RedisFailureMode, string[]> = {
    memory: ['200 0', '200 1', '429 0'],
    open: ['200 -', '200 -', '200 -'],
    closed: ['503 -', '503 -', '503 -'],
  };
  type Step = (server: RedisServer) => Promise<void> | void;
  const failures: [string, Step, Step][] = [
    ['stopped', (s) => s.stop(), (s) => s.start()],
    ['paused (hanging)', (s) => s.pause(), (s) => s.resume()],
  ];
  const cases = clientKinds.flatMap(([kind, connect]) =>
    failures.flatMap(([failure, fail, recover]) =>
      (['memory', 'open', 'closed'] as const).map((mode) => ({ kind, connect, failure, fail, recover, mode })),
    ),
  );

  it.each(cases)(
    '$kind, Redis $failure, onFailure $mode: answers as documented within the timeout, then counts in Redis again',
    async ({ connect, failure, fail, recover, mode }) => {
      const server = await RedisServer.start();
      const connections = [await connect(server.url), await connect(server.url)];
      const prefix = freshPrefix();
      const [one, two] = connections.map((c) => serve(redisStore(c.client, { prefix, timeoutMs, onFailure: mode })));
      const inspect = await ioredisClient(server.url);
      try {
        expect(outcome(await get(one as Server))).toBe('200 1');
        await fail(server);
        // At once, so that a hanging Redis costs one timeout, not three.
        const responses = await Promise.all([0, 1, 2].map(() => get(one as Server, undefined, deadlineMs)));
        for (const res of responses) {
          if (mode === 'closed') {
            expect(res.text).toBe(BODY_503);
            expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
          }
          if (mode !== 'memory') {
            expect(Object.keys(res.headers).filter((h) => /ratelimit|retry-after/.test(h))).toEqual([]);
          }
        }
        const answers = responses.map(outcome).sort();
        expect(answers).toEqual(during[mode]);

        await recover(server);
        await until(() => connections.every((c) => c.ready()), 'the clients have reconnected');
        // A Redis that hung opened the breaker of the instance that waited for it: it probes Redis again after
        // PROBE_EVERY_MS (a Redis that was down needs no wait, unless the client waited for it: other clients'
        // failures were immediate).
        const waited = failure.startsWith('paused') || connections[0]?.waitsWhileDown === true;
        if (waited) await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS + 50));
        const after = 'Bot after-the-outage';
        expect([
          outcome(await get(one as Server, after)),
          outcome(await get(two as Server, after)),
          outcome(await get(one as Server, after)),
        ]).toEqual(['200 1', '200 0', '429 0']);
        expect(await inspect.get(`${prefix}:${BUCKET}:${tokenKey(after)}`)).toBe('3');
      } finally {
        one?.close();
        two?.close();
        inspect.disconnect();
        await Promise.all(connections.map((c) => c.close()));
        await server.close();
      }
    },
  );
});
