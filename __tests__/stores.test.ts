// The memory store's limiter: its count taken at once is the count its promise settles with.
import { RateLimiterRes } from 'rate-limiter-flexible';
import request from 'supertest';
import { memoryStore, type Store } from '../lib';
import { MemoryLimiter } from '../lib/stores';
import { createApp } from './helpers/app';
import { T0, useFakeWindows } from './helpers/stores';

const endpoint = { method: 'GET', path: '/v1/bots/:id', name: 'GET /v1/bots/:id', limit: 2, windowMs: 1000 };

/** What consume() settles with, as [allowed, remaining, consumed, msBeforeNext]. */
async function viaPromise(limiter: MemoryLimiter, key: string): Promise<[boolean, number, number, number]> {
  try {
    const r = await limiter.consume(key);
    return [true, r.remainingPoints, r.consumedPoints, r.msBeforeNext];
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    return [false, rejection.remainingPoints, rejection.consumedPoints, rejection.msBeforeNext];
  }
}

function atOnce(limiter: MemoryLimiter, key: string): [boolean, number, number, number] {
  const r = limiter.consumeNow(key);
  return [r.consumedPoints <= limiter.points, r.remainingPoints, r.consumedPoints, r.msBeforeNext];
}

describe('memoryStore', () => {
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());

  it('gives each endpoint a MemoryLimiter with its limit and window', () => {
    const limiter = memoryStore()(endpoint);
    expect(limiter).toBeInstanceOf(MemoryLimiter);
    expect(limiter.points).toBe(2);
    expect(limiter.duration).toBe(1);
  });

  // Requests from one client: the ms the clock moves before each, and what both ways of counting give.
  const steps = [
    { advance: 0, expected: [true, 1, 1, 1000] },
    { advance: 300, expected: [true, 0, 2, 700] },
    { advance: 100, expected: [false, 0, 3, 600] },
    { advance: 599, expected: [false, 0, 4, 1] },
    { advance: 1, expected: [true, 1, 1, 1000] },
  ];
  it.each(steps.map((s, i) => ({ ...s, at: steps.slice(0, i + 1).reduce((ms, x) => ms + x.advance, 0), count: i + 1 })))(
    'consumeNow() counts as consume() does: request $count at $at ms',
    async ({ count, at, expected }) => {
      const promised = memoryStore()(endpoint) as MemoryLimiter;
      const immediate = memoryStore()(endpoint) as MemoryLimiter;
      let fromPromise: unknown;
      let fromNow: unknown;
      for (const { advance } of steps.slice(0, count)) {
        jest.setSystemTime(Date.now() + advance);
        fromPromise = await viaPromise(promised, 'a');
        fromNow = atOnce(immediate, 'a');
      }
      expect(Date.now() - T0).toBe(at);
      expect(fromNow).toEqual(expected);
      expect(fromPromise).toEqual(expected);
    },
  );

  it('keeps clients apart', () => {
    const limiter = memoryStore()(endpoint) as MemoryLimiter;
    expect(atOnce(limiter, 'a')).toEqual([true, 1, 1, 1000]);
    expect(atOnce(limiter, 'a')).toEqual([true, 0, 2, 1000]);
    expect(atOnce(limiter, 'b')).toEqual([true, 1, 1, 1000]);
    expect(atOnce(limiter, 'a')).toEqual([false, 0, 3, 1000]);
  });
});

describe('MemoryLimiter.countsAtOnce', () => {
  it('is true with the rate-limiter-flexible installed, so the middleware counts without a promise hop', () => {
    expect((memoryStore()(endpoint) as MemoryLimiter).countsAtOnce).toBe(true);
  });

  it('when false (a version without the storage it reads), the middleware counts through consume()', async () => {
    const limiters: MemoryLimiter[] = [];
    const store: Store = (e) => {
      const limiter = memoryStore()(e) as MemoryLimiter;
      Object.defineProperty(limiter, 'countsAtOnce', { value: false });
      jest.spyOn(limiter, 'consumeNow');
      limiters.push(limiter);
      return limiter;
    };
    const app = createApp({ listing: 'B', options: { store } });
    expect((await request(app).get('/v1/bots/1').expect(200)).headers['x-ratelimit-remaining']).toBe('1');
    await request(app).get('/v1/bots/1').expect(200);
    await request(app).get('/v1/bots/1').expect(429);
    for (const limiter of limiters) expect(limiter.consumeNow).not.toHaveBeenCalled();
  });
});
