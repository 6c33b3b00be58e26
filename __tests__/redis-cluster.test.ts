// The Redis store on a local Redis Cluster of three masters through an ioredis Cluster client, in process: every limit
// of listing B exactly with counters spread over the masters, none counted for a refused client, and a counter's slot
// moving to another master mid-window.
import type Redis from 'ioredis';
import request from 'supertest';
import { redisStore } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { createApp } from './helpers/app';
import { commandCalls, describeRedisServer, ioredisClient, RedisCluster, scanKeys } from './helpers/redis';

/** No answer of a busy machine's Redis comes 10 s late; a request Redis could not count would be a loud 503. */
const counting = { timeoutMs: 10_000, onFailure: 'closed' } as const;

describeRedisServer('redisStore on a Redis Cluster of three masters, through an ioredis Cluster client', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await RedisCluster.start(3);
  }, 30_000);
  afterAll(() => cluster?.close());

  it('enforces every limit of listing B exactly, with counters spread over the masters', async () => {
    const client = await cluster.client();
    const prefix = 'cluster'; // a fixed prefix, so that the keys' slots, and so their masters, are the same every run
    const server = createApp({ listing: 'B', options: { store: redisStore(client, { prefix, ...counting }) } }).listen(
      0,
    );
    try {
      const statuses = await Promise.all(
        Array.from({ length: 45 }, () =>
          request(server)
            .post('/v1/bots/1')
            .then((res) => res.status),
        ),
      );
      expect(statuses.filter((s) => s === 200)).toHaveLength(15);
      expect(statuses.filter((s) => s === 429)).toHaveLength(30);
      for (const [path, limit] of [
        ['/v1/bots', 25],
        ['/v1/bots/2/upvotes', 2],
        ['/v1/bots/3/uptime', 30],
        ['/v1/users/4/bots', 10],
      ] as const) {
        for (let i = 1; i <= limit; i++) {
          const res = await request(server).get(path).set('Authorization', `Bot cluster-${path}`).expect(200);
          expect(res.headers['x-ratelimit-remaining']).toBe(String(limit - i));
        }
        await request(server).get(path).set('Authorization', `Bot cluster-${path}`).expect(429);
      }
      // Refused once by Redis, the client is refused by this instance until the window ends: no more commands run.
      const counting = async () => {
        let runs = 0;
        for (const s of cluster.servers) {
          const node = await ioredisClient(s.url);
          const calls = await commandCalls(node);
          for (const name of ['incr', 'pttl', 'eval', 'evalsha']) runs += calls.get(name) ?? 0;
          node.disconnect();
        }
        return runs;
      };
      const before = await counting();
      for (let i = 0; i < 3; i++)
        await request(server).get('/v1/bots').set('Authorization', 'Bot cluster-/v1/bots').expect(429);
      expect(await counting()).toBe(before);
      const perMaster = await Promise.all(
        cluster.servers.map(async (s) => {
          const node = await ioredisClient(s.url);
          const keys = await scanKeys(node, `${prefix}:*`);
          node.disconnect();
          return keys.length;
        }),
      );
      expect(perMaster.reduce((a, b) => a + b)).toBe(5);
      expect(perMaster.filter((n) => n > 0).length).toBeGreaterThan(1);
    } finally {
      server.close();
      client.disconnect();
    }
  });

  it("counts exactly while a counter's slot moves to another master: the old one answers MOVED, the count goes on", async () => {
    const client = await cluster.client();
    const prefix = `cluster-moved-${process.pid}`;
    const limit = 20;
    const app = createApp({
      listing: [{ method: 'GET', path: '/v1/things', limit, windowMs: 60_000 }],
      options: { store: redisStore(client, { prefix, ...counting }) },
    });
    const server = app.listen(0);
    const nodes = await Promise.all(cluster.servers.map((s) => ioredisClient(s.url)));
    try {
      const token = 'Bot moving';
      const key = `${prefix}:GET /v1/things:${tokenKey(token)}`;
      const send = () => request(server).get('/v1/things').set('Authorization', token);
      for (let i = 0; i < 5; i++) await send().expect(200);
      // The slot of the key moves from its master to another, its key with it, as `redis-cli --cluster reshard`
      // moves it; the client's table of slots still names the old master.
      const slot = Number(await nodes[0]?.cluster('KEYSLOT', key));
      const ids = await Promise.all(nodes.map(async (n) => String(await n.cluster('MYID'))));
      const owner = await Promise.all(nodes.map(async (n) => (await n.exists(key).catch(() => 0)) === 1));
      const from = owner.indexOf(true);
      const to = (from + 1) % nodes.length;
      const [source, target] = [nodes[from] as Redis, nodes[to] as Redis];
      await target.cluster('SETSLOT', slot, 'IMPORTING', ids[from] as string);
      await source.cluster('SETSLOT', slot, 'MIGRATING', ids[to] as string);
      await source.migrate('127.0.0.1', cluster.servers[to]?.port as number, '', 0, 5000, 'KEYS', key);
      for (const node of nodes) await node.cluster('SETSLOT', slot, 'NODE', ids[to] as string);
      expect(await target.get(key)).toBe('5');
      /** INCRs a master ran, and those it refused without running them (MOVED). */
      const incrs = async (node: Redis) => {
        const info = String(await node.info('commandstats'));
        const [, calls = 0, rejected = 0] = /^cmdstat_incr:calls=(\d+),.*rejected_calls=(\d+)/m.exec(info) ?? [];
        return { calls: Number(calls), rejected: Number(rejected) };
      };
      const before = await Promise.all([incrs(source), incrs(target)]);

      const statuses = await Promise.all(Array.from({ length: 30 }, () => send().then((res) => res.status)));
      expect(statuses.filter((s) => s === 200)).toHaveLength(limit - 5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(30 - (limit - 5));
      const after = await Promise.all([incrs(source), incrs(target)]);
      // The old master was asked first and ran nothing; every request that reached Redis was counted once, on the new.
      expect(after[0].calls).toBe(before[0].calls);
      expect(after[0].rejected).toBeGreaterThan(before[0].rejected);
      expect(Number(await target.get(key))).toBe(5 + after[1].calls - before[1].calls);
      expect(await target.pttl(key)).toBeGreaterThan(50_000);
    } finally {
      for (const node of nodes) node.disconnect();
      server.close();
      app.locals.limiter.close();
      client.disconnect();
    }
  });
});
