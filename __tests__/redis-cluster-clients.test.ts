// Every Redis Cluster client the store takes, on a local cluster of three masters, two app instances in processes of
// their own: exact counts spread over the masters, bans, grants and grant requests, and every master losing its scripts.
import Redis from 'ioredis';
import { tokenKey } from '../lib/contract/keys';
import { describeRedisServer, RedisCluster, scanKeys } from './helpers/redis';
import { type ClientPackage, withClients } from './helpers/redis-env';
import { compiledLib } from './helpers/compiled';
import {
  burst,
  call,
  type ClientKind,
  counterOf,
  get,
  hitsRun,
  type Instance,
  type InstanceOptions,
  send,
  startInstance,
  stopInstances,
  within,
} from './helpers/store-processes';

const LIMIT = 25;
/** As in redis-clients.test.ts: a request Redis did not count would show as one more request let through. */
const options: InstanceOptions = {
  rows: [{ method: 'GET', path: '/v1/things', limit: LIMIT, windowMs: 60_000 }],
  timeoutMs: 2000,
  onFailure: 'memory',
};
const windows = ['fixed', 'sliding'] as const;
type Window = (typeof windows)[number];

/** The client kinds whose package loads here (all of them under CI): see withClients. */
const kinds = withClients<[string, ClientKind, ClientPackage]>(
  [
    ['an ioredis Cluster', 'ioredis-cluster', 'ioredis'],
    ['a node-redis cluster', 'node-redis-cluster', 'node-redis'],
    ['a Valkey GLIDE GlideClusterClient', 'glide-cluster', 'glide'],
  ],
  ([, , made]) => made,
);

describeRedisServer('a Redis Cluster of three masters, two app instances in separate processes', () => {
  let lib: string | undefined;
  let cluster: RedisCluster;
  let masters: Redis[] = []; // one connection per master, to read what each counted
  beforeAll(async () => {
    lib = compiledLib();
    cluster = await RedisCluster.start(3);
    masters = cluster.servers.map((s) => new Redis(s.url));
  }, 60_000);
  afterAll(async () => {
    for (const master of masters) master.disconnect();
    await cluster?.close();
  });

  /** Hits counted on fixed windows by every master (their INCRs), summed. */
  const runs = async () => (await Promise.all(masters.map(hitsRun))).reduce((a, b) => a + b);

  describe.each(kinds)('through %s', (_name, kind) => {
    const prefix = `cluster-${kind}`;
    let pair: Instance[] = [];
    beforeAll(async () => {
      const nodes = cluster.servers.map((s) => s.url).join(',');
      pair = await Promise.all([0, 1].map(() => startInstance(lib!, kind, nodes, prefix, options)));
    }, 30_000);
    afterAll(async () => {
      await stopInstances(pair);
      for (const instance of pair) expect(instance.stderr()).toBe('');
    });

    const keyOf = (window: Window, token: string) =>
      window === 'fixed'
        ? `${prefix}:GET /fixed/v1/things:${tokenKey(token)}`
        : `${prefix}:GET /sliding/v1/things:{${tokenKey(token)}}:s60`;
    /** Which master holds `key` (the others answer MOVED), and what it counted there. */
    const find = async (window: Window, key: string) => {
      for (const [i, master] of masters.entries()) {
        const value = await (window === 'fixed' ? master.get(key) : master.llen(key)).catch((error: Error) => {
          if (error.message.startsWith('MOVED ')) return undefined;
          throw error;
        });
        if (value !== undefined) return { master: i, counted: Number(value) };
      }
      throw new Error(`no master holds ${key}`);
    };

    /**
     * Three clients whose keys of `window` are on the three masters: `redis-cli --cluster create` gives each master a
     * third of the slots, in order, and Redis tells each key's slot.
     */
    const spread = async (window: Window, name: string) => {
      const chosen = new Map<number, string>();
      for (let n = 1; chosen.size < 3; n++) {
        const token = `Bot ${name}-${n}`;
        const slot = Number(await masters[0]?.cluster('KEYSLOT', keyOf(window, token)));
        const third = Math.floor((slot * 3) / 16384);
        if (!chosen.has(third)) chosen.set(third, token);
      }
      return [...chosen.values()];
    };

    it.each(windows)(
      '%s windows: three clients, 75 simultaneous requests each over both instances: exactly 25 pass, counted on three masters',
      async (window) => {
        const tokens = await spread(window, 'spread');
        const before = await runs();
        const tallies = await Promise.all(tokens.map((token) => burst(pair, 75, `/${window}/v1/things`, token)));
        expect(tallies).toEqual(tokens.map(() => ({ 200: LIMIT, 429: 75 - LIMIT })));
        const found = await Promise.all(tokens.map((token) => find(window, keyOf(window, token))));
        // Fixed: each request that reached Redis counted once on its key's master. Sliding: the 25 let through.
        if (window === 'fixed') expect(found.reduce((sum, f) => sum + f.counted, 0)).toBe((await runs()) - before);
        else expect(found.map((f) => f.counted)).toEqual(tokens.map(() => LIMIT));
        expect(new Set(found.map((f) => f.master)).size).toBe(3);
      },
    );

    it('a ban, a grant and a grant request made through one instance hold on the other within 1 s', async () => {
      const [a, b] = pair as [Instance, Instance];
      const [banned, requester] = ['Bot banned', 'Bot requester-7f3e'];
      expect(await call(a, 'ban', { token: banned }, { duration: 600_000 })).toBe(true);
      let from = performance.now();
      await within(
        from,
        1000,
        'B refuses the client A banned',
        async () => (await send(b, '/outside', banned)) === 403,
      );
      const filed = (await call(a, 'requests.file', {
        token: requester,
        ask: 'unlimited',
        proof: { kind: 'server', members: 90_000, link: 'https://example.com/server' },
        contact: 'ops@example.com',
        reason: 'A large server.',
      })) as { id: string };
      await call(b, 'requests.approve', filed.id, 'unlimited');
      from = performance.now();
      // Unlimited: no counter, read without counting a request; then A answers without rate-limit headers.
      await within(
        from,
        1000,
        'A applies the grant B approved',
        async () => (await counterOf(a, requester)) === undefined,
      );
      expect(await get(a, '/fixed/v1/things', requester)).toEqual({ status: 200, limit: null });
      expect(await call(b, 'unban', { token: banned })).toBe(true);
      from = performance.now();
      await within(
        from,
        1000,
        'A serves the client B unbanned',
        async () => (await send(a, '/outside', banned)) === 200,
      );
      // The runtime state is on one hash tag, so on one master.
      const holding = await Promise.all(
        masters.map(async (master) => (await scanKeys(master, `${prefix}:{runtime}:*`)).length > 0),
      );
      expect(holding.filter(Boolean)).toHaveLength(1);
      expect(pair.map((i) => i.errors)).toEqual([[], []]);
    });

    it.each(windows)(
      '%s windows: every master loses its scripts (SCRIPT FLUSH) mid-window: loaded again, every request counted in Redis',
      async (window) => {
        const [a, b] = pair as [Instance, Instance];
        const path = `/${window}/v1/things`;
        const flushed = await spread(window, 'flush');
        for (const token of flushed) expect(await burst(pair, 10, path, token)).toEqual({ 200: 10 });
        for (const master of masters) expect(await master.script('FLUSH')).toBe('OK');
        const before = await runs();
        // Counted in memory instead, these would let 25 more through on each instance.
        const tallies = await Promise.all(flushed.map((token) => burst(pair, 40, path, token)));
        expect(tallies).toEqual(flushed.map(() => ({ 200: LIMIT - 10, 429: 40 - (LIMIT - 10) })));
        const found = await Promise.all(flushed.map((token) => find(window, keyOf(window, token))));
        if (window === 'fixed') {
          expect(found.reduce((sum, f) => sum + f.counted, 0)).toBe(flushed.length * 10 + (await runs()) - before);
        } else expect(found.map((f) => f.counted)).toEqual(flushed.map(() => LIMIT));
        expect(new Set(found.map((f) => f.master)).size).toBe(3);

        const banned = `Bot flush-banned-${window}`;
        expect(await call(a, 'ban', { token: banned }, { duration: 600_000 })).toBe(true);
        const from = performance.now();
        await within(from, 1000, 'B refuses the client A banned', async () => (await send(b, path, banned)) === 403);
        expect(await call(b, 'unban', { token: banned })).toBe(true);
        expect(pair.map((i) => i.errors)).toEqual([[], []]);
      },
    );
  });
});
