// The fault suite, one Redis: stopped (SIGSTOP), paused (CLIENT PAUSE), killed (SIGKILL) and restarted without its
// data, under three app instances in processes of their own. For each: the requests (bounded, only 200, 429 and 403,
// exact again after), every operator call (settles within its bound, and what it did not do is never done), the pages
// (503 within the bound), the rule's bans (written once the store takes them) and the state's followers (converge).
import type Redis from 'ioredis';
import { tokenKey } from '../lib/contract/keys';
import { describeRedisServer, ioredisClient, RedisServer } from './helpers/redis';
import {
  CALL_BOUND_MS,
  changesOf,
  everyCall,
  LIMIT,
  loadPages,
  outcome,
  outside,
  PATH,
  readsOf,
  REQUEST_BOUND_MS,
  requests,
  ruleBanned,
  seed,
  type Seeded,
  sleep,
  startFaultInstances,
  until,
} from './helpers/faults';
import { compiledLib } from './helpers/compiled';
import { call, hitsRun, type Instance, settle, stopInstances } from './helpers/store-processes';

/** How long a fault of a scenario with a "during" lasts at least: every call's bound, and then some. */
const FAULT_MS = 3000;

interface Fault {
  readonly name: string;
  /** Whether Redis comes back without its data. */
  readonly loses: boolean;
  start(): Promise<void>;
  /** Ends the fault once `held` ms have passed since it started. */
  end(held: number): Promise<void>;
}

describeRedisServer('faults of one Redis under three app instances in processes of their own', () => {
  let lib: string | undefined;
  let server: RedisServer;
  let admin: Redis;
  let instances: Instance[] = [];
  beforeAll(async () => {
    lib = compiledLib();
    server = await RedisServer.start();
    admin = await ioredisClient(server.url);
  }, 120_000);
  afterEach(async () => {
    await stopInstances(instances);
    for (const instance of instances) expect(instance.stderr()).toBe('');
    instances = [];
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.close();
  });

  const start = async (name: string) => {
    instances = await startFaultInstances(lib!, 'ioredis', server.url, `faults-${name}`);
    return instances as [Instance, Instance, Instance];
  };
  const keyOf = (name: string, token: string) => `faults-${name}:GET ${PATH}:${tokenKey(token)}`;

  /** Until every instance refuses `token` as banned (403), and how long it took. */
  const bannedEverywhere = (token: string, ms: number) =>
    until(ms, `every instance refuses ${token}`, async () =>
      (await Promise.all(instances.map((i) => outside(i, token)))).every((status) => status === 403),
    );

  /**
   * Once the store is back: requests are counted in Redis again, exactly, without waiting for traffic to close the
   * breakers (a quiet second first, as after a fault that ended with no traffic); judged by Redis' own counts.
   */
  const exactAgain = async (name: string) => {
    await sleep(1000);
    const token = `Bot ${name}-after`;
    const before = await hitsRun(admin);
    // Counted in each instance's memory, as during the fault, these would get 3 × LIMIT through.
    const { statuses } = await requests(instances, 3 * LIMIT, token);
    expect(statuses).toEqual({ 200: LIMIT, 429: 2 * LIMIT });
    // Every request that reached Redis was counted there, and each refusal on the rule's strikes: one INCR each.
    const strikes = `faults-${name}:listing-limits strikes:${tokenKey(token)}`;
    const counted = Number(await admin.get(keyOf(name, token))) + Number(await admin.get(strikes));
    expect(counted).toBe((await hitsRun(admin)) - before);
  };

  /** A change made on one instance now holds on the others within a second: the followers read the store again. */
  const converges = async (name: string) => {
    const [a, b, c] = instances as [Instance, Instance, Instance];
    const token = `Bot ${name}-banned-after`;
    expect(await call(c, 'ban', { token }, { duration: 600_000 })).toBe(true);
    await until(1000, 'A and B refuse the client C banned', async () =>
      (await Promise.all([a, b].map((i) => outside(i, token)))).every((status) => status === 403),
    );
  };

  /** What the instances list after the fault: the store's bans, grants and lost records, and the requests' states. */
  const state = async (instance: Instance, seeded: Seeded, name: string) => {
    const keys = (listed: unknown) => (listed as { key: string }[]).map((r) => r.key).sort();
    const [approved, declined] = seeded.requests as [Seeded['requests'][0], Seeded['requests'][0]];
    const status = async (id: string) => ((await call(instance, 'requests.get', id)) as { status?: string })?.status;
    return {
      bans: keys(await call(instance, 'bans')),
      grants: keys(await call(instance, 'grants')),
      lost: ((await call(instance, 'lost')) as { id: string }[]).map((l) => l.id).sort(),
      requests: [await status(approved.id), await status(declined.id)],
      filedDuring: ((await call(instance, 'requests.find', { token: `Bot ${name}-requester-3` })) as []).length,
    };
  };

  const scenarios: Fault[] = [
    {
      name: 'SIGSTOP',
      loses: false,
      start: async () => server.pause(),
      end: async () => server.resume(),
    },
    {
      name: 'CLIENT PAUSE',
      loses: false,
      start: async () => {
        const pauser = await ioredisClient(server.url);
        await pauser.call('CLIENT', 'PAUSE', String(FAULT_MS + 2000), 'ALL');
        pauser.disconnect();
      },
      // The pause ends by itself: until then, Redis answers nothing.
      end: async (held) => void (await sleep(Math.max(FAULT_MS + 2000 - held, 0))),
    },
    {
      name: 'SIGKILL',
      loses: true,
      start: () => server.stop(),
      end: () => server.start(),
    },
  ];

  it.each(scenarios)(
    '$name: requests, every operator call and the pages settle within their bounds; nothing refused is done later; exact again after, and the followers converge',
    async (fault) => {
      const name = fault.name.replace(/\W/g, '').toLowerCase();
      const [a, b, c] = await start(name);
      const seeded = await seed(a, name);
      await bannedEverywhere(seeded.banned, 1000);
      const ruleToken = `Bot ${name}-rule-banned`;

      await fault.start();
      const began = performance.now();
      let during;
      try {
        during = await Promise.all([
          everyCall(a, changesOf(name, seeded)),
          everyCall(b, readsOf(seeded)),
          loadPages(c, seeded),
          requests(instances, 3 * (LIMIT + 1), `Bot ${name}-during`),
          ruleBanned(b, ruleToken),
        ]);
        await sleep(Math.max(FAULT_MS - (performance.now() - began), 0));
      } finally {
        await fault.end(performance.now() - began);
      }
      const [changes, reads, pages, counted, rule] = during;

      // Every operator call settled within its bound: refused as the store is unavailable, but the one that needs no
      // store (a foreign entry that is not there).
      const refused = (method: string) => (method === 'removeForeign' ? 'ok' : 'ERR_STORE_UNAVAILABLE');
      expect([...changes, ...reads].map(outcome)).toEqual(
        [...changesOf(name, seeded), ...readsOf(seeded)].map(([method]) => ({
          method,
          withinBound: true,
          how: refused(method),
        })),
      );
      // The pages answered 503 within the bound, saying what still works.
      expect(pages.map((p) => [p.page, p.status, p.ms <= CALL_BOUND_MS])).toEqual(
        pages.map((p) => [p.page, 503, true]),
      );
      expect(pages[0]?.text).toContain('What still works');
      expect(pages[2]?.text).toContain('nothing was filed');
      // Each instance counted the client in its own memory, exactly: the limit on each, within the requests' bound.
      expect(counted.statuses).toEqual({ 200: 3 * LIMIT, 429: 3 });
      expect(counted.longestMs).toBeLessThanOrEqual(REQUEST_BOUND_MS);
      // The rule banned the client that kept being refused, on the instance that refused it.
      expect(rule).toEqual([...Array(LIMIT).fill(200), ...Array(9).fill(429), 429, 403]);

      if (fault.loses) {
        // Each instance finds the store lost its state, tells onError once and lists the operator's records lost.
        for (const instance of instances) {
          await until(5000, 'the instance finds the state lost', async () =>
            instance.errors.includes('ERR_STATE_LOST'),
          );
        }
        expect(instances.map((i) => i.errors.filter((code) => code === 'ERR_STATE_LOST'))).toEqual(
          instances.map(() => ['ERR_STATE_LOST']),
        );
      }
      // The rule's ban, which the store could not take during the fault, is written once it can: every instance
      // refuses the client.
      await bannedEverywhere(ruleToken, 5000);
      await exactAgain(name);

      // Nothing the refused calls meant to change was done, on any instance, however late their commands came.
      const expected = {
        bans: [tokenKey(ruleToken), ...(fault.loses ? [] : [tokenKey(seeded.banned)])].sort(),
        grants: fault.loses ? [] : [tokenKey(seeded.granted)],
        lost: fault.loses ? [`ban:${tokenKey(seeded.banned)}`, `grant:${tokenKey(seeded.granted)}`].sort() : [],
        requests: fault.loses ? [undefined, undefined] : ['pending', 'pending'],
        filedDuring: 0,
      };
      for (const instance of instances) expect(await state(instance, seeded, name)).toEqual(expected);
      await converges(name);
    },
    90_000,
  );

  it('restart without its data: calls right after settle within their bound; each instance finds the state lost, converges, and counts exactly', async () => {
    const name = 'restart';
    const [a] = await start(name);
    const seeded = await seed(a, name);
    await bannedEverywhere(seeded.banned, 1000);
    await server.stop();
    await server.start();
    // Each settles within its bound, done or refused with a code: the store unavailable while the client
    // reconnects, or a grant request it no longer has.
    const right = await everyCall(a, [...changesOf(name, seeded), ...readsOf(seeded)]);
    expect(right.map((s) => [s.method, s.ms <= CALL_BOUND_MS, s.ok || /^ERR_[A-Z_]+$/.test(s.code ?? '')])).toEqual(
      right.map((s) => [s.method, true, true]),
    );
    for (const instance of instances) {
      await until(5000, 'the instance finds the state lost', async () => instance.errors.includes('ERR_STATE_LOST'));
      await until(2000, 'the instance lists the lost records', async () => {
        const lost = (await call(instance, 'lost')) as { id: string }[];
        return lost.some((l) => l.id === `grant:${tokenKey(seeded.granted)}`);
      });
    }
    await exactAgain(name);
    await converges(name);
    // A call settles as soon as the store answers: no breaker, no queue holds an operator.
    expect((await settle(a, 'bans')).ok).toBe(true);
  }, 90_000);
});
