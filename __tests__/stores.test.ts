// The memory store: one MemoryLimiter per endpoint, which the middleware counts with synchronously.
import request from 'supertest';
import { memoryStore, type Store } from '../lib';
import { MemoryLimiter } from '../lib/stores/memory/limiter';
import { createApp } from './helpers/app';
import { useFakeClock, useFakeWindows } from './helpers/stores';

const endpoint = { method: 'GET', path: '/v1/bots/:id', name: 'GET /v1/bots/:id', limit: 2, windowMs: 1000 };

describe('memoryStore', () => {
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());

  it('gives each endpoint a MemoryLimiter with its limit and window, and no key prefix', () => {
    const limiter = memoryStore()(endpoint);
    expect(limiter).toBeInstanceOf(MemoryLimiter);
    expect(limiter.points).toBe(2);
    expect(limiter.duration).toBe(1);
    expect(limiter.getKey('a')).toBe('a');
  });

  it('gives each endpoint counters of its own', async () => {
    const store = memoryStore();
    const first = store(endpoint) as MemoryLimiter;
    const second = store({ ...endpoint, name: 'GET /v1/bots' });
    first.countNow('a');
    first.countNow('a');
    expect((await second.consume('a')).consumedPoints).toBe(1);
  });

  it('keeps clients apart', () => {
    const limiter = memoryStore()(endpoint) as MemoryLimiter;
    const count = (key: string) => ({ ...limiter.countNow(key) });
    expect(count('a').count).toBe(1);
    expect(count('a').count).toBe(2);
    expect(count('b').count).toBe(1);
    expect(count('a').count).toBe(3);
  });
});

describe('the middleware with the memory store', () => {
  beforeEach(useFakeClock);
  afterEach(() => jest.useRealTimers());

  it('counts with countNow(), without a promise, and answers as consume() would', async () => {
    const limiters: MemoryLimiter[] = [];
    const store: Store = (e) => {
      const limiter = memoryStore()(e) as MemoryLimiter;
      jest.spyOn(limiter, 'countNow');
      jest.spyOn(limiter, 'consume');
      limiters.push(limiter);
      return limiter;
    };
    const app = createApp({ listing: 'B', options: { store } });
    const first = await request(app).get('/v1/bots/1').expect(200);
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    expect(first.headers['x-ratelimit-reset-after']).toBe('1');
    await request(app).get('/v1/bots/1').expect(200);
    const limited = await request(app).get('/v1/bots/1').expect(429);
    expect(limited.headers['retry-after']).toBe('1');
    expect(limiters.reduce((calls, l) => calls + jest.mocked(l.countNow).mock.calls.length, 0)).toBe(3);
    for (const limiter of limiters) expect(limiter.consume).not.toHaveBeenCalled();
  });
});
