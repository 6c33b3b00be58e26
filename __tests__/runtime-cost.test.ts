// What a ban costs, counted rather than timed: store commands and records parsed, the same with 0, 1,000 and 10,000 bans.
import type Redis from 'ioredis';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { listingLimits, memoryStore, redisStore, type RuntimeState } from '../lib';
import type { BanRecord } from '../lib/records/kinds';
import { Records } from '../lib/records/records';
import { commandCalls, describeRedis, ioredisClient, startRedis } from './helpers/redis';

const T0 = Date.UTC(2026, 0, 1);
const DURATION = 600_000;

/** Two instances of one store's state: A makes the bans, B follows them. */
interface Instances {
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Two states of one fresh store, as two processes would each have. */
  states(): [RuntimeState, RuntimeState];
  /** The store's commands so far, by name; undefined for a store in this process. */
  commands(): Promise<Map<string, number> | undefined>;
}

const memory: Instances = {
  name: 'memory store',
  start: async () => {},
  stop: async () => {},
  states() {
    const state = memoryStore().state as RuntimeState;
    return [state, state];
  },
  commands: async () => undefined,
};

function redis(): Instances {
  let server: Awaited<ReturnType<typeof startRedis>> | undefined;
  let clients: Redis[] = [];
  let made = 0;
  return {
    name: 'redis store',
    async start() {
      server = await startRedis();
      clients = await Promise.all([0, 1, 2].map(() => ioredisClient((server as { url: string }).url)));
    },
    async stop() {
      for (const client of clients) client.disconnect();
      await server?.close();
    },
    states() {
      const prefix = `cost-${process.pid}-${++made}`;
      return [0, 1].map((i) => redisStore(clients[i] as Redis, { prefix }).state as RuntimeState) as [
        RuntimeState,
        RuntimeState,
      ];
    },
    async commands() {
      const calls = await commandCalls(clients[2] as Redis);
      calls.delete('info');
      return calls;
    },
  };
}

const cases = [memory, ...(describeRedis === describe ? [redis()] : [])];

function registry(state: RuntimeState, errors: unknown[]): Records {
  return new Records(state, {
    checkGrant: () => 'unlimited',
    onChange: undefined,
    report: (error) => void errors.push(error),
    firstReadMs: 1000,
    rows: [],
    ipv6Subnet: 64,
  });
}

const banOf = (i: number): [string, BanRecord] => {
  const key = `t:client-${i}`;
  return [key, { key, kind: 'token', reason: 'limit', since: T0, until: T0 + DURATION, by: 'rule' }];
};

/** What changed between two counts of commands: those sent, by name. */
function sent(before: Map<string, number>, after: Map<string, number>): Record<string, number> {
  const diff: Record<string, number> = {};
  for (const [name, calls] of after)
    if (calls !== (before.get(name) ?? 0)) diff[name] = calls - (before.get(name) ?? 0);
  return diff;
}

describe.each(cases)('$name', (instances) => {
  beforeAll(() => instances.start(), 30_000);
  afterAll(() => instances.stop());
  afterEach(() => jest.useRealTimers());

  /**
   * One more rule's ban on A with `active` bans in force, and B's next read of the state: the store's commands and
   * the records A and B parsed, for that ban alone.
   */
  async function oneBan(active: number) {
    const errors: unknown[] = [];
    const [stateA, stateB] = instances.states();
    // Only the reads the test asks for: the background ones wait on a fake clock that never moves.
    jest.useFakeTimers({ now: T0, doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'hrtime', 'performance'] });
    const [a, b] = [registry(stateA, errors), registry(stateB, errors)];
    a.start();
    b.start();
    try {
      // The state exists and the script is loaded, as on any store after its first change.
      const [primer, primed] = banOf(-1);
      await a.ruleBans.hold(primer, primed, undefined as never);
      await a.methods.unban(primer);
      for (let from = 0; from < active; from += 500) {
        const batch = Array.from({ length: Math.min(500, active - from) }, (_, i) => banOf(from + i));
        await Promise.all(batch.map(([key, ban]) => a.ruleBans.hold(key, ban, undefined as never)));
      }
      await Promise.all([a.sync(), b.sync()]);
      expect([a.cache.bansInForce().length, b.cache.bansInForce().length]).toEqual([active, active]);

      const commands = await instances.commands();
      const parsed = a.cache.parsed + b.cache.parsed;
      const [key, ban] = banOf(active);
      expect(await a.ruleBans.hold(key, ban, undefined as never)).toBe(true);
      await Promise.all([a.sync(), b.sync()]);
      expect([a.cache.bansInForce().length, b.cache.bansInForce().length]).toEqual([active + 1, active + 1]);
      expect(errors).toEqual([]);
      const after = await instances.commands();
      return {
        commands: commands && after ? sent(commands, after) : undefined,
        parsed: a.cache.parsed + b.cache.parsed - parsed,
      };
    } finally {
      a.close();
      b.close();
    }
  }

  it('a ban costs the same store commands and records parsed with 0, 1,000 and 10,000 bans in force', async () => {
    const costs = [];
    for (const active of [0, 1000, 10_000]) costs.push(await oneBan(active));
    // Parsed: the ban on A as the store answered it and as A read it back, and on B as B read it.
    const one = {
      parsed: 3,
      commands:
        instances.name === 'memory store'
          ? undefined
          : {
              // A's change: one script, and the commands it runs (its INFO is left out with the test's own).
              evalsha: 1,
              hget: 1,
              zscore: 1,
              zrangebyscore: 3,
              hset: 2,
              zadd: 2,
              lpush: 1,
              ltrim: 1,
              zcard: 1,
              // The script's read of the state's own fields, and the reads of A and B: the epoch and sequence number,
              // the fields changed since, their values.
              hmget: 5,
            },
    };
    expect(costs).toEqual([one, one, one]);
  }, 120_000);
});

describe("a request's check of its address's ban", () => {
  it('answers alike for a banned address and others after more than 10,000 other addresses were checked', async () => {
    const errors: unknown[] = [];
    const records = registry(memoryStore().state as RuntimeState, errors);
    records.start();
    try {
      expect(await records.methods.ban({ ip: '203.0.113.7' }, { duration: DURATION })).toBe(true);
      const client = (address: string) =>
        ({ key: 't:token', kind: 'token', ip: `ip:${address}`, token: 'Bot x', tokenKey: 't:token' }) as const;
      const now = Date.now();
      const banned = client('203.0.113.7');
      const until = records.cache.bannedUntil(banned, now);
      expect(until).toBeGreaterThan(now);
      const answers = new Map<string, number>();
      const tally = (answer: unknown) => answers.set(String(answer), (answers.get(String(answer)) ?? 0) + 1);
      for (let i = 0; i < 25_000; i++) {
        tally(records.cache.bannedUntil(client(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`), now));
        if (i % 1000 === 0) tally(records.cache.bannedUntil(banned, now) === until ? 'banned' : 'not banned');
      }
      expect(Object.fromEntries(answers)).toEqual({ undefined: 25_000, banned: 25 });
      expect(errors).toEqual([]);
    } finally {
      records.close();
    }
  });
});

describe('what bans in force hold in memory', () => {
  // The collector, to measure what is still held: Node's `--expose-gc`, set for this process from here.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const heapUsed = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };

  // What each holds: the memory store's record (its JSON text and end), the middleware's parsed copy, the keys of both
  // maps. Built by spreading (`{ ...ban, seq }`), each copy had a hidden class of its own in V8: 960 and 1,010 bytes;
  // an operator's ban of an address kept in the requests' remembered address keys: 720.
  it.each([
    { by: 'token', most: 750, client: (i: number) => ({ token: `Bot banned-${i}` }) },
    { by: 'address', most: 650, client: (i: number) => ({ ip: `2001:db8:${i >> 16}:${i & 0xffff}::1` }) },
  ])('10,000 bans by $by hold at most $most bytes each', async ({ most, client }) => {
    const limits = listingLimits('B');
    try {
      const before = heapUsed();
      for (let i = 0; i < 10_000; i++) await limits.ban(client(i), { duration: DURATION });
      const perBan = (heapUsed() - before) / 10_000;
      // Read after the measure, so that the middleware is not collected before it.
      expect((await limits.bans()).length).toBe(10_000);
      expect(perBan).toBeLessThanOrEqual(most);
    } finally {
      await limits.close();
    }
  });
});
