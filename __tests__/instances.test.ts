// Two app instances in separate Node processes sharing one Redis: shared counters, an outage mid-traffic, recovery.
import { spawn } from 'node:child_process';
import request from 'supertest';
import { compiledLib } from './helpers/compiled';
import { describeRedisServer, RedisCluster, RedisServer } from './helpers/redis';
import { withClients } from './helpers/redis-env';
import { type Instance, startInstance, stopInstances } from './helpers/store-processes';

/** How each instance's Redis store is set up: its wait for Redis, and what a request gets when that runs out. */
interface StoreSetup {
  readonly timeoutMs: number;
  readonly onFailure: 'memory' | 'closed';
}
/**
 * For counting while Redis is up: no answer of a busy machine's Redis comes that late, and if one did, its request
 * would be a loud 503 rather than a pass counted in one instance's memory.
 */
const sharing: StoreSetup = { timeoutMs: 10_000, onFailure: 'closed' };
/**
 * For the outage: the in-memory fallback, and a timeout short enough to wait for while Redis is gone, yet 2 s, far
 * above any lag of Redis on a busy machine once it is back.
 */
const outage: StoreSetup = { timeoutMs: 2000, onFailure: 'memory' };
/**
 * A request in flight when Redis goes away is answered only by the store's timeout: without it, never (ioredis
 * sends it again once Redis is back, after the test). So any deadline finds a missing timeout; 5 s above it leave
 * HTTP on a busy machine all the time it needs.
 */
const deadline = (setup: StoreSetup) => setup.timeoutMs + 5000;

/**
 * An instance of instance.js: listing B counted with `setup`, in an app that burns `busyMs` of CPU per answer, on a
 * clock `skewMs` off; resolves once it listens and its Redis client is ready.
 */
function startB(
  lib: string,
  target: string,
  prefix: string,
  setup: StoreSetup,
  busyMs = 0,
  kind: 'ioredis' | 'node-redis' | 'glide' | 'ioredis-cluster' = 'ioredis',
  clock: { window: 'fixed' | 'sliding'; skewMs: number } = { window: 'fixed', skewMs: 0 },
): Promise<Instance> {
  return startInstance(lib, kind, target, prefix, { ...setup, busyMs, ...clock }, 'instance.js');
}

/** Waits until `condition()`, for up to 20 s: a bound for a hang, not a speed the machine must keep up. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  if (!condition()) throw new Error(`timed out waiting until ${what}`);
}

describeRedisServer('two app instances in separate processes, sharing one Redis', () => {
  let lib: string;
  let redis: RedisServer;
  let instances: Instance[] = [];
  const startPair = async (prefix: string, setup: StoreSetup) => {
    const pair = await Promise.all([0, 1].map(() => startB(lib, redis.url, prefix, setup)));
    instances.push(...pair);
    return pair;
  };

  beforeAll(async () => {
    // The instances load lib/ compiled to CommonJS.
    lib = compiledLib();
    redis = await RedisServer.start();
  }, 60_000);

  afterAll(async () => {
    await stopInstances(instances);
    instances = [];
    await redis?.close();
  });

  /** `count` requests sent at once, alternating between the two instances of `pair`; their statuses. */
  const burst = (pair: Instance[], setup: StoreSetup, count: number, send: (url: string) => request.Test) =>
    Promise.all(
      Array.from({ length: count }, (_, i) =>
        send((pair[i % 2] as Instance).url)
          .timeout(deadline(setup))
          .then((res) => res.status),
      ),
    );
  const tally = (statuses: number[]) =>
    statuses.reduce<Record<number, number>>((t, s) => ({ ...t, [s]: (t[s] ?? 0) + 1 }), {});

  it('of 3 × limit simultaneous requests spread over both, exactly limit succeed', async () => {
    const pair = await startPair('sharing', sharing);
    const statuses = await burst(pair, sharing, 75, (url) => request(url).get('/v1/bots'));
    expect(tally(statuses)).toEqual({ 200: 25, 429: 50 });
  }, 60_000);

  it.each(
    withClients(['ioredis', 'node-redis', 'glide', 'cluster'] as const, (c) => (c === 'cluster' ? 'ioredis' : c)),
  )(
    'with the store defaults, three instances on %s and a busy CPU: of bursts of 300, exactly the limit passes',
    async (client) => {
      // The defaults (200 ms, the memory fallback) on a loaded machine, with apps that burn 10 ms per answer: an
      // instance whose event loop is too busy to read Redis' answer in time must take that answer, not count the
      // request in its own memory.
      const defaults: StoreSetup = { timeoutMs: 200, onFailure: 'memory' };
      const cluster = client === 'cluster' ? await RedisCluster.start(3) : undefined;
      const url = cluster ? cluster.servers.map((s) => s.url).join(',') : redis.url;
      const kind = client === 'cluster' ? 'ioredis-cluster' : client;
      const trio = await Promise.all([0, 1, 2].map(() => startB(lib, url, `defaults-${client}`, defaults, 10, kind)));
      instances.push(...trio);
      // One request through each instance first: its client's connections (a Cluster's to every master) are open and
      // the script is loaded before the bursts, which then measure counting, not connecting.
      for (const instance of trio) {
        for (const path of ['/v1/statistics', '/v1/users/1', '/v1/bots/1']) await request(instance.url).get(path);
      }
      const busy = spawn(process.execPath, ['-e', 'for(;;){}']);
      try {
        for (const token of ['Bot burst-1', 'Bot burst-2', 'Bot burst-3']) {
          const statuses = await Promise.all(
            Array.from({ length: 300 }, (_, i) =>
              request((trio[i % 3] as Instance).url)
                .get('/v1/bots')
                .set('Authorization', token)
                .timeout(deadline(defaults))
                .then((res) => res.status),
            ),
          );
          expect(tally(statuses)).toEqual({ 200: 25, 429: 275 });
        }
      } finally {
        busy.kill();
        await stopInstances(trio);
        instances = instances.filter((i) => !trio.includes(i));
        await cluster?.close();
      }
    },
    120_000,
  );

  it('sliding windows, two instances whose clocks are 3 minutes apart: of 300 simultaneous requests, exactly 25 pass', async () => {
    const pair = await Promise.all(
      [-90_000, 90_000].map((skewMs) =>
        startB(lib, redis.url, 'sliding', sharing, 0, 'ioredis', { window: 'sliding', skewMs }),
      ),
    );
    instances.push(...pair);
    const answers = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        request((pair[i % 2] as Instance).url)
          .get('/v1/bots')
          .set('Authorization', 'Bot sliding')
          .timeout(deadline(sharing)),
      ),
    );
    expect(tally(answers.map((res) => res.status))).toEqual({ 200: 25, 429: 275 });
    // Each instance tells the time left from Redis' clock, whatever its own says: within the minute's window.
    for (const res of answers) {
      const after = Number(res.headers['x-ratelimit-reset-after']);
      expect(after).toBeGreaterThan(0);
      expect(after).toBeLessThanOrEqual(60);
    }
  }, 60_000);

  it('Redis stopped mid-traffic: every request answered in time, limits held per instance; restarted: shared again', async () => {
    const pair = await startPair('outage', outage);
    const post = (authorization: string) => (url: string) =>
      request(url).post('/v1/bots/1').set('Authorization', authorization);

    // Traffic in flight while Redis goes away: every request is answered, in time, with 200 or 429.
    const traffic = burst(pair, outage, 40, post('Bot mid-traffic'));
    await redis.stop();
    const during = await traffic;
    expect(during).toHaveLength(40);
    expect(during.filter((status) => status !== 200 && status !== 429)).toEqual([]);

    // While Redis is down, each instance counts in its own memory: 15 per instance on POST /v1/bots/:id.
    expect(tally(await burst(pair, outage, 60, post('Bot while-down')))).toEqual({ 200: 30, 429: 30 });

    await redis.start();
    await until(() => pair.every((i) => i.readies() >= 2), 'both instances have reconnected to Redis');
    expect(tally(await burst(pair, outage, 45, post('Bot after-restart')))).toEqual({ 200: 15, 429: 30 });

    for (const instance of pair) {
      expect(instance.child.exitCode).toBeNull();
      expect(instance.stderr()).toBe('');
    }
  }, 60_000);
});
