// Grant requests of rule 6 and the last hour of traffic: filed, checked by their requester, decided once, on every store.
import request from 'supertest';
import {
  type EndpointRow,
  type GrantRequestInput,
  listingLimits,
  type ListingLimitsMiddleware,
  ListingLimitsError,
  memoryStore,
  redisStore,
  type Store,
} from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { Traffic } from '../lib/limiter/observe/traffic';
import { OTHER_CLIENTS } from '../lib/stores/traffic';
import { createApp } from './helpers/app';
import { describeRedis, redisForBlock, scanKeys } from './helpers/redis';
import { T0, useFakeClock } from './helpers/stores';

const rows: readonly EndpointRow[] = [{ method: 'GET', path: '/v1/things', limit: 2, windowMs: 60_000 }];
const TOKEN = 'Bot requester-token-9f3a';

const input: GrantRequestInput = {
  token: TOKEN,
  ask: { multiplier: 10 },
  proof: { kind: 'bot', servers: 120_000, shards: 120, link: 'https://example.com/bot' },
  contact: 'ops@example.com',
  reason: 'We serve many servers.',
};

function contract(makeStore: () => Store) {
  let limits: ListingLimitsMiddleware[] = [];
  const make = (store = makeStore()) => {
    const made = listingLimits(rows, { store });
    limits.push(made);
    return made;
  };
  afterEach(() => {
    for (const l of limits) l.close();
    limits = [];
  });

  it('files a pending request under the hashed token, with only its last 4 characters kept', async () => {
    const l = make();
    const filed = await l.requests.file(input);
    expect(filed).toEqual({
      id: expect.stringMatching(/^[\w-]{12}$/),
      key: tokenKey(TOKEN),
      tokenEnd: '9f3a',
      ask: { multiplier: 10 },
      proof: { kind: 'bot', servers: 120_000, shards: 120, link: 'https://example.com/bot' },
      contact: 'ops@example.com',
      reason: 'We serve many servers.',
      at: expect.any(Date),
      status: 'pending',
      decidedAt: undefined,
      granted: undefined,
      until: undefined,
      answer: undefined,
    });
    expect(JSON.stringify(await l.requests.list())).not.toContain('requester-token');
    expect(await l.requests.status(filed.id, TOKEN)).toEqual(filed);
    expect(await l.requests.status(filed.id, 'Bot someone-else-entirely')).toBeUndefined();
    expect(await l.requests.status('nope', TOKEN)).toBeUndefined();
  });

  it('approves once: the token gets the grant on the API, and the requester sees it approved', async () => {
    const store = makeStore();
    const l = make(store);
    const app = createApp({ listing: rows, options: { store } });
    limits.push(app.locals.limiter as ListingLimitsMiddleware);
    const filed = await l.requests.file(input);
    const approved = await l.requests.approve(filed.id, { multiplier: 10 });
    expect([approved.status, approved.granted]).toEqual(['approved', { multiplier: 10 }]);
    // The grant shows its client as the request did: by its token's last 4 characters.
    expect((await l.grants()).map((g) => [g.key, g.grant, g.note, g.tokenEnd])).toEqual([
      [tokenKey(TOKEN), { multiplier: 10 }, `request ${filed.id}`, '9f3a'],
    ]);
    await expect(l.requests.approve(filed.id, 'unlimited')).rejects.toThrow(
      'limits.requests.approve: id names a request already approved.',
    );
    expect((await l.requests.status(filed.id, TOKEN))?.status).toBe('approved');
    // The other middleware on the store knows the grant once its list, which reads the store first, has it: then its
    // client's first request counts on the grant's counter.
    const other = app.locals.limiter as ListingLimitsMiddleware;
    expect((await other.grants()).map((g) => g.key)).toEqual([tokenKey(TOKEN)]);
    const res = await request(app).get('/v1/things').set('Authorization', TOKEN);
    expect([res.status, res.headers['x-ratelimit-limit']]).toEqual([200, '20']);
  });

  it('declines with the reason its requester sees', async () => {
    const l = make();
    const filed = await l.requests.file({ ...input, ask: 'unlimited' });
    await l.requests.decline(filed.id, 'Not enough proof.');
    const seen = await l.requests.status(filed.id, TOKEN);
    expect([seen?.status, seen?.answer]).toEqual(['declined', 'Not enough proof.']);
    await expect(l.requests.decline(filed.id, 'again')).rejects.toThrow('id names a request already declined.');
    expect(await l.grants()).toEqual([]);
  });

  it('lists pending requests first, oldest first', async () => {
    // Requests filed within one millisecond have no order: each is filed once the clock has moved on.
    const later = async (filed: { at: Date }) => {
      while (Date.now() <= filed.at.getTime()) await new Promise((resolve) => setTimeout(resolve, 1));
    };
    const l = make();
    const a = await l.requests.file(input);
    await later(a);
    const b = await l.requests.file({ ...input, ask: 'unlimited' });
    await later(b);
    const c = await l.requests.file({ ...input, token: `${TOKEN}-c` });
    await l.requests.decline(b.id, 'no');
    expect((await l.requests.list()).map((r) => r.id)).toEqual([a.id, c.id, b.id]);
  });

  it("orders requests filed and decided in one millisecond by the store's order, never by the clock", async () => {
    useFakeClock(); // Date stands still: every request below is filed and decided at one instant
    try {
      const l = make();
      const filed: string[] = [];
      for (let i = 0; i < 6; i++) filed.push((await l.requests.file({ ...input, token: `${TOKEN}-${i}` })).id);
      await l.requests.decline(filed[4] as string, 'no');
      await l.requests.approve(filed[1] as string, { multiplier: 2 });
      await l.requests.decline(filed[3] as string, 'no');
      const listed = await l.requests.list();
      expect(new Set(listed.map((r) => r.at.getTime()))).toEqual(new Set([T0]));
      // Pending in the order filed; decided, the newest decision first.
      expect(listed.map((r) => r.id)).toEqual([0, 2, 5, 3, 1, 4].map((i) => filed[i]));
    } finally {
      jest.useRealTimers();
    }
  });

  describe('a store that cannot be filled against legitimate requesters', () => {
    beforeEach(() => useFakeClock());
    afterEach(() => jest.useRealTimers());
    const DAY = 24 * 3600_000;

    it('a pending request no operator decides expires after 30 days: gone for its requester, the lists and the counts', async () => {
      const l = make();
      const filed = await l.requests.file({ ...input, ip: '203.0.113.9' });
      jest.setSystemTime(T0 + 30 * DAY - 1);
      expect([(await l.requests.status(filed.id, TOKEN))?.status, await l.requests.counts()]).toEqual([
        'pending',
        { pending: 1, decided: 0 },
      ]);
      jest.setSystemTime(T0 + 30 * DAY);
      expect(await l.requests.status(filed.id, TOKEN)).toBeUndefined();
      expect(await l.requests.get(filed.id)).toBeUndefined();
      expect([await l.requests.list(), await l.requests.counts()]).toEqual([[], { pending: 0, decided: 0 }]);
      await expect(l.requests.decline(filed.id, 'late')).rejects.toThrow("id is no request's id");
      // Its requester may file again, as many as before.
      for (let i = 0; i < 2; i++) await l.requests.file({ ...input, ip: '203.0.113.9' });
    });

    it('a client key has 2 requests pending at the most; a decision makes room', async () => {
      const l = make();
      const [a] = [await l.requests.file(input), await l.requests.file(input)];
      const refused = await l.requests.file(input).catch((e: unknown) => e);
      expect(refused).toMatchObject({
        code: 'ERR_TOO_MANY_PENDING',
        field: 'input.token',
        message:
          "limits.requests.file: input.token has 2 requests pending already: wait for an operator's decision, or " +
          'for one to expire.',
      });
      await l.requests.decline((a as { id: string }).id, 'no');
      await l.requests.file(input);
      expect(await l.requests.counts()).toEqual({ pending: 2, decided: 1 });
    });

    it.each([
      [
        'an IPv6 /64',
        ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3'],
        '2001:db8:1:2:0:1::4',
        '2001:db8:1:3::1',
      ],
      ['an IPv4 /24', ['203.0.113.1', '203.0.113.2', '::ffff:203.0.113.3'], '203.0.113.200', '203.0.114.1'],
    ])('%s has 3 requests pending at the most, whatever its tokens', async (_what, addresses, fourth, other) => {
      const l = make();
      for (const [i, ip] of addresses.entries()) await l.requests.file({ ...input, token: `Bot net-${i}`, ip });
      const refused = await l.requests.file({ ...input, token: 'Bot net-3', ip: fourth }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: 'ERR_TOO_MANY_PENDING', field: 'input.ip' });
      const filed = await l.requests.file({ ...input, token: 'Bot net-4', ip: other });
      expect(filed.network).toBe(other.includes(':') ? 'ip:2001:db8:1:3::/64' : 'ip:203.0.114.0/24');
    });

    it('full, the store drops the oldest request of the group that has the most, never a newcomer from a fresh network', async () => {
      const l = make();
      // Five requesters from five networks, then a flood of 10,100 from as many /64s of one /48.
      const early: string[] = [];
      for (let i = 0; i < 5; i++)
        early.push((await l.requests.file({ ...input, token: `Bot early-${i}`, ip: `10.${i}.0.1` })).id);
      const flood: string[] = [];
      for (let i = 0; i < 10_100; i++) {
        const ip = `2001:db8:f00d:${i.toString(16)}::1`;
        flood.push((await l.requests.file({ ...input, token: `Bot flood-${i}`, ip })).id);
      }
      const late = await l.requests.file({ ...input, token: 'Bot newcomer', ip: '198.51.100.7' });
      expect(await l.requests.counts()).toEqual({ pending: 10_000, decided: 0 });
      for (const id of [...early, late.id]) expect((await l.requests.get(id))?.status).toBe('pending');
      // 10,106 filed, 10,000 kept: the flood lost its own 106 oldest, in the order they were filed.
      const kept = await Promise.all(flood.slice(0, 107).map((id) => l.requests.get(id)));
      expect(kept.map((r) => r !== undefined)).toEqual([...Array(106).fill(false), true]);
      expect((await l.requests.list({ limit: 6 })).map((r) => r.id)).toEqual([...early, flood[106]]);
    }, 120_000);

    it('pages the pending requests, and finds a client’s by token, key or address', async () => {
      const l = make();
      const ids: string[] = [];
      for (let i = 0; i < 7; i++)
        ids.push((await l.requests.file({ ...input, token: `Bot page-${i}`, ip: `10.0.${i}.1` })).id);
      await l.requests.decline(ids[2] as string, 'no');
      const page = async (options: object) => (await l.requests.list(options)).map((r) => ids.indexOf(r.id));
      expect(await page({ status: 'pending', offset: 2, limit: 3 })).toEqual([3, 4, 5]);
      expect(await page({ offset: 4, limit: 3 })).toEqual([5, 6, 2]);
      expect(await page({ status: 'decided' })).toEqual([2]);
      const of = async (client: object) => (await l.requests.find(client as never)).map((r) => ids.indexOf(r.id));
      expect(await of({ token: 'Bot page-4' })).toEqual([4]);
      expect(await of({ key: tokenKey('Bot page-2') })).toEqual([2]);
      expect(await of({ ip: '10.0.5.200' })).toEqual([5]);
      expect(await of({ key: 'ip:10.0.6.9' })).toEqual([6]);
      await expect(l.requests.list({ limit: 1001 })).rejects.toMatchObject({ field: 'options.limit' });
      await expect(l.requests.list({ status: 'done' as never })).rejects.toMatchObject({ field: 'options.status' });
    });
  });
}

describe('memory store', () => contract(() => memoryStore()));

describeRedis('redis store', () => {
  const redis = redisForBlock();
  let made = 0;
  contract(() => redisStore(redis.client, { prefix: `requests-${process.pid}-${++made}`, timeoutMs: 5000 }));

  it('keeps requests under the prefix, on the runtime hash tag, without the token', async () => {
    const prefix = `requests-${process.pid}-keys`;
    const l = listingLimits(rows, { store: redisStore(redis.client, { prefix }) });
    const filed = await l.requests.file(input);
    l.close();
    expect(await scanKeys(redis.client, `${prefix}:*`)).toEqual(
      [
        'requests',
        'requests-seq',
        'requests:by',
        'requests:group-by',
        'requests:groups',
        'requests:meta',
        'requests:pending',
        'requests:pending-by',
        'requests:pending-ends',
      ].map((key) => `${prefix}:{runtime}:${key}`),
    );
    const stored = await redis.client.hget(`${prefix}:{runtime}:requests`, filed.id);
    expect(stored).toContain(`"key":"${tokenKey(TOKEN)}"`);
    expect(stored).not.toContain('requester-token');
  });

  it('skips what something else left in the requests’ keys: never an error, never a request it did not file', async () => {
    const prefix = `requests-${process.pid}-foreign`;
    const at = (key: string) => `${prefix}:{runtime}:${key}`;
    const l = listingLimits(rows, { store: redisStore(redis.client, { prefix, timeoutMs: 5000 }) });
    try {
      const filed = await l.requests.file({ ...input, ip: '203.0.113.9' });
      const r = redis.client;
      await r.hset(at('requests'), 'junk-1', 'not json', 'junk-2', '{"id":"junk-2"}');
      await r.zadd(at('requests:pending'), 0, 'junk-1', 1, 'junk-2', 2, 'no-record');
      await r.zadd(at('requests:pending-ends'), 9e15, 'junk-1');
      await r.hset(at('requests:meta'), 'junk-1', 'garbage', 'junk-2', '1\npending\n\n\n');
      await r.zadd(at('requests:groups'), 1e9, 'ip:evil');
      await r.zadd(at('requests:by'), 0, `k\n${tokenKey(TOKEN)}\nnot a sequence`);
      expect((await l.requests.list()).map((q) => q.id)).toEqual([filed.id]);
      expect((await l.requests.find({ token: TOKEN })).map((q) => q.id)).toEqual([filed.id]);
      for (const id of ['junk-1', 'junk-2', 'no-record']) {
        await expect(l.requests.decline(id, 'no')).rejects.toThrow(`limits.requests.decline: id is no request's id`);
        expect(await l.requests.get(id)).toBeUndefined();
      }
      // Filing, deciding and reading go on as before.
      const next = await l.requests.file({ ...input, token: `${TOKEN}-2`, ip: '203.0.113.10' });
      await l.requests.decline(next.id, 'no');
      expect((await l.requests.list()).map((q) => q.id)).toEqual([filed.id, next.id]);
    } finally {
      l.close();
    }
  });
});

describe('bad input', () => {
  const l = listingLimits(rows);
  afterAll(() => l.close());
  it.each([
    [{ ...input, token: '' }, 'input.token', 'limits.requests.file: input.token must be a non-empty string'],
    [{ ...input, ask: { multiplier: -1 } }, 'input.ask.multiplier', 'must be a positive number; got -1.'],
    [
      { ...input, ask: { rows: [{ method: 'GET', path: '/v1/other', limit: 5, windowMs: 1000 }] } },
      'input.ask.rows[0]',
      '(GET /v1/other) replaces no row of the table.',
    ],
    [{ ...input, proof: { ...input.proof, link: 'javascript:alert(1)' } }, 'input.proof.link', 'http(s) URL'],
    [{ ...input, proof: { kind: 'server', members: -3, link: 'https://x.test' } }, 'input.proof.members', 'from 0'],
    [{ ...input, contact: ' ' }, 'input.contact', 'must be a non-empty string of at most 200 characters'],
  ])('case %#: names the field at fault', async (bad, field, message) => {
    const error = await l.requests.file(bad as GrantRequestInput).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ListingLimitsError);
    expect((error as ListingLimitsError).field).toBe(field);
    expect((error as Error).message).toContain(message);
  });

  it('refuses a custom store that keeps no requests', async () => {
    const custom = Object.assign((spec: Parameters<Store>[0]) => memoryStore()(spec), {}) as Store;
    const c = listingLimits(rows, { store: custom });
    expect(c.requests.supported).toBe(false);
    await expect(c.requests.list()).rejects.toMatchObject({ code: 'ERR_UNSUPPORTED_STORE', field: 'options.store' });
    c.close();
  });
});

/**
 * The 60 minutes of the hour up to `now`, oldest first, as `traffic()` answers them: each with `[allowed, refused]` of
 * `counted` by its index, else none.
 */
const hourOf = (now: number, counted: Record<number, [number, number]> = {}) =>
  Array.from({ length: 60 }, (_, i) => ({
    at: new Date((Math.floor(now / 60_000) - 59 + i) * 60_000),
    allowed: counted[i]?.[0] ?? 0,
    refused: counted[i]?.[1] ?? 0,
  }));

describe('traffic of the last hour', () => {
  afterEach(() => jest.useRealTimers());

  it('counts nothing until asked, then allowed and refused requests per endpoint and the clients refused most', async () => {
    jest.useFakeTimers({ now: Date.UTC(2026, 0, 1), doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'] });
    const app = createApp({ listing: rows });
    const l = app.locals.limiter as ListingLimitsMiddleware;
    await request(app).get('/v1/things').set('Authorization', 'Bot before-asked').expect(200);
    const none = (now: number) => ({
      endpoints: [{ endpoint: 'GET /v1/things', allowed: 0, refused: 0, minutes: hourOf(now) }],
      refused: [],
      minutes: hourOf(now),
    });
    expect(l.traffic()).toEqual(none(Date.now()));
    for (const status of [200, 200, 429, 429]) {
      await request(app).get('/v1/things').set('Authorization', 'Bot a').expect(status);
    }
    await request(app).get('/v1/things').set('Authorization', 'Bot before-asked').expect(200);
    await request(app).get('/v1/things').set('Authorization', 'Bot before-asked').expect(429);
    const now = Date.now();
    expect(l.traffic()).toEqual({
      endpoints: [{ endpoint: 'GET /v1/things', allowed: 3, refused: 3, minutes: hourOf(now, { 59: [3, 3] }) }],
      refused: [
        { key: tokenKey('Bot a'), count: 2 },
        { key: tokenKey('Bot before-asked'), count: 1 },
      ].sort((x, y) => y.count - x.count || (x.key < y.key ? -1 : 1)),
      minutes: hourOf(now, { 59: [3, 3] }),
    });
    jest.setSystemTime(Date.UTC(2026, 0, 1, 1, 0, 0));
    expect(l.traffic()).toEqual(none(Date.now()));
    l.close();
  });

  it('answers the hour minute by minute, per endpoint and all together: an hour old drops, a clock set back counts', () => {
    const traffic = new Traffic(['GET /a', 'POST /b']);
    traffic.keepHour();
    const start = Date.UTC(2026, 0, 1, 0, 0, 59, 999);
    jest.useFakeTimers({ now: start });
    const count = (endpoint: string, allowed: number, refused: number) => {
      for (let i = 0; i < allowed; i++) traffic.count(endpoint, 'allowed', { key: 'k' });
      for (let i = 0; i < refused; i++) traffic.count(endpoint, 'limited', { key: 'k' });
    };
    count('GET /a', 2, 1);
    jest.setSystemTime(start + 1); // the next minute
    count('GET /a', 1, 0);
    count('POST /b', 0, 4);
    traffic.count('POST /b', 'shadow_limited', { key: 'k' }); // allowed: a shadow refusal lets the request through
    jest.setSystemTime(start + 1 + 30 * 60_000);
    count('GET /a', 5, 0);
    const now = Date.now();
    const at = (minutes: number) => 59 - minutes; // the index of the minute `minutes` before this one
    expect(traffic.summary(10, now)).toEqual({
      endpoints: [
        {
          endpoint: 'GET /a',
          allowed: 8,
          refused: 1,
          minutes: hourOf(now, { [at(31)]: [2, 1], [at(30)]: [1, 0], 59: [5, 0] }),
        },
        { endpoint: 'POST /b', allowed: 1, refused: 4, minutes: hourOf(now, { [at(30)]: [1, 4] }) },
      ],
      refused: [{ key: 'k', count: 5 }],
      minutes: hourOf(now, { [at(31)]: [2, 1], [at(30)]: [2, 4], 59: [5, 0] }),
    });
    // 59 minutes after the second minute, the first is no part of the hour; the second still is.
    const later = start + 1 + 59 * 60_000;
    expect(traffic.summary(10, later).minutes).toEqual(hourOf(later, { 0: [2, 4], [at(29)]: [5, 0] }));
    // A clock set back an hour: what was counted after it is no part of its hour, and a count of now is.
    jest.setSystemTime(start - 3600_000);
    count('GET /a', 0, 7);
    const back = Date.now();
    expect(traffic.summary(10, back).minutes).toEqual(hourOf(back, { 59: [0, 7] }));
    for (const e of traffic.summary(10, now).endpoints)
      expect([e.allowed, e.refused]).toEqual(
        ['allowed', 'refused'].map((of) => e.minutes.reduce((n, m) => n + m[of as 'allowed' | 'refused'], 0)),
      );
  });

  it('keeps at most 1000 refused clients a minute, the rest as (others); an unidentified request counts for its endpoint', () => {
    const traffic = new Traffic(['GET /a']);
    traffic.keepHour();
    const now = Date.UTC(2026, 0, 1, 0, 0, 30);
    jest.useFakeTimers({ now });
    for (let i = 0; i < 1002; i++) traffic.count('GET /a', 'limited', { key: `k${String(i).padStart(4, '0')}` });
    traffic.count('GET /a', 'limited', { key: 'k0000' });
    traffic.count('GET /a', 'store_unavailable', undefined);
    traffic.count('GET /a', 'allowed', undefined);
    traffic.count('(none)', 'banned', { key: 'ip:203.0.113.9' });
    const summary = traffic.summary(3, now);
    expect(summary).toEqual({
      endpoints: [
        { endpoint: 'GET /a', allowed: 1, refused: 1003, minutes: hourOf(now, { 59: [1, 1003] }) },
        { endpoint: '(none)', allowed: 0, refused: 1, minutes: hourOf(now, { 59: [0, 1] }) },
      ],
      minutes: hourOf(now, { 59: [1, 1004] }),
      refused: [
        { key: OTHER_CLIENTS, count: 3 },
        { key: 'k0000', count: 2 },
        { key: 'k0001', count: 1 },
      ],
    });
  });
});
