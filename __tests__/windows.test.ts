// Sliding windows and several limits per endpoint: the boundary burst, headers at the edges, all-or-none counting.
import fc from 'fast-check';
import request from 'supertest';
import { type EndpointRow, type ListingLimitsOptions, memoryStore } from '../lib';
import { MemoryCounter } from '../lib/stores/memory/counter';
import { createApp } from './helpers/app';
import { storeCases, T0, useFakeWindows } from './helpers/stores';

const SECOND = 1000;
const MINUTE = 60 * SECOND;

type Agent = ReturnType<typeof createApp>;

/** The statuses of `n` requests sent one after another. */
async function statuses(app: Agent, n: number, path = '/v1/bots', token = 'Bot one'): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await request(app).get(path).set('Authorization', token)).status);
  return out;
}

const repeat = (status: number, n: number) => Array<number>(n).fill(status);

describe.each(storeCases)('fixed windows, $name', (store) => {
  beforeAll(() => store.start?.());
  afterAll(() => store.stop?.());
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());

  it('let the boundary burst through: 2N requests, 2N - 1 of them within one second of a 60 s window', async () => {
    const app = createApp({ listing: 'B', options: { store: store.make() } });
    const n = 25; // GET /v1/bots: 25 per minute
    expect(await statuses(app, 1)).toEqual([200]);
    await store.advance(MINUTE - SECOND);
    expect(await statuses(app, n - 1)).toEqual(repeat(200, n - 1));
    await store.advance(SECOND);
    expect(await statuses(app, n)).toEqual(repeat(200, n));
  });
});

describe('sliding windows, memory store', () => {
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());
  const sliding = (options: ListingLimitsOptions = {}, listing: 'B' | readonly EndpointRow[] = 'B') =>
    createApp({ listing, options: { store: memoryStore(), window: 'sliding', ...options } });

  it('refuse the boundary burst: of the same 2N requests, only the one that has left the window is replaced', async () => {
    const app = sliding();
    expect(await statuses(app, 1)).toEqual([200]);
    jest.advanceTimersByTime(MINUTE - SECOND);
    expect(await statuses(app, 24)).toEqual(repeat(200, 24));
    jest.advanceTimersByTime(SECOND);
    expect(await statuses(app, 25)).toEqual([200, ...repeat(429, 24)]);
  });

  it('tell when the oldest request leaves the window, in every header, at the edges', async () => {
    const row = { method: 'GET', path: '/v1/bots', limit: 2, windowMs: 10 * SECOND };
    const app = sliding({}, [row]);
    const get = () => request(app).get('/v1/bots');
    const headers = (res: request.Response) => ({
      ratelimit: res.headers['ratelimit'],
      policy: res.headers['ratelimit-policy'],
      remaining: res.headers['x-ratelimit-remaining'],
      reset: res.headers['x-ratelimit-reset'],
      resetAfter: res.headers['x-ratelimit-reset-after'],
      retryAfter: res.headers['retry-after'],
    });
    const at = (ms: number) => String(Math.ceil((T0 + ms) / 1000));

    const first = await get().expect(200);
    expect(headers(first)).toEqual({
      ratelimit: '"GET /v1/bots";r=1;t=10',
      policy: '"GET /v1/bots";q=2;w=10',
      remaining: '1',
      reset: at(10 * SECOND),
      resetAfter: '10',
      retryAfter: undefined,
    });
    expect(first.body.rateLimit).toEqual({
      endpoint: 'GET /v1/bots',
      limit: 2,
      remaining: 1,
      resetTime: new Date(T0 + 10 * SECOND).toISOString(),
    });

    jest.advanceTimersByTime(4 * SECOND);
    expect(headers(await get().expect(200))).toMatchObject({ ratelimit: '"GET /v1/bots";r=0;t=6', resetAfter: '6' });

    // 1 ms before the first request leaves: refused, for 1 ms.
    jest.advanceTimersByTime(6 * SECOND - 1);
    const refused = await get().expect(429);
    expect(headers(refused)).toEqual({
      ratelimit: '"GET /v1/bots";r=0;t=1',
      policy: '"GET /v1/bots";q=2;w=10',
      remaining: '0',
      reset: at(10 * SECOND),
      resetAfter: '0.001',
      retryAfter: '1',
    });
    expect(refused.body).toEqual({
      success: false,
      code: 429,
      message: 'You are sending too many requests, please slow down',
      retryAfter: 1,
    });

    // The first request has left: one more passes, and the next is freed when the second leaves, at 14 s.
    jest.advanceTimersByTime(1);
    expect(headers(await get().expect(200))).toMatchObject({ ratelimit: '"GET /v1/bots";r=0;t=4', resetAfter: '4' });
    expect(headers(await get().expect(429))).toMatchObject({
      resetAfter: '4',
      retryAfter: '4',
      reset: at(14 * SECOND),
    });
  });

  it('do not count refused requests: a client that keeps sending is served again once its window has passed', async () => {
    const app = sliding({}, [{ method: 'GET', path: '/v1/bots', limit: 3, windowMs: 10 * SECOND }]);
    expect(await statuses(app, 3)).toEqual(repeat(200, 3));
    for (let s = 1; s < 10; s++) {
      jest.advanceTimersByTime(SECOND);
      expect(await statuses(app, 2)).toEqual(repeat(429, 2));
    }
    jest.advanceTimersByTime(SECOND);
    expect(await statuses(app, 4)).toEqual([...repeat(200, 3), 429]);
  });

  it('with a runtime grant, count the granted limits in a sliding window too', async () => {
    const app = sliding();
    await app.locals.limiter.grant({ token: 'Bot one' }, { multiplier: 2 });
    const res = await request(app).get('/v1/bots').set('Authorization', 'Bot one').expect(200);
    expect(res.headers['ratelimit-policy']).toBe('"GET /v1/bots (x2)";q=50;w=60');
    expect(await statuses(app, 50)).toEqual([...repeat(200, 49), 429]);
    jest.advanceTimersByTime(MINUTE);
    expect(await statuses(app, 51)).toEqual([...repeat(200, 50), 429]);
  });

  it('ban after repeated refusals, and in shadow mode let everything through with the would-be headers', async () => {
    const rows = [{ method: 'GET', path: '/v1/bots', limit: 1, windowMs: 10 * SECOND }];
    const banned = sliding({ ban: { after: 2, within: MINUTE, duration: MINUTE } }, rows);
    expect(await statuses(banned, 4)).toEqual([200, 429, 429, 403]);
    const shadow = sliding({ mode: 'shadow' }, rows);
    const answers = await Promise.all([0, 1].map(() => request(shadow).get('/v1/bots').expect(200)));
    expect(answers.map((res) => res.headers['ratelimit'])).toEqual([
      '"GET /v1/bots";r=0;t=10',
      '"GET /v1/bots";r=0;t=10',
    ]);
  });

  it('refuse rows whose limit a sliding window cannot keep, and grants that would make one', () => {
    const row = { method: 'GET', path: '/v1/bots', limit: 10_001, windowMs: MINUTE };
    expect(() => sliding({}, [row])).toThrow(
      'listingLimits: listing[0].limit must be at most 10000 with sliding windows, which keep every request of the window; got 10001.',
    );
    expect(() => createApp({ listing: [row] })).not.toThrow();
    expect(() => sliding({ grants: { 'Bot big': { multiplier: 1000 } } })).toThrow(
      'listingLimits: options.grants["Bot big"].multiplier makes a limit of 30000; sliding windows keep every request of the window, up to 10000.',
    );
    expect(() => sliding({ window: 'slide' as 'sliding' })).toThrow(
      'listingLimits: options.window must be one of "fixed", "sliding"; got "slide". Did you mean `sliding`?',
    );
  });

  it('need a store that counts them: a rate-limiter-flexible store is refused at start-up, naming the store', () => {
    const plain = memoryStore();
    const store = (counter: Parameters<typeof plain>[0]) => plain(counter);
    expect(() => createApp({ listing: 'B', options: { store, window: 'sliding' } })).toThrow(
      'listingLimits: options.store cannot count sliding windows: a rate-limiter-flexible limiter counts one fixed window. ' +
        'Use memoryStore() or redisStore(), whose `limits` factory counts them.',
    );
  });
});

/** An endpoint with a burst limit and a longer cap. */
const twoRows: EndpointRow[] = [
  { method: 'GET', path: '/v1/bots', limit: 3, windowMs: SECOND },
  { method: 'GET', path: '/v1/bots', limit: 5, windowMs: 10 * SECOND },
];

describe.each(['fixed', 'sliding'] as const)('several limits on one endpoint, %s windows, memory store', (window) => {
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());
  const get = (server: Agent) => request(server).get('/v1/bots').set('Authorization', 'Bot one');
  const app = () => createApp({ listing: twoRows, routes: [twoRows[0] as EndpointRow], options: { window } });

  it('pass a request only when every row allows it, and charge no row for a refused one', async () => {
    const server = app();
    expect(await statuses(server, 4)).toEqual([200, 200, 200, 429]);
    jest.advanceTimersByTime(SECOND);
    const [, second, refused] = await Promise.all([0, 1, 2].map(() => get(server)));
    // The second request is the fifth of the 10-second row; the third is refused by it, and spends no request of
    // the one-second row, which still has one left.
    expect(second?.status).toBe(200);
    expect(refused?.status).toBe(429);
    expect(refused?.headers['ratelimit']).toBe('"GET /v1/bots per 1s";r=1;t=1, "GET /v1/bots per 10s";r=0;t=9');
    jest.advanceTimersByTime(9 * SECOND);
    expect(await statuses(server, 4)).toEqual([200, 200, 200, 429]);
  });

  it('show every row in the IETF fields and the most restrictive in the legacy ones', async () => {
    const server = app();
    const first = await get(server).expect(200);
    expect(first.headers).toMatchObject({
      'ratelimit-policy': '"GET /v1/bots per 1s";q=3;w=1, "GET /v1/bots per 10s";q=5;w=10',
      ratelimit: '"GET /v1/bots per 1s";r=2;t=1, "GET /v1/bots per 10s";r=4;t=10',
      'x-ratelimit-limit': '3',
      'x-ratelimit-remaining': '2',
      'x-ratelimit-bucket': 'GET /v1/bots per 1s',
      'x-ratelimit-reset-after': '1',
    });
    expect(first.body.rateLimit).toEqual({
      endpoint: 'GET /v1/bots',
      limit: 3,
      remaining: 2,
      resetTime: new Date(T0 + SECOND).toISOString(),
    });
    await statuses(server, 3);
    jest.advanceTimersByTime(SECOND);
    expect(await statuses(server, 2)).toEqual([200, 200]);
    const capped = await get(server).expect(429);
    expect(capped.headers).toMatchObject({
      ratelimit: '"GET /v1/bots per 1s";r=1;t=1, "GET /v1/bots per 10s";r=0;t=9',
      'x-ratelimit-limit': '5',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-bucket': 'GET /v1/bots per 10s',
      'x-ratelimit-reset-after': '9',
      'retry-after': '9',
    });
    expect(capped.body.retryAfter).toBe(9);
  });

  it('grant every row: a multiplier multiplies each, replacement rows replace them all', async () => {
    const server = createApp({
      listing: twoRows,
      options: {
        window,
        grants: {
          'Bot x2': { multiplier: 2 },
          'Bot rows': { rows: [{ method: 'GET', path: '/v1/bots', limit: 1, windowMs: 60 * SECOND }] },
        },
      },
    });
    const x2 = await get(server).set('Authorization', 'Bot x2').expect(200);
    expect(x2.headers['ratelimit-policy']).toBe(
      '"GET /v1/bots (x2) per 1s";q=6;w=1, "GET /v1/bots (x2) per 10s";q=10;w=10',
    );
    expect(await statuses(server, 2, '/v1/bots', 'Bot rows')).toEqual([200, 429]);
    const rows = await get(server).set('Authorization', 'Bot rows').expect(429);
    expect(rows.headers['ratelimit-policy']).toBe('"GET /v1/bots (1/60s)";q=1;w=60');
  });
});

describe('tables with several rows per endpoint', () => {
  it.each([
    [
      'two rows with one window',
      [twoRows[0], { ...twoRows[0], limit: 9 }],
      'listing[1]',
      'repeats listing[0] (GET /v1/bots): one method and path may have several rows, each with a different windowMs.',
    ],
    [
      'a grant with two rows of one window',
      twoRows,
      'options.grants["Bot a"].rows[1]',
      'repeats options.grants["Bot a"].rows[0] (GET /v1/bots): one method and path may have several rows, each with a different windowMs.',
    ],
  ] as const)('refuse %s', (_name, listing, field, message) => {
    const grants = { 'Bot a': { rows: [twoRows[0] as EndpointRow, { ...(twoRows[0] as EndpointRow), limit: 2 }] } };
    const options = field.startsWith('options') ? { grants } : {};
    expect(() => createApp({ listing: listing as EndpointRow[], options })).toThrow(
      expect.objectContaining({ code: 'ERR_DUPLICATE_ROW', field, message: `listingLimits: ${field} ${message}` }),
    );
  });

  it('are refused with a store that cannot count them all at once', () => {
    const plain = memoryStore();
    const store = (counter: Parameters<typeof plain>[0]) => plain(counter);
    expect(() => createApp({ listing: twoRows, options: { store } })).toThrow(
      'listingLimits: options.store cannot count several limits on one endpoint (GET /v1/bots has 2): ' +
        'a rate-limiter-flexible limiter counts one fixed window. Use memoryStore() or redisStore(), whose `limits` factory counts them.',
    );
  });
});

describe('a sliding window, for any request times (property)', () => {
  afterEach(() => jest.useRealTimers());

  it('allows a request exactly when fewer than `limit` allowed requests lie within the `windowMs` before it', () => {
    jest.useFakeTimers({ now: T0 });
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 50 }),
        fc.array(fc.integer({ min: 0, max: 20 }), { minLength: 1, maxLength: 80 }),
        (limit, windowMs, gaps) => {
          jest.setSystemTime(T0);
          const counter = new MemoryCounter({ name: 'GET /x', window: 'sliding', limits: [{ limit, windowMs }] });
          const allowed: number[] = [];
          let now = T0;
          for (const gap of gaps) {
            now += gap;
            jest.setSystemTime(now);
            const inWindow = allowed.filter((t) => t > now - windowMs).length;
            const [count] = counter.countNow('k');
            const passed = (count?.count as number) <= limit;
            if (passed !== inWindow < limit) return false;
            if (passed) allowed.push(now);
          }
          // No interval of windowMs holds more than `limit` allowed requests.
          return allowed.every((t, i) => allowed.slice(i).filter((u) => u < t + windowMs).length <= limit);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('keeps no more than `limit` times per key, and forgets a key once its window has passed', () => {
    jest.useFakeTimers({ now: T0 });
    const counter = new MemoryCounter({ name: 'GET /x', window: 'sliding', limits: [{ limit: 3, windowMs: SECOND }] });
    for (let i = 0; i < 1000; i++) counter.countNow('a');
    jest.setSystemTime(T0 + SECOND);
    // Each key added sweeps two: 'a' is gone once its window has passed.
    counter.countNow('b');
    counter.countNow('c');
    expect(counter.size).toBe(2);
  });
});
