// Every Redis client the store takes, on one redis-server, two app instances in processes of their own: exact counts,
// bans, grants and grant requests, a lost script cache, an outage and recovery; judged by what the server counted.
import type Redis from 'ioredis';
import type { GrantRequestInput } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { PROBE_EVERY_MS } from '../lib/stores/waiting';
import { describeRedisServer, ioredisClient, RedisServer } from './helpers/redis';
import { type ClientPackage, withClients } from './helpers/redis-env';
import { compiledLib } from './helpers/compiled';
import {
  burst,
  call,
  counterOf,
  type ClientKind,
  get,
  hitsRun,
  type Instance,
  type InstanceOptions,
  scriptsRun,
  send,
  startInstance,
  stopInstances,
  within,
} from './helpers/store-processes';

const LIMIT = 25;
/**
 * A window no test outlives. The in-memory fallback, so that a request Redis did not count would show as one more
 * request let through; a timeout short enough to wait for while Redis is away, yet 2 s, far above any lag of Redis on
 * a busy machine (the store counts only the time the process waits with nothing else to do).
 */
const options: InstanceOptions = {
  rows: [{ method: 'GET', path: '/v1/things', limit: LIMIT, windowMs: 60_000 }],
  timeoutMs: 2000,
  onFailure: 'memory',
};
const windows = ['fixed', 'sliding'] as const;
type Window = (typeof windows)[number];

/** The client kinds whose package loads here (all of them under CI): see withClients. */
const kinds = withClients<[string, ClientKind & ClientPackage]>(
  [
    ['ioredis', 'ioredis'],
    ['node-redis', 'node-redis'],
    ['iovalkey', 'iovalkey'],
    ['Valkey GLIDE', 'glide'],
  ],
  ([, kind]) => kind,
);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeRedisServer('one redis-server, two app instances in separate processes', () => {
  let lib: string | undefined;
  let redis: RedisServer;
  let inspect: Redis; // reads what the server counted, as an operator would
  beforeAll(async () => {
    lib = compiledLib();
    redis = await RedisServer.start();
    inspect = await ioredisClient(redis.url);
  }, 60_000);
  afterAll(async () => {
    inspect?.disconnect();
    await redis?.close();
  });

  describe.each(kinds)('through %s', (_name, kind) => {
    const prefix = `clients-${kind}`;
    let pair: Instance[] = [];
    beforeAll(async () => {
      pair = await Promise.all([0, 1].map(() => startInstance(lib!, kind, redis.url, prefix, options)));
    }, 30_000);
    afterAll(async () => {
      await stopInstances(pair);
      for (const instance of pair) expect(instance.stderr()).toBe('');
    });

    /** The key of `token`'s counter of `/<window>/v1/things` (` (x2)` for a grant's variant), as the store names it. */
    const keyOf = (window: Window, token: string, variant = '') =>
      window === 'fixed'
        ? `${prefix}:GET /fixed/v1/things${variant}:${tokenKey(token)}`
        : `${prefix}:GET /sliding/v1/things${variant}:{${tokenKey(token)}}:s60`;
    /**
     * What the server counted for `token`: a fixed window's count (every request that reached Redis, refused ones
     * too), or the requests a sliding window holds (only those let through).
     */
    /** What the server ran to count: INCRs for fixed windows, scripts for sliding ones. */
    const runs = (window: Window) => (window === 'fixed' ? hitsRun(inspect) : scriptsRun(inspect));
    const counted = async (window: Window, token: string, variant = '') =>
      window === 'fixed'
        ? Number(await inspect.get(keyOf(window, token, variant)))
        : inspect.llen(keyOf(window, token, variant));

    it.each(windows)(
      '%s windows: of 300 simultaneous requests spread over both, exactly 25 pass, each one counted by the server',
      async (window) => {
        const token = `Bot exact-${window}`;
        const before = await runs(window);
        expect(await burst(pair, 300, `/${window}/v1/things`, token)).toEqual({ 200: LIMIT, 429: 300 - LIMIT });
        const counts = (await runs(window)) - before;
        // Fixed: one INCR per request that reached Redis, each counted; those refused from an instance's memory of
        // Redis' refusal reached nothing. Sliding: one script per request that reached Redis, and only the requests
        // let through are held.
        if (window === 'fixed') expect(await counted(window, token)).toBe(counts);
        else expect(await counted(window, token)).toBe(LIMIT);
        // Each instance learns of the refusals from Redis' own answer: at least one refused request reached it.
        expect(counts).toBeGreaterThan(LIMIT);
      },
    );

    it('a ban, a grant and a grant request made through one instance hold on the other within 1 s', async () => {
      const [a, b] = pair as [Instance, Instance];
      const [banned, granted, requester] = ['Bot banned', 'Bot granted', 'Bot requester-7f3e'];

      expect(await call(a, 'ban', { token: banned }, { duration: 600_000, reason: 'abuse' })).toBe(true);
      let from = performance.now();
      await within(
        from,
        1000,
        'B refuses the client A banned',
        async () => (await send(b, '/outside', banned)) === 403,
      );

      expect(await call(b, 'grant', { token: granted }, { multiplier: 2 })).toBe(true);
      from = performance.now();
      // Seen through the fixed windows' middleware, which B changed: its sliding one reads the change as A does. No
      // request of the client counts before A knows its grant: 50 pass, of the grant's 50, on the grant's own counter.
      const variant = (multiplier: number) => `GET /fixed/v1/things (x${multiplier})`;
      await within(from, 1000, 'A applies the grant B made', async () => (await counterOf(a, granted)) === variant(2));
      const before = await hitsRun(inspect);
      expect(await burst(pair, 100, '/fixed/v1/things', granted)).toEqual({ 200: 50, 429: 50 });
      expect(await counted('fixed', granted, ' (x2)')).toBe((await hitsRun(inspect)) - before);

      const input: GrantRequestInput = {
        token: requester,
        ask: { multiplier: 10 },
        proof: { kind: 'bot', servers: 5000, shards: 5, link: 'https://example.com/bot' },
        contact: 'ops@example.com',
        reason: 'A large bot.',
      };
      const filed = (await call(a, 'requests.file', input)) as { id: string; status: string };
      expect(filed.status).toBe('pending');
      expect(((await call(b, 'requests.list')) as { id: string }[]).map((r) => r.id)).toEqual([filed.id]);
      const approved = (await call(b, 'requests.approve', filed.id, { multiplier: 10 })) as { status: string };
      expect(approved.status).toBe('approved');
      expect(((await call(a, 'requests.status', filed.id, requester)) as { status: string }).status).toBe('approved');
      from = performance.now();
      await within(
        from,
        1000,
        'A applies the grant B approved',
        async () => (await counterOf(a, requester)) === variant(10),
      );
      expect(await get(a, '/fixed/v1/things', requester)).toEqual({ status: 200, limit: '250' });

      expect(await call(b, 'unban', { token: banned })).toBe(true);
      from = performance.now();
      await within(
        from,
        1000,
        'A serves the client B unbanned',
        async () => (await send(a, '/outside', banned)) === 200,
      );
      expect(await call(a, 'bans')).toEqual([]);
      expect(((await call(a, 'grants')) as { key: string }[]).map((g) => g.key).sort()).toEqual(
        [tokenKey(granted), tokenKey(requester)].sort(),
      );
      // One record per grant in the store's hash; the ban is gone.
      const records = Object.keys(await inspect.hgetall(`${prefix}:{runtime}:record`)).filter(
        (f) => !f.startsWith('#'),
      );
      expect(records.sort()).toEqual([`grant:${tokenKey(granted)}`, `grant:${tokenKey(requester)}`].sort());
      expect(pair.map((i) => i.errors)).toEqual([[], []]);
    });

    it.each(windows)(
      '%s windows: Redis loses its scripts (SCRIPT FLUSH) mid-window: loaded again, every request counted in Redis, exactly',
      async (window) => {
        const [a, b] = pair as [Instance, Instance];
        const token = `Bot flush-${window}`;
        const path = `/${window}/v1/things`;
        expect(await burst(pair, 10, path, token)).toEqual({ 200: 10 });
        expect(await inspect.script('FLUSH')).toBe('OK');
        const before = await runs(window);
        // Counted in memory instead, these would let 25 more through on each instance.
        expect(await burst(pair, 40, path, token)).toEqual({ 200: LIMIT - 10, 429: 40 - (LIMIT - 10) });
        const counts = (await runs(window)) - before;
        expect(await counted(window, token)).toBe(window === 'fixed' ? 10 + counts : LIMIT);
        // A window that begins after the flush: its key is given its expiry by a script loaded again.
        const fresh = `Bot flush-fresh-${window}`;
        expect(await burst(pair, 5, path, fresh)).toEqual({ 200: 5 });
        expect(await inspect.pttl(keyOf(window, fresh))).toBeGreaterThan(50_000);

        // The runtime state's scripts were lost too: a ban through A still holds on B.
        const banned = `Bot flush-banned-${window}`;
        expect(await call(a, 'ban', { token: banned }, { duration: 600_000 })).toBe(true);
        const from = performance.now();
        await within(from, 1000, 'B refuses the client A banned', async () => (await send(b, path, banned)) === 403);
        expect(await call(b, 'unban', { token: banned })).toBe(true);
        expect(pair.map((i) => i.errors)).toEqual([[], []]);
      },
    );

    it('Redis stopped: every request answered, 200 or 429 counted in memory; restarted: counted in Redis, exactly', async () => {
      const [a, b] = pair as [Instance, Instance];
      // Traffic in flight while Redis goes away: each request is answered, within the store's timeout.
      const inFlight = burst(pair, 40, '/fixed/v1/things', 'Bot mid-traffic', options.timeoutMs + 5000);
      await redis.stop();
      const during = await inFlight;
      expect(Object.keys(during).filter((status) => status !== '200' && status !== '429')).toEqual([]);

      // While it is down, each instance counts in its own memory: 25 per instance of the 30 it gets.
      expect(await burst(pair, 60, '/fixed/v1/things', 'Bot while-down', options.timeoutMs + 5000)).toEqual({
        200: 2 * LIMIT,
        429: 60 - 2 * LIMIT,
      });
      expect(await burst(pair, 60, '/sliding/v1/things', 'Bot while-down', options.timeoutMs + 5000)).toEqual({
        200: 2 * LIMIT,
        429: 60 - 2 * LIMIT,
      });

      await redis.start();
      // Back once a request through each middleware of each instance is counted in Redis. A client that waited for
      // the Redis that was down (GLIDE cannot tell it is not connected) opened the middlewares' breakers: a request
      // after PROBE_EVERY_MS closes each.
      let probes = 0;
      const countedThrough = async (instance: Instance) => {
        const answers = await Promise.all(
          windows.map(async (window) => {
            const token = `Bot probe-${++probes}`;
            await send(instance, `/${window}/v1/things`, token, options.timeoutMs + 5000);
            return (await counted(window, token)) === 1;
          }),
        );
        return answers.every(Boolean);
      };
      const restarted = performance.now();
      await within(restarted, 20_000, 'both instances count in Redis again', async () => {
        const answers = await Promise.all([a, b].map(countedThrough));
        return answers.every(Boolean);
      });
      await sleep(PROBE_EVERY_MS + 50);
      expect(await Promise.all([a, b].map(countedThrough))).toEqual([true, true]);

      for (const window of windows) {
        const token = `Bot after-restart-${window}`;
        const before = await runs(window);
        expect(await burst(pair, 75, `/${window}/v1/things`, token)).toEqual({ 200: LIMIT, 429: 75 - LIMIT });
        const counts = (await runs(window)) - before;
        expect(await counted(window, token)).toBe(window === 'fixed' ? counts : LIMIT);
      }
      for (const instance of pair) expect(instance.child.exitCode).toBeNull();
    }, 60_000);
  });
});
