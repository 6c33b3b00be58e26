// Bans and grants over one Redis, with app instances in separate processes: one record everywhere, and Redis losing it.
import type Redis from 'ioredis';
import { tokenKey } from '../lib/contract/keys';
import { compiledLib } from './helpers/compiled';
import { describeRedisServer, ioredisClient, RedisServer } from './helpers/redis';
import { call, get, type Instance, startInstance, stopInstances, within } from './helpers/store-processes';

const rows = [{ method: 'GET', path: '/v1/things', limit: 2, windowMs: 60_000 }];
const ban = { after: 1, within: 60_000, duration: 600_000 };

/** A request of `token` to `path`: its status, and the limit its headers show (none for an unlimited client). */
async function send(instance: Instance, path: string, token: string): Promise<[number, string | null]> {
  const { status, limit } = await get(instance, path, token);
  return [status, limit];
}

/** The keys of the grants an instance lists, and of its bans with who made them. */
async function held(instance: Instance): Promise<{ grants: string[]; bans: string[] }> {
  const grants = (await call(instance, 'grants')) as { key: string }[];
  const bans = (await call(instance, 'bans')) as { key: string; by: string }[];
  return { grants: grants.map(({ key }) => key), bans: bans.map(({ key, by }) => `${key} by ${by}`) };
}

describeRedisServer('bans and grants, two app instances in separate processes on one Redis', () => {
  let lib: string;
  let redis: RedisServer;
  let admin: Redis;
  let instances: Instance[] = [];
  let made = 0;
  const pair = async () => {
    const prefix = `runtime-processes-${++made}`;
    const options = { rows, ban };
    const started = await Promise.all(
      [0, 1].map(() => startInstance(lib, 'ioredis', redis.url, prefix, options, 'runtime-instance.js')),
    );
    instances.push(...started);
    return started as [Instance, Instance];
  };

  beforeAll(async () => {
    // The instances load lib/ compiled to CommonJS.
    lib = compiledLib();
    redis = await RedisServer.start();
    admin = await ioredisClient(redis.url);
  }, 60_000);

  afterEach(async () => {
    for (const instance of instances) {
      expect(instance.child.exitCode).toBeNull();
      expect(instance.stderr()).toBe('');
    }
    await stopInstances(instances);
    instances = [];
  });

  afterAll(async () => {
    admin?.disconnect();
    await redis?.close();
  });

  it("a rule's ban decided by A is listed by B, lifted by unban() on B, and A serves the client within 1 s", async () => {
    const [a, b] = await pair();
    const cheater = 'Bot cheater';
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await send(a, '/v1/things', cheater))[0]);
    expect(statuses).toEqual([200, 200, 429, 403]);
    const banned = performance.now();
    await within(
      banned,
      1000,
      'B refuses the client A banned',
      async () => (await send(b, '/outside', cheater))[0] === 403,
    );
    const listed = (await call(b, 'bans')) as Record<string, unknown>[];
    expect(listed.map(({ key, kind, reason, by }) => ({ key, kind, reason, by }))).toEqual([
      { key: tokenKey(cheater), kind: 'token', reason: 'limit', by: 'rule' },
    ]);
    expect(listed).toEqual(await call(a, 'bans'));

    expect(await call(b, 'unban', { token: cheater })).toBe(true);
    const lifted = performance.now();
    await within(
      lifted,
      1000,
      'A serves the client B unbanned',
      async () => (await send(a, '/outside', cheater))[0] === 200,
    );
    expect(await call(a, 'unban', { token: cheater })).toBe(false);
    expect(await call(b, 'unban', { token: cheater })).toBe(false);
    expect(await call(a, 'bans')).toEqual([]);
    expect([a.errors, b.errors]).toEqual([[], []]);
  }, 60_000);

  it.each([{ loss: 'SIGKILL and a restart without persistence' }, { loss: 'FLUSHALL' }])(
    'Redis loses its data ($loss); then a ban and a revoke: both instances agree within 2 s',
    async ({ loss }) => {
      const [a, b] = await pair();
      const [partner, before, after] = ['Bot partner', 'Bot banned-before', 'Bot banned-after'];
      expect(await call(a, 'grant', { token: partner }, 'unlimited', { note: 'ticket 7' })).toBe(true);
      expect(await call(a, 'ban', { token: before }, { duration: 600_000, reason: 'abuse' })).toBe(true);
      // grants() reads the store first. A request of the partner's on an instance the grant had not reached yet would
      // count there; once refused (and remembered for its window), the rule bans the partner, with 403 and no limit.
      for (const instance of [a, b]) {
        expect(await held(instance)).toEqual({
          grants: [tokenKey(partner)],
          bans: [`${tokenKey(before)} by operator`],
        });
        const answers = [await send(instance, '/v1/things', partner), await send(instance, '/outside', before)];
        expect(answers).toEqual([
          [200, null],
          [403, null],
        ]);
      }

      if (loss === 'FLUSHALL') await admin.flushall();
      else {
        await redis.stop();
        await redis.start();
      }
      const back = performance.now();
      expect(await call(a, 'ban', { token: after }, { duration: 600_000 })).toBe(true);
      // The store lost the grant: there is none to take back.
      expect(await call(b, 'revoke', { token: partner })).toBe(false);

      let seen = '';
      const wanted = `{"answers":[[403,null],[200,null]],"grants":[],"bans":["${tokenKey(after)} by operator"]}`;
      const agreed = async (instance: Instance) => {
        const answers = [await send(instance, '/outside', after), await send(instance, '/outside', before)];
        const shown = JSON.stringify({ answers, ...(await held(instance)) });
        const lost = ((await call(instance, 'lost')) as { id: string }[]).map(({ id }) => id);
        seen = `${shown}, lost ${JSON.stringify(lost)}, errors ${instance.errors.join()}`;
        return shown === wanted && lost.length === 2;
      };
      for (const [name, instance] of [
        ['a', a],
        ['b', b],
      ] as const) {
        await within(back, 2000, 'both agree with the store', () => agreed(instance)).catch((error: Error) => {
          throw new Error(`${error.message}; last seen on ${name}: ${seen}; its stderr: ${instance.stderr()}`);
        });
      }
      // Once on each: the partner's requests count on the store both share (limit 2), without the grant.
      for (const instance of [a, b]) expect(await send(instance, '/v1/things', partner)).toEqual([200, '2']);
      const lost = (await call(b, 'lost')) as { id: string; kind: string; key: string }[];
      expect(lost.map(({ id, kind, key }) => ({ id, kind, key })).sort((x, y) => (x.id < y.id ? -1 : 1))).toEqual([
        { id: `ban:${tokenKey(before)}`, kind: 'ban', key: tokenKey(before) },
        { id: `grant:${tokenKey(partner)}`, kind: 'grant', key: tokenKey(partner) },
      ]);
      expect(await call(a, 'lost')).toEqual(await call(b, 'lost'));
      // Each instance told onError what it knew and the store lost.
      expect([a.errors, b.errors]).toEqual([['ERR_STATE_LOST'], ['ERR_STATE_LOST']]);
    },
    60_000,
  );
});
