// limits.usage() and limits.reset(): a client's counters read without counting and cleared, on every store and window.
import type { Express } from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import request from 'supertest';
import {
  type EndpointRow,
  type EndpointUsage,
  type LimitsSpec,
  type ListingLimitsMiddleware,
  memoryStore,
  redisStore,
  type Store,
  type WindowKind,
} from '../lib';
import { MemoryCounter } from '../lib/stores/memory/counter';
import { createApp } from './helpers/app';
import { describeRedis, redisForBlock } from './helpers/redis';

const rows: readonly EndpointRow[] = [
  { method: 'GET', path: '/v1/things', limit: 3, windowMs: 60_000 },
  { method: 'POST', path: '/v1/things/:id', limit: 2, windowMs: 60_000 },
  { method: 'POST', path: '/v1/things/:id', limit: 5, windowMs: 3_600_000 },
];
const TOKEN = 'Bot usage-token';

let made: ListingLimitsMiddleware[] = [];
afterEach(() => {
  for (const l of made) l.close();
  made = [];
});

function app(store: Store, window: WindowKind): { app: Express; limits: ListingLimitsMiddleware } {
  const made_ = createApp({ listing: rows, options: { store, window } });
  const limits = made_.locals.limiter as ListingLimitsMiddleware;
  made.push(limits);
  return { app: made_, limits };
}

/** When the test began: every window of its requests started after it. */
let since = 0;
beforeEach(() => {
  since = Date.now();
});

/**
 * The usage, with a reset time told as `WINDOW` when it is one window after a moment of the test (the start of a
 * window the test's requests began; 1 ms either side for the store's clock, read apart from this one), else as is.
 */
async function usageOf(limits: ListingLimitsMiddleware, client: Parameters<ListingLimitsMiddleware['usage']>[0]) {
  const usage = await limits.usage(client);
  const now = Date.now();
  return usage.map((u: EndpointUsage) => {
    const t = u.resetTime?.getTime();
    const inWindow = t !== undefined && t >= since + u.windowMs - 1 && t <= now + u.windowMs + 1;
    return { ...u, resetTime: inWindow ? WINDOW : u.resetTime };
  });
}
const WINDOW = 'one window after a request of the test';

const untouched = (endpoint: string, counter: string, limit: number, windowMs: number) => ({
  endpoint,
  counter,
  limit,
  windowMs,
  used: 0,
  remaining: limit,
  resetTime: undefined,
});

function suite(makeStore: () => Store) {
  describe.each(['fixed', 'sliding'] as const)('%s windows', (window) => {
    it('reads every limit of every endpoint without counting, for a token and an address', async () => {
      const { app: a, limits } = app(makeStore(), window);
      for (const status of [200, 200]) await request(a).get('/v1/things').set('Authorization', TOKEN).expect(status);
      for (const status of [200, 200, 429])
        await request(a).post('/v1/things/1').set('Authorization', TOKEN).expect(status);
      await request(a).get('/v1/things').expect(200);
      const expected = [
        { ...untouched('GET /v1/things', 'GET /v1/things', 3, 60_000), used: 2, remaining: 1, resetTime: WINDOW },
        {
          ...untouched('POST /v1/things/:id', 'POST /v1/things/:id', 2, 60_000),
          used: 2,
          remaining: 0,
          resetTime: WINDOW,
        },
        {
          ...untouched('POST /v1/things/:id', 'POST /v1/things/:id', 5, 3_600_000),
          used: 2,
          remaining: 3,
          resetTime: WINDOW,
        },
      ];
      // Read twice: reading counts nothing.
      expect(await usageOf(limits, { token: TOKEN })).toEqual(expected);
      expect(await usageOf(limits, { key: 't:nobody' })).toEqual([
        untouched('GET /v1/things', 'GET /v1/things', 3, 60_000),
        untouched('POST /v1/things/:id', 'POST /v1/things/:id', 2, 60_000),
        untouched('POST /v1/things/:id', 'POST /v1/things/:id', 5, 3_600_000),
      ]);
      const res = await request(a).get('/v1/things').set('Authorization', TOKEN).expect(200);
      expect(res.headers['x-ratelimit-remaining']).toBe('0');
      // supertest's address is ::ffff:127.0.0.1, counted as 127.0.0.1.
      expect((await usageOf(limits, { ip: '127.0.0.1' }))[0]).toEqual({
        ...untouched('GET /v1/things', 'GET /v1/things', 3, 60_000),
        used: 1,
        remaining: 2,
        resetTime: WINDOW,
      });
    });

    it('reads the counters of a granted client on its grant, and none with removal of limits', async () => {
      const { app: a, limits } = app(makeStore(), window);
      await limits.grant({ token: TOKEN }, { multiplier: 2 });
      await request(a).get('/v1/things').set('Authorization', TOKEN).expect(200);
      expect((await usageOf(limits, { token: TOKEN }))[0]).toEqual({
        ...untouched('GET /v1/things', 'GET /v1/things (x2)', 6, 60_000),
        used: 1,
        remaining: 5,
        resetTime: WINDOW,
      });
      await limits.grant({ token: TOKEN }, 'unlimited');
      expect((await limits.usage({ token: TOKEN }))[0]).toEqual({
        endpoint: 'GET /v1/things',
        counter: undefined,
        limit: Infinity,
        windowMs: 60_000,
        used: 0,
        remaining: Infinity,
        resetTime: undefined,
      });
    });

    it('resets every endpoint, or one, the grant’s counters included', async () => {
      const { app: a, limits } = app(makeStore(), window);
      const send = () =>
        Promise.all([
          request(a).get('/v1/things').set('Authorization', TOKEN),
          request(a).post('/v1/things/1').set('Authorization', TOKEN),
        ]);
      await send();
      await send();
      expect(await limits.reset({ token: TOKEN }, 'GET /v1/things')).toBe(true);
      expect((await limits.usage({ token: TOKEN })).map((u) => u.used)).toEqual([0, 2, 2]);
      expect(await limits.reset({ token: TOKEN })).toBe(true);
      expect((await limits.usage({ token: TOKEN })).map((u) => u.used)).toEqual([0, 0, 0]);
      expect(await limits.reset({ token: TOKEN })).toBe(false);
      // A client refused on its grant's counter, then reset: its next request passes.
      await limits.grant({ token: TOKEN }, { multiplier: 0.5 });
      for (const status of [200, 429]) await request(a).post('/v1/things/1').set('Authorization', TOKEN).expect(status);
      await limits.reset({ token: TOKEN });
      await request(a).post('/v1/things/1').set('Authorization', TOKEN).expect(200);
    });
  });
}

describe('memory store', () => suite(() => memoryStore()));

describeRedis('redis store', () => {
  const redis = redisForBlock();
  let n = 0;
  suite(() => redisStore(redis.client, { prefix: `usage-${process.pid}-${++n}`, timeoutMs: 5000 }));

  it('a reset on one instance ends the refusals the other remembers, within its refresh', async () => {
    const store = redisStore(redis.client, { prefix: `usage-${process.pid}-shared`, timeoutMs: 5000 });
    const [a, b] = [app(store, 'fixed'), app(store, 'fixed')];
    for (const status of [200, 200, 200, 429])
      await request(b.app).get('/v1/things').set('Authorization', TOKEN).expect(status);
    await a.limits.reset({ token: TOKEN });
    // Instance b remembered the refusal until the window's end; the reset reaches it within 250 ms.
    let status = 0;
    for (let i = 0; i < 40 && status !== 200; i++) {
      status = (await request(b.app).get('/v1/things').set('Authorization', TOKEN)).status;
      if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(status).toBe(200);
    expect((await b.limits.usage({ token: TOKEN }))[0]?.used).toBe(1);
  });
});

describe('what cannot be read', () => {
  it.each([
    [{ tokn: 'x' }, 'client'],
    [{ ip: 'nope' }, 'client.ip'],
  ])('a client %j is refused naming %s', async (client, field) => {
    const { limits } = app(memoryStore(), 'fixed');
    await expect(limits.usage(client as never)).rejects.toMatchObject({ field, code: 'ERR_INVALID_OPTION' });
    await expect(limits.reset(client as never)).rejects.toMatchObject({ field });
  });

  it('an unknown endpoint is refused, with the closest one', async () => {
    const { limits } = app(memoryStore(), 'fixed');
    await expect(limits.reset({ token: TOKEN }, 'GET /v1/thing')).rejects.toThrow(
      'limits.reset: endpoint must be one of "GET /v1/things", "POST /v1/things/:id"; got "GET /v1/thing". ' +
        'Did you mean `GET /v1/things`?',
    );
  });

  it('a rate-limiter-flexible limiter of a custom store is read and reset', async () => {
    const store = ((spec) => new RateLimiterMemory({ points: spec.limit, duration: spec.windowMs / 1000 })) as Store;
    const a = createApp({ listing: [rows[0] as EndpointRow], options: { store } });
    const limits = a.locals.limiter as ListingLimitsMiddleware;
    made.push(limits);
    await request(a).get('/v1/things').set('Authorization', TOKEN).expect(200);
    expect((await limits.usage({ token: TOKEN }))[0]?.used).toBe(1);
    expect(await limits.reset({ token: TOKEN })).toBe(true);
    expect((await limits.usage({ token: TOKEN }))[0]?.used).toBe(0);
  });

  it('a custom store whose limits counter cannot peek is refused with ERR_UNSUPPORTED_STORE', async () => {
    const memory = memoryStore();
    const store = Object.assign((spec: Parameters<Store>[0]) => memory(spec), {
      limits: (spec: LimitsSpec) => {
        const counter = new MemoryCounter(spec);
        return { countsNow: true as const, countNow: (key: string) => counter.countNow(key) };
      },
    }) as Store;
    const { limits } = app(store, 'sliding');
    const expected = {
      code: 'ERR_UNSUPPORTED_STORE',
      field: 'options.store',
      message:
        "limits.usage: options.store cannot read a client's counters of GET /v1/things: its counter has no `peek` " +
        'and `reset`. Use memoryStore() or redisStore(), or give the store these methods.',
    };
    await expect(limits.usage({ token: TOKEN })).rejects.toMatchObject(expected);
    await expect(limits.reset({ token: TOKEN })).rejects.toMatchObject({ code: 'ERR_UNSUPPORTED_STORE' });
  });
});
