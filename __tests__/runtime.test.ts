// Enforcement at runtime: bans over the whole site, bans and grants changed while the app runs, on every instance.
import type { Express } from 'express';
import type Redis from 'ioredis';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import request from 'supertest';
import {
  type ChangeEvent,
  type ClientRef,
  type EndpointRow,
  type Grant,
  listingLimits,
  MAX_DURATION_MS,
  type ListingLimitsMiddleware,
  type ListingLimitsOptions,
  memoryStore,
  redisStore,
  type CounterSpec,
  type RuntimeState,
  type RuntimeStateError,
} from '../lib';
import { createApp } from './helpers/app';
import { commandCalls, describeRedis, ioredisClient, scanKeys, startRedis } from './helpers/redis';
import { tokenKey } from '../lib/contract/keys';
import { T0, useFakeClock } from './helpers/stores';

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

/**
 * Retries `check` until it passes, for up to 10 s of real time (Date is faked): a bound for a hang, not a speed the
 * machine must keep.
 */
async function eventually(check: () => Promise<void>): Promise<void> {
  const end = performance.now() + 10_000;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (performance.now() > end) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

const BANNED_BODY =
  '{"success":false,"code":403,"message":"You are banned from this API for circumventing its rate limits",' +
  '"bannedUntil":"2026-01-01T00:10:00.000Z","retryAfter":600}';

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

  describe('bans and grants at runtime', () => {
    const limiter = (app: Express) => app.locals.limiter as ListingLimitsMiddleware;
    /** A request of `token` on `app`: its status, and the limit and bucket its headers show. */
    const answerOf = async (app: Express, token: string) => {
      const res = await request(app).get('/v1/things').set('Authorization', token);
      return [res.status, res.headers['x-ratelimit-limit'], res.headers['x-ratelimit-bucket']];
    };
    /** The counter `app` counts `token` on, its grant's once known: usage() reads it, and counts no request. */
    const counterOf = async (app: Express, token: string) => (await limiter(app).usage({ token }))[0]?.counter;

    it('a ban made on one instance refuses the client on the other, outside the table, until unban()', async () => {
      const [a, b] = make({});
      await expect(limiter(a).ban({ token: 'Bot spammer' }, { duration: 60_000, reason: 'spam' })).resolves.toBe(true);
      const body = BANNED_BODY.replace('00:10:00', '00:01:00').replace('"retryAfter":600', '"retryAfter":60');
      await eventually(async () => {
        const res = await request(b).get('/v1/unlimited').set('Authorization', 'Bot spammer');
        expect([res.status, res.text]).toEqual([403, body]);
      });
      await request(b).get('/v1/things').set('Authorization', 'Bot spammer').expect(403);
      expect(await limiter(b).bans()).toEqual([
        {
          key: tokenKey('Bot spammer'),
          kind: 'token',
          reason: 'spam',
          since: new Date(T0),
          until: new Date(T0 + 60_000),
          by: 'operator',
          // Of a token shorter than 12 characters, nothing is shown.
          tokenEnd: '',
        },
      ]);
      await expect(limiter(b).unban({ token: 'Bot spammer' })).resolves.toBe(true);
      await expect(limiter(b).unban({ token: 'Bot spammer' })).resolves.toBe(false);
      await eventually(async () => {
        await request(a).get('/v1/unlimited').set('Authorization', 'Bot spammer').expect(200);
      });
      expect(await limiter(a).bans()).toEqual([]);
    });

    it("bans and grants keep a token's last 4 characters for the pages, on every instance; a change by key keeps them", async () => {
      const [a, b] = make({ ban });
      const [spammer, partner, cheater] = [
        'Bot spammer-token-1234',
        'Bot partner-token-5678',
        'Bot cheater-token-9abc',
      ];
      await limiter(a).ban({ token: spammer }, { duration: 60_000 });
      await limiter(a).grant({ token: partner }, { multiplier: 2 });
      await banByRule(a, cheater);
      const byKey = (x: string[], y: string[]) => ((x[0] as string) < (y[0] as string) ? -1 : 1);
      const ends = async (list: 'bans' | 'grants') =>
        (await limiter(b)[list]()).map((r) => [r.key, r.tokenEnd]).sort(byKey);
      await eventually(async () => {
        expect(await ends('bans')).toEqual(
          [
            [tokenKey(spammer), '1234'],
            [tokenKey(cheater), '9abc'],
          ].sort(byKey),
        );
      });
      expect(await ends('grants')).toEqual([[tokenKey(partner), '5678']]);
      // By key only, on the other instance: the end a record of the key keeps.
      await limiter(b).grant({ key: tokenKey(partner) }, { multiplier: 3 });
      await limiter(b).ban({ key: tokenKey(partner) }, { duration: 60_000 });
      await limiter(b).ban({ key: 'custom-client' }, { duration: 60_000 });
      expect(await ends('grants')).toEqual([[tokenKey(partner), '5678']]);
      expect(await ends('bans')).toEqual(
        [
          [tokenKey(spammer), '1234'],
          [tokenKey(cheater), '9abc'],
          [tokenKey(partner), '5678'],
          ['custom-client', ''],
        ].sort(byKey),
      );
      const listed = JSON.stringify([await limiter(b).bans(), await limiter(b).grants(), await limiter(b).history()]);
      expect(listed).not.toMatch(/spammer|partner-token|cheater/);
    });

    it('a ban of { ip } refuses every request from the address, with a token or without', async () => {
      const [a, b] = make({});
      await limiter(a).ban({ ip: '127.0.0.1' }, { duration: 60_000 });
      await eventually(async () => {
        await request(b).get('/v1/unlimited').set('Authorization', 'Bot any').expect(403);
      });
      await request(b).get('/v1/things').expect(403);
      expect((await limiter(b).bans()).map((x) => [x.key, x.kind, x.reason, x.by])).toEqual([
        ['ip:127.0.0.1', 'ip', 'operator', 'operator'],
      ]);
      await expect(limiter(b).unban('ip:127.0.0.1')).resolves.toBe(true);
      await eventually(async () => {
        await request(a).get('/v1/unlimited').expect(200);
      });
    });

    it("lists the rule's bans too, by 'rule', and drops ended bans from the list and the answers", async () => {
      const [a, b] = make({ ban });
      await banByRule(a, 'Bot cheater');
      await limiter(a).ban({ key: 'custom-client' }, { duration: 1_200_000 });
      await eventually(async () => {
        expect((await limiter(b).bans()).map((x) => [x.key, x.kind, x.reason, x.until.getTime(), x.by])).toEqual([
          ['custom-client', 'custom', 'operator', T0 + 1_200_000, 'operator'],
          [tokenKey('Bot cheater'), 'token', 'limit', T0 + 600_000, 'rule'],
        ]);
      });
      jest.setSystemTime(T0 + 600_000);
      expect((await limiter(b).bans()).map((x) => x.key)).toEqual(['custom-client']);
      await request(b).get('/v1/unlimited').set('Authorization', 'Bot cheater').expect(200);
      jest.setSystemTime(T0 + 1_200_000);
      expect(await limiter(a).bans()).toEqual([]);
    });

    it("a grant made on one instance shows its limits in the other's headers, until revoke()", async () => {
      const [a, b] = make({});
      expect(await answerOf(b, 'Bot partner')).toEqual([200, '2', 'GET /v1/things']);
      await limiter(a).grant({ token: 'Bot partner' }, { multiplier: 10 }, { note: 'ticket 42' });
      await eventually(async () => expect(await counterOf(b, 'Bot partner')).toBe('GET /v1/things (x10)'));
      expect(await answerOf(b, 'Bot partner')).toEqual([200, '20', 'GET /v1/things (x10)']);
      expect(await limiter(b).grants()).toEqual([
        {
          key: tokenKey('Bot partner'),
          grant: { multiplier: 10 },
          since: new Date(T0),
          until: undefined,
          note: 'ticket 42',
          tokenEnd: '',
        },
      ]);
      await expect(limiter(b).revoke({ token: 'Bot partner' })).resolves.toBe(true);
      await expect(limiter(b).revoke({ token: 'Bot partner' })).resolves.toBe(false);
      await eventually(async () => expect(await counterOf(a, 'Bot partner')).toBe('GET /v1/things'));
      expect(await limiter(a).grants()).toEqual([]);
      // The table's counter, which both share: its second request.
      expect(await answerOf(a, 'Bot partner')).toEqual([200, '2', 'GET /v1/things']);
    });

    it('a runtime grant wins over the grants option; an ended one disappears, and the option applies again', async () => {
      const [a, b] = make({ grants: { 'Bot partner': { multiplier: 2 } } });
      expect(await answerOf(b, 'Bot partner')).toEqual([200, '4', 'GET /v1/things (x2)']);
      const rows = [{ method: 'GET', path: '/v1/things', limit: 50, windowMs: 10_000 }] as const;
      await limiter(a).grant({ token: 'Bot partner' }, { rows }, { until: new Date(T0 + 30_000) });
      await eventually(async () => expect(await counterOf(b, 'Bot partner')).toBe('GET /v1/things (50/10s)'));
      expect(await answerOf(b, 'Bot partner')).toEqual([200, '50', 'GET /v1/things (50/10s)']);
      expect((await limiter(b).grants()).map((g) => g.until)).toEqual([new Date(T0 + 30_000)]);
      jest.setSystemTime(T0 + 30_000);
      expect(await limiter(b).grants()).toEqual([]);
      expect(await answerOf(b, 'Bot partner')).toEqual([200, '4', 'GET /v1/things (x2)']);
    });

    it('keeps every change in the history, newest first, and tells onChange of those this instance made', async () => {
      const changes: [ChangeEvent, boolean][] = [];
      const onChange = (event: ChangeEvent, req: unknown) => void changes.push([event, req !== undefined]);
      const [a, b] = make({ ban, onChange });
      await banByRule(a, 'Bot cheater');
      // The rule's ban is told once stored, after the refusal that made it: then the operator's changes.
      await eventually(async () => expect(changes).toHaveLength(1));
      jest.setSystemTime(T0 + 1000);
      await limiter(a).ban({ ip: '203.0.113.7' }, { duration: 60_000, reason: 'scraping' });
      jest.setSystemTime(T0 + 2000);
      await limiter(a).unban({ ip: '203.0.113.7' });
      await limiter(a).unban({ ip: '203.0.113.7' }); // nothing to lift: no change
      jest.setSystemTime(T0 + 3000);
      await limiter(a).grant({ key: 'partner' }, { multiplier: 2 }, { until: T0 + 60_000, note: 'ticket 42' });
      jest.setSystemTime(T0 + 4000);
      await limiter(a).revoke({ key: 'partner' });
      jest.setSystemTime(T0 + 5000);
      expect(await limiter(a).reset({ key: 'partner' }, 'GET /v1/things')).toBe(false);
      await limiter(a).reset({ ip: '203.0.113.7' }, undefined, { by: 'alice' });
      const none = {
        reason: undefined,
        until: undefined,
        grant: undefined,
        note: undefined,
        endpoint: undefined,
        operator: undefined,
      };
      const expected: ChangeEvent[] = [
        {
          ...none,
          action: 'reset',
          key: 'ip:203.0.113.7',
          kind: 'ip',
          by: 'operator',
          at: new Date(T0 + 5000),
          operator: 'alice',
        },
        {
          ...none,
          action: 'reset',
          key: 'partner',
          kind: 'custom',
          by: 'operator',
          at: new Date(T0 + 5000),
          endpoint: 'GET /v1/things',
        },
        {
          ...none,
          action: 'revoke',
          key: 'partner',
          kind: 'custom',
          by: 'operator',
          at: new Date(T0 + 4000),
        },
        {
          ...none,
          action: 'grant',
          key: 'partner',
          kind: 'custom',
          by: 'operator',
          at: new Date(T0 + 3000),
          until: new Date(T0 + 60_000),
          grant: { multiplier: 2 },
          note: 'ticket 42',
        },
        { ...none, action: 'unban', key: 'ip:203.0.113.7', kind: 'ip', by: 'operator', at: new Date(T0 + 2000) },
        {
          ...none,
          action: 'ban',
          key: 'ip:203.0.113.7',
          kind: 'ip',
          by: 'operator',
          at: new Date(T0 + 1000),
          reason: 'scraping',
          until: new Date(T0 + 61_000),
        },
        {
          ...none,
          action: 'ban',
          key: tokenKey('Bot cheater'),
          kind: 'token',
          by: 'rule',
          at: new Date(T0),
          reason: 'limit',
          until: new Date(T0 + 600_000),
        },
      ];
      await eventually(async () => {
        expect(await limiter(b).history()).toEqual(expected);
      });
      expect(await limiter(b).history({ limit: 2 })).toEqual(expected.slice(0, 2));
      expect(await limiter(b).history({ since: new Date(T0 + 2000) })).toEqual(expected.slice(0, 5));
      expect(changes).toEqual([...expected].reverse().map((event) => [event, event.by === 'rule']));
    });

    it('records the name `by` gives in the records, the history and onChange, on every instance', async () => {
      const changes: ChangeEvent[] = [];
      const [a, b] = make({ onChange: (event) => void changes.push(event) });
      await limiter(a).ban({ ip: '203.0.113.7' }, { duration: 60_000, by: 'alice' });
      await limiter(b).grant({ key: 'partner' }, 'unlimited', { by: 'bob.smith@example.org' });
      jest.setSystemTime(T0 + 1000);
      await limiter(a).unban({ ip: '203.0.113.7' }, { by: 'bob.smith@example.org' });
      await limiter(b).revoke({ key: 'partner' }, { by: 'alice' });
      await limiter(a).ban({ key: 'someone' }, { duration: 60_000 });
      await limiter(b).reset({ key: 'someone' }, 'GET /v1/things', { by: 'carol' });
      const named = (e: ChangeEvent) => [e.action, e.key, e.by, e.operator];
      const expected = [
        ['reset', 'someone', 'operator', 'carol'],
        ['ban', 'someone', 'operator', undefined],
        ['revoke', 'partner', 'operator', 'alice'],
        ['unban', 'ip:203.0.113.7', 'operator', 'bob.smith@example.org'],
        ['grant', 'partner', 'operator', 'bob.smith@example.org'],
        ['ban', 'ip:203.0.113.7', 'operator', 'alice'],
      ];
      await eventually(async () => expect((await limiter(b).history()).map(named)).toEqual(expected));
      expect(changes.map(named)).toEqual([...expected].reverse());
      expect((await limiter(b).bans()).map((ban) => [ban.key, ban.operator])).toEqual([['someone', undefined]]);
      await limiter(a).grant({ key: 'partner' }, 'unlimited', { by: 'carol' });
      await eventually(async () => expect((await limiter(b).grants()).map((g) => g.operator)).toEqual(['carol']));
    });

    it.each([
      ['', '""'],
      ['rule 1', '"rule 1"'],
      ['-dash', '"-dash"'],
      ['<b>eve</b>', '"<b>eve</b>"'],
      ['a'.repeat(65), `"${'a'.repeat(59)}…`],
      [42, '42'],
    ])('refuses the name %j with a coded error, changing nothing', async (by, shown) => {
      const [a] = make({});
      await request(a).get('/v1/things').set('Authorization', 'someone').expect(200);
      const calls = [
        async () => limiter(a).reset({ token: 'someone' }, undefined, { by: by as string }),
        async () => limiter(a).ban({ key: 'someone' }, { duration: 60_000, by: by as string }),
        async () => limiter(a).unban({ key: 'someone' }, { by: by as string }),
        async () => limiter(a).grant({ key: 'someone' }, 'unlimited', { by: by as string }),
        async () => limiter(a).revoke({ key: 'someone' }, { by: by as string }),
        async () => limiter(a).restoreLost('ban:someone', { by: by as string }),
      ];
      for (const call of calls) {
        await expect(call()).rejects.toMatchObject({
          code: 'ERR_INVALID_OPTION',
          field: 'options.by',
          message: expect.stringContaining(
            "options.by must be an operator's name of 1 to 64 characters: letters, digits and `_.@-`, starting " +
              `with a letter or a digit; got ${shown}`,
          ),
        });
      }
      expect([await limiter(a).history(), await limiter(a).bans(), await limiter(a).grants()]).toEqual([[], [], []]);
      expect((await limiter(a).usage({ token: 'someone' })).map(({ used }) => used)).toEqual([1]);
    });

    it('keeps the last 1000 changes', async () => {
      const [a, b] = make({});
      for (let i = 0; i < 1002; i++) {
        jest.setSystemTime(T0 + i * 1000);
        await limiter(a).grant({ key: `client-${i}` }, 'unlimited');
      }
      const history = await limiter(b).history();
      expect([history.length, history[0]?.key, history[999]?.key]).toEqual([1000, 'client-1001', 'client-2']);
    });

    it("routes onChange's errors to onError, with no request for a method call", async () => {
      const errors: [unknown, unknown][] = [];
      const failure = new Error('log shipping failed');
      const [a] = make({
        onChange: () => Promise.reject(failure),
        onError: (error, req) => void errors.push([error, req]),
      });
      await expect(limiter(a).ban({ key: 'someone' }, { duration: 60_000 })).resolves.toBe(true);
      await eventually(async () => {
        expect(errors).toEqual([[failure, undefined]]);
      });
    });

    it.each([
      { source: 'a runtime grant of the token', options: {}, runtime: true },
      { source: 'the grants option', options: { grants: { 'Bot made-up': { multiplier: 10 } } }, runtime: false },
      {
        source: 'a grants lookup',
        options: {
          grants: ({ token }: { token?: string }) => (token === 'Bot made-up' ? { multiplier: 10 } : undefined),
        },
        runtime: false,
      },
    ])(
      'a token authenticate refuses is counted by its address at the limit of the table, whatever grants it ($source)',
      async ({ options, runtime }) => {
        const [a, b] = make({ ...options, authenticate: () => false } as ListingLimitsOptions);
        if (runtime) await limiter(a).grant({ token: 'Bot made-up' }, { multiplier: 10 });
        // Both instances know the grant (the list reads the store), and neither applies it to the refused token.
        expect((await limiter(b).grants()).length).toBe(runtime ? 1 : 0);
        for (const app of [a, b]) {
          const answers = [];
          for (let i = 0; i < 3; i++) {
            const res = await request(app).get('/v1/things').set('Authorization', 'Bot made-up');
            answers.push([res.status, res.headers['x-ratelimit-limit'], res.headers['x-ratelimit-bucket']]);
          }
          // One address, one counter: in Redis the second instance counts on where the first left it.
          const statuses = app === b && pairs.name === 'redis store' ? [429, 429, 429] : [200, 200, 429];
          expect(answers).toEqual(statuses.map((status) => [status, '2', 'GET /v1/things']));
        }
        // The address's own grant is the client's: it is counted by its address.
        await limiter(a).grant({ ip: '::ffff:127.0.0.1' }, 'unlimited');
        const res = await request(a).get('/v1/things').set('Authorization', 'Bot made-up').expect(200);
        expect(res.headers['x-ratelimit-limit']).toBeUndefined();
      },
    );

    it("an 'unlimited' grant of { ip } lets the address through uncounted", async () => {
      const [a, b] = make({});
      await limiter(a).grant({ ip: '::ffff:127.0.0.1' }, 'unlimited');
      await eventually(async () => {
        const [usage] = await limiter(b).usage({ ip: '::ffff:127.0.0.1' });
        expect([usage?.counter, usage?.limit]).toEqual([undefined, Infinity]);
      });
      const res = await request(b).get('/v1/things').expect(200);
      expect(res.headers['x-ratelimit-limit']).toBeUndefined();
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
      // Each instance has read the whole state once, as it does when it starts.
      await Promise.all(limiters.map((limiter) => limiter.bans()));
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
      // Besides INFO itself, only each instance's background read of the state's epoch and sequence number (HMGET).
      const sent = [...after].filter(
        ([name, calls]) => !['info', 'hmget'].includes(name) && calls !== before.get(name),
      );
      expect(sent).toEqual([]);
    } finally {
      for (const limiter of limiters) limiter.close();
    }
  });
});

describeRedis('the Redis store: runtime state', () => {
  const pairs = redisPair();
  beforeAll(() => pairs.start(), 30_000);
  afterAll(() => pairs.stop());

  it('keeps no raw token in any key or value, and its keys on one hash tag', async () => {
    const [a, b] = pairs.pair({ ban });
    const limiters = [a, b].map((app) => app.locals.limiter as ListingLimitsMiddleware);
    try {
      const [la, lb] = limiters as [ListingLimitsMiddleware, ListingLimitsMiddleware];
      for (const status of [200, 200, 429, 403]) {
        await request(a).get('/v1/things').set('Authorization', 'Bot secret-one').expect(status);
      }
      await la.ban({ token: 'Bot secret-two' }, { duration: 60_000, reason: 'abuse' });
      await lb.grant({ token: 'Bot secret-three' }, { multiplier: 3 }, { note: 'partner' });
      await lb.unban({ token: 'Bot secret-two' });
      const redis = pairs.redis as Redis;
      const keys = await scanKeys(redis, `${pairs.prefix}:*`);
      expect(keys.filter((k) => k.includes('{'))).toEqual([
        `${pairs.prefix}:{runtime}:changes`,
        `${pairs.prefix}:{runtime}:ends`,
        `${pairs.prefix}:{runtime}:history`,
        `${pairs.prefix}:{runtime}:record`,
      ]);
      const values: string[] = [];
      for (const key of keys) {
        const type = await redis.type(key);
        if (type === 'string') values.push(String(await redis.get(key)));
        if (type === 'hash') values.push(...Object.entries(await redis.hgetall(key)).flat());
        if (type === 'list') values.push(...(await redis.lrange(key, 0, -1)));
        if (type === 'zset') values.push(...(await redis.zrange(key, '0', '-1')));
      }
      expect(values.length).toBeGreaterThan(5);
      expect([...keys, ...values].filter((text) => text.includes('secret'))).toEqual([]);
    } finally {
      for (const limiter of limiters) limiter.close();
    }
  });
});

describe('runtime methods: bad input', () => {
  const limits = listingLimits(rows, {});
  afterAll(() => limits.close());
  const call = (method: (l: ListingLimitsMiddleware) => unknown) => Promise.resolve().then(() => method(limits));
  const valid = { duration: 60_000 };

  it.each([
    { name: 'an empty client', call: (l) => l.ban({} as ClientRef, valid), field: 'client' },
    { name: 'two names', call: (l) => l.ban({ token: 'x', ip: '1.2.3.4' } as ClientRef, valid), field: 'client' },
    { name: 'an unknown name', call: (l) => l.ban({ user: 'x' } as unknown as ClientRef, valid), field: 'client' },
    { name: 'a client string', call: (l) => l.ban('t:x' as unknown as ClientRef, valid), field: 'client' },
    { name: 'an empty token', call: (l) => l.ban({ token: '' }, valid), field: 'client.token' },
    {
      name: 'a token not a string',
      call: (l) => l.ban({ token: 5 } as unknown as ClientRef, valid),
      field: 'client.token',
    },
    { name: 'not an address', call: (l) => l.ban({ ip: 'localhost' }, valid), field: 'client.ip' },
    { name: 'no duration', call: (l) => l.ban({ token: 'x' }, {} as typeof valid), field: 'options.duration' },
    {
      name: 'a negative duration',
      call: (l) => l.ban({ token: 'x' }, { duration: -60_000 }),
      field: 'options.duration',
    },
    {
      name: 'a duration in part seconds',
      call: (l) => l.ban({ token: 'x' }, { duration: 1500 }),
      field: 'options.duration',
    },
    {
      name: 'a duration over a year',
      call: (l) => l.ban({ token: 'x' }, { duration: MAX_DURATION_MS + 1000 }),
      field: 'options.duration',
    },
    {
      name: 'a reason not text',
      call: (l) => l.ban({ token: 'x' }, { ...valid, reason: 5 as unknown as string }),
      field: 'options.reason',
    },
    {
      name: 'an unknown ban option',
      call: (l) => l.ban({ token: 'x' }, { ...valid, until: 5 } as typeof valid),
      field: 'options.until',
      code: 'ERR_UNKNOWN_OPTION',
    },
    { name: 'a nonsense grant', call: (l) => l.grant({ token: 'x' }, 'everything' as Grant), field: 'grant' },
    {
      name: 'a negative multiplier',
      call: (l) => l.grant({ token: 'x' }, { multiplier: -1 }),
      field: 'grant.multiplier',
    },
    {
      // × 25 would be `q=25000000000000000`, which a strict Structured Field parser refuses, and the whole field with it.
      name: 'a multiplier beyond what a header field carries',
      call: (l) => l.grant({ token: 'x' }, { multiplier: 1e15 }),
      field: 'grant.multiplier',
    },
    {
      name: 'a row of no endpoint',
      call: (l) => l.grant({ token: 'x' }, { rows: [{ method: 'GET', path: '/v1/other', limit: 1, windowMs: 1000 }] }),
      field: 'grant.rows[0]',
    },
    {
      name: 'an until in the past',
      call: (l) => l.grant({ token: 'x' }, 'unlimited', { until: Date.now() - 1 }),
      field: 'options.until',
    },
    {
      name: 'an until beyond a year',
      call: (l) => l.grant({ token: 'x' }, 'unlimited', { until: Date.now() + MAX_DURATION_MS + 60_000 }),
      field: 'options.until',
    },
    { name: 'an empty note', call: (l) => l.grant({ token: 'x' }, 'unlimited', { note: '' }), field: 'options.note' },
    { name: 'revoke of a key string', call: (l) => l.revoke('t:x' as unknown as ClientRef), field: 'client' },
    { name: 'unban of a number', call: (l) => l.unban(5 as unknown as string), field: 'client' },
    { name: 'a history limit of 0', call: (l) => l.history({ limit: 0 }), field: 'options.limit' },
    {
      name: 'a history since not a time',
      call: (l) => l.history({ since: 'yesterday' as unknown as number }),
      field: 'options.since',
    },
  ] as { name: string; call: (l: ListingLimitsMiddleware) => unknown; field: string; code?: string }[])(
    '$name → ListingLimitsError naming $field',
    async (t) => {
      await expect(call(t.call)).rejects.toMatchObject({
        name: 'ListingLimitsError',
        code: t.code ?? 'ERR_INVALID_OPTION',
        field: t.field,
      });
    },
  );

  it('a custom store without runtime state: changes are refused, the lists answer from this process', async () => {
    const custom = listingLimits(rows, {
      store: (counter) => new RateLimiterMemory({ points: counter.limit, duration: 60 }),
    });
    try {
      for (const change of [
        () => custom.ban({ token: 'x' }, valid),
        () => custom.grant({ token: 'x' }, 'unlimited'),
        () => custom.revoke({ token: 'x' }),
      ]) {
        await expect(Promise.resolve().then(change)).rejects.toMatchObject({
          code: 'ERR_UNSUPPORTED_STORE',
          field: 'options.store',
        });
      }
      expect(await custom.bans()).toEqual([]);
      expect(await custom.grants()).toEqual([]);
      await expect(custom.unban({ token: 'x' })).resolves.toBe(false);
    } finally {
      custom.close();
    }
  });
});

describe('a store that answers an operator’s call after its bound', () => {
  /** A store in this process whose state takes each change at once and answers it `delayMs` later. */
  function slowToAnswer(delayMs: number) {
    const memory = memoryStore();
    const inner = memory.state as RuntimeState;
    const state: RuntimeState = {
      ...inner,
      follow: (apply, answered) => inner.follow(apply, answered),
      history: () => inner.history(),
      removeHistory: (entry, applyBy) => inner.removeHistory(entry, applyBy),
      change: async (change) => {
        const result = await inner.change(change);
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        return result;
      },
    };
    return Object.assign((spec: CounterSpec) => memory(spec), {
      state,
      failure: { timeoutMs: 200, onFailure: 'memory' as const, callTimeoutMs: 100 },
    });
  }

  it('rejects within the bound, then tells onError that the change was taken after all, and it holds', async () => {
    const told: RuntimeStateError[] = [];
    const limits = listingLimits(rows, {
      store: slowToAnswer(400),
      onError: (error) => void told.push(error as RuntimeStateError),
    });
    try {
      const start = performance.now();
      await expect(limits.ban({ token: 'Bot late' }, { duration: 60_000 })).rejects.toMatchObject({
        code: 'ERR_STORE_UNAVAILABLE',
        field: 'options.store',
        message:
          'limits.ban: options.store did not answer within 100 ms (its callTimeoutMs). Nothing of this call was ' +
          'changed: try again once it answers.',
      });
      expect(performance.now() - start).toBeLessThan(400);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(told.map((e) => [e.code, e.message])).toEqual([
        [
          'ERR_STATE_WRITE',
          'listing-limits: limits.ban was refused as the store did not answer in time, but the store had taken its ' +
            'change: it holds on every instance.',
        ],
      ]);
      expect((await limits.bans()).map((b) => b.key)).toEqual([tokenKey('Bot late')]);
    } finally {
      limits.close();
    }
  });
});
