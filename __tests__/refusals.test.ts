// A store's refusals remembered until the window ends: no command for a client already over its limit, bounded.
import { RateLimiterMemory } from 'rate-limiter-flexible';
import request from 'supertest';
import { type EndpointRow, redisStore, type Store } from '../lib';
import { partsOf } from '../lib/stores/rlf';
import { REMEMBERED_REFUSALS, Resilient } from '../lib/stores/resilient';
import type { Count } from '../lib/stores/store';
import { createApp } from './helpers/app';
import { describeRedis, redisForBlock, scriptRuns } from './helpers/redis';
import { T0, useFakeClock } from './helpers/stores';

describeRedis('refusals remembered by an instance of the Redis store', () => {
  const shared = redisForBlock();
  beforeEach(useFakeClock);
  afterEach(() => jest.useRealTimers());

  const row: EndpointRow = { method: 'GET', path: '/v1/things/:id', limit: 2, windowMs: 60_000 };
  let prefixes = 0;

  it('answer a client over its limit without a command to Redis, with the same 429 and headers, until the window ends', async () => {
    const store = redisStore(shared.client, {
      prefix: `refusals-${process.pid}-${++prefixes}`,
      timeoutMs: 10_000,
      onFailure: 'closed',
    });
    const app = createApp({ listing: [row], options: { store } });
    const get = () => request(app).get('/v1/things/1').set('Authorization', 'Bot over');
    await get().expect(200);
    await get().expect(200);
    const fromRedis = await get().expect(429);
    const before = await scriptRuns(shared.client);
    jest.setSystemTime(T0 + 30_000);
    const remembered = await get().expect(429);
    expect(await scriptRuns(shared.client)).toBe(before);
    expect(remembered.text).toBe(fromRedis.text.replace('"retryAfter":60', '"retryAfter":30'));
    expect(remembered.headers.ratelimit).toBe('"GET /v1/things/:id";r=0;t=30');
    expect(remembered.headers['x-ratelimit-remaining']).toBe('0');
    expect(remembered.headers['retry-after']).toBe('30');
    // Another client, and another endpoint of the same client, still go to Redis.
    await request(app).get('/v1/things/1').set('Authorization', 'Bot other').expect(200);
    expect(await scriptRuns(shared.client)).toBe(before + 1);
  });

  it('forget a refusal when its window ends, and ask Redis again', async () => {
    const prefix = `refusals-${process.pid}-${++prefixes}`;
    const store = redisStore(shared.client, { prefix, timeoutMs: 10_000, onFailure: 'closed' });
    const app = createApp({ listing: [row], options: { store } });
    const get = () => request(app).get('/v1/things/1').set('Authorization', 'Bot window');
    await get().expect(200);
    await get().expect(200);
    await get().expect(429);
    jest.setSystemTime(T0 + 30_000);
    await get().expect(429);
    // The window ends: Redis, on its own clock, drops the key then; the fake clock moves to the same moment.
    for (const key of await shared.client.keys(`${prefix}:*`)) await shared.client.del(key);
    jest.setSystemTime(T0 + 60_000);
    const before = await scriptRuns(shared.client);
    const fresh = await get().expect(200);
    expect(fresh.headers['x-ratelimit-remaining']).toBe('1');
    expect(await scriptRuns(shared.client)).toBe(before + 1);
  });
});

describe('the refusals a counter remembers', () => {
  it(`are at most ${REMEMBERED_REFUSALS}, the oldest forgotten first, under a flood of distinct clients`, async () => {
    // Any asynchronous rate-limiter-flexible limiter is such a store: here its memory limiter.
    const store: Store = (spec) => new RateLimiterMemory({ points: spec.limit, duration: spec.windowMs / 1000 });
    const spec = { name: 'flood', window: 'fixed' as const, limits: [{ limit: 1, windowMs: 60_000 }] };
    const counter = new Resilient(spec, partsOf(store).counter(spec), undefined, undefined);
    const clients = REMEMBERED_REFUSALS + 500;
    for (let i = 0; i < clients; i++) {
      await counter.hit(`client-${i}`);
      const [refused] = (await counter.hit(`client-${i}`)) as [Count];
      expect(refused.count).toBe(2);
      expect(counter.refusals).toBeLessThanOrEqual(REMEMBERED_REFUSALS);
    }
    expect(counter.refusals).toBe(REMEMBERED_REFUSALS);
    // The newest is answered at once; the oldest was forgotten and goes to the store again (which refuses it).
    expect(counter.hit(`client-${clients - 1}`)).not.toBeInstanceOf(Promise);
    const oldest = counter.hit('client-0');
    expect(oldest).toBeInstanceOf(Promise);
    await expect(oldest).resolves.toMatchObject([{ count: 3 }]);
  });
});
