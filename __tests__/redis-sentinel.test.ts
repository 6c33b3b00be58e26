// Redis Sentinel through ioredis: a master, a replica and three sentinels; the master killed under traffic from two app
// instances in processes of their own: no 5xx, refusals kept, and counting back in Redis, on the new master, in time.
import { tokenKey } from '../lib/contract/keys';
import { describeRedisServer, ioredisClient, RedisSentinels } from './helpers/redis';
import { withClients } from './helpers/redis-env';
import { compiledLib } from './helpers/compiled';
import {
  burst,
  call,
  hitsRun,
  type Instance,
  type InstanceOptions,
  send,
  startInstance,
  stopInstances,
  within,
} from './helpers/store-processes';

const LIMIT = 25;
/** As in redis-clients.test.ts: the in-memory fallback while Redis is away, and 2 s for a busy machine's Redis. */
const options: InstanceOptions = {
  rows: [{ method: 'GET', path: '/v1/things', limit: LIMIT, windowMs: 60_000 }],
  timeoutMs: 2000,
  onFailure: 'memory',
};
/**
 * How long after the master is killed both instances count in Redis again, at the most, with the sentinels'
 * `down-after-milliseconds` at 1 s: the sentinels' agreement and election, the replica's promotion and ioredis's
 * reconnection to it. The README gives the times measured; this bound leaves a busy machine room above them.
 */
const BACK_WITHIN_MS = 10_000;

const describeSentinel =
  withClients(['ioredis'] as const, (kind) => kind).length > 0 ? describeRedisServer : describe.skip;

describeSentinel('Redis Sentinel: a master, a replica and three sentinels, two app instances through ioredis', () => {
  let lib: string | undefined;
  let group: RedisSentinels;
  let pair: Instance[] = [];
  beforeAll(async () => {
    lib = compiledLib();
    group = await RedisSentinels.start(1000);
    pair = await Promise.all(
      [0, 1].map(() => startInstance(lib!, 'ioredis-sentinel', group.urls, 'sentinel', options)),
    );
  }, 60_000);
  afterAll(async () => {
    await stopInstances(pair);
    for (const instance of pair) expect(instance.stderr()).toBe('');
    await group?.close();
  });

  const keyOf = (token: string) => `sentinel:GET /fixed/v1/things:${tokenKey(token)}`;

  it('the master killed: no 5xx, refusals kept meanwhile, counting back in Redis on the promoted replica within 10 s', async () => {
    const [a, b] = pair as [Instance, Instance];
    const master = await ioredisClient(group.master.url);
    const replica = await ioredisClient(group.replica.url);
    try {
      expect(await burst(pair, 75, '/fixed/v1/things', 'Bot before')).toEqual({ 200: LIMIT, 429: 75 - LIMIT });
      expect(await call(a, 'ban', { token: 'Bot banned' }, { duration: 600_000 })).toBe(true);
      const banned = performance.now();
      await within(
        banned,
        1000,
        'B refuses the client A banned',
        async () => (await send(b, '/outside', 'Bot banned')) === 403,
      );
      // Every write so far is on the replica before the master goes.
      expect(await master.wait(1, 10_000)).toBe(1);
      master.disconnect();

      const killed = performance.now();
      await group.master.stop();
      const statuses: number[] = [];
      let probes = 0;
      await within(killed, BACK_WITHIN_MS, 'both instances count in Redis again', async () => {
        // The client over its limit before is still refused, by each instance's memory of Redis' refusal.
        const refused = await Promise.all([a, b].map((i) => send(i, '/fixed/v1/things', 'Bot before')));
        statuses.push(...refused);
        expect(refused).toEqual([429, 429]);
        // A client new to both: counted twice in Redis once both count there again (once in each memory before).
        const token = `Bot during-${++probes}`;
        statuses.push(...(await Promise.all([a, b].map((i) => send(i, '/fixed/v1/things', token)))));
        return (await replica.get(keyOf(token)).catch(() => null)) === '2';
      });
      expect(statuses.filter((status) => status >= 500)).toEqual([]);
      // The replica counts: it is the master now.
      expect(((await replica.role()) as string[])[0]).toBe('master');

      // Shared again, exactly, on the new master; the ban made before the failover holds on both.
      const before = await hitsRun(replica);
      expect(await burst(pair, 75, '/fixed/v1/things', 'Bot after')).toEqual({ 200: LIMIT, 429: 75 - LIMIT });
      expect(Number(await replica.get(keyOf('Bot after')))).toBe((await hitsRun(replica)) - before);
      expect(await Promise.all([a, b].map((i) => send(i, '/outside', 'Bot banned')))).toEqual([403, 403]);
      for (const instance of pair) expect(instance.child.exitCode).toBeNull();
    } finally {
      master.disconnect();
      replica.disconnect();
    }
  }, 60_000);
});
