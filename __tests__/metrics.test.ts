// Option `metrics`: prom-client metrics of what the middleware did, exact for a scripted sequence of requests.
import type { Express } from 'express';
import { Registry } from 'prom-client';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import request from 'supertest';
import {
  type EndpointRow,
  type ListingLimitsMiddleware,
  type ListingLimitsOptions,
  listingLimits,
  redisStore,
  StoreUnavailableError,
} from '../lib';
import { createApp } from './helpers/app';
import { describeRedis, redisForBlock } from './helpers/redis';
import { useFakeClock } from './helpers/stores';

const rows: readonly EndpointRow[] = [{ method: 'GET', path: '/v1/things', limit: 2, windowMs: 60_000 }];

/** The lines of `name` in the registry's text, without HELP and TYPE. */
async function lines(registry: Registry, name: string): Promise<string[]> {
  const text = await registry.metrics();
  return text.split('\n').filter((line) => line.startsWith(name));
}

const requestsOf = (counts: Partial<Record<string, number>>, endpoint = 'GET /v1/things') =>
  ['allowed', 'limited', 'banned', 'shadow_limited', 'store_unavailable'].map(
    (outcome) => `listing_limits_requests_total{endpoint="${endpoint}",outcome="${outcome}"} ${counts[outcome] ?? 0}`,
  );

let apps: Express[] = [];
function app(options: ListingLimitsOptions): Express {
  const made = createApp({ listing: rows, options });
  apps.push(made);
  return made;
}
beforeEach(useFakeClock);
afterEach(() => {
  for (const made of apps) (made.locals.limiter as ListingLimitsMiddleware).close();
  apps = [];
  jest.useRealTimers();
});

describe('metrics on a prom-client Registry', () => {
  it('counts a scripted sequence exactly, by endpoint of the table and outcome, with no token or address in a label', async () => {
    const registry = new Registry();
    const a = app({
      metrics: registry,
      ban: { after: 1, within: 60_000, duration: 600_000 },
      grants: { 'Bot vip': 'unlimited' },
    });
    const limiter = a.locals.limiter as ListingLimitsMiddleware;
    for (const status of [200, 200, 429, 403]) {
      await request(a).get('/v1/things').set('Authorization', 'Bot cheater').expect(status);
    }
    await request(a).get('/v1/unlimited').set('Authorization', 'Bot cheater').expect(403);
    await request(a).get('/v1/things').expect(200);
    await request(a).get('/v1/unlimited').expect(200);
    await request(a).get('/v1/things').set('Authorization', 'Bot vip').expect(200);
    await limiter.grant({ token: 'Bot partner' }, { multiplier: 10 });
    await request(a).get('/v1/things').set('Authorization', 'Bot partner').expect(200);

    expect(await lines(registry, 'listing_limits_requests_total')).toEqual([
      ...requestsOf({ allowed: 5, limited: 1, banned: 1 }),
      ...requestsOf({ banned: 1 }, '(none)'),
    ]);
    expect(await lines(registry, 'listing_limits_active_')).toEqual([
      'listing_limits_active_bans 1',
      'listing_limits_active_grants 1',
    ]);
    expect(await lines(registry, 'listing_limits_refusal_cache_hits_total')).toEqual([
      'listing_limits_refusal_cache_hits_total 0',
    ]);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE listing_limits_requests_total counter');
    expect(text).toContain('# TYPE listing_limits_store_duration_seconds histogram');
    expect(text.match(/Bot|127\.0\.0\.1|t:|ip:/g)).toBeNull();
  });

  it('counts would-be refusals of shadow mode as shadow_limited', async () => {
    const registry = new Registry();
    const a = app({ metrics: registry, mode: 'shadow' });
    for (let i = 0; i < 3; i++) await request(a).get('/v1/things').expect(200);
    expect(await lines(registry, 'listing_limits_requests_total')).toEqual(
      requestsOf({ allowed: 2, shadow_limited: 1 }),
    );
  });

  it('counts the requests a failing store could not count, and times the calls that went to the store', async () => {
    const registry = new Registry();
    let fail = false;
    const store = (counter: { limit: number }) => {
      const limiter = new RateLimiterMemory({ points: counter.limit, duration: 60 });
      const consume = limiter.consume.bind(limiter);
      limiter.consume = (...args) => (fail ? Promise.reject(new StoreUnavailableError('closed')) : consume(...args));
      return limiter;
    };
    const a = app({ metrics: registry, store });
    await request(a).get('/v1/things').expect(200);
    fail = true;
    await request(a).get('/v1/things').expect(503);
    expect(await lines(registry, 'listing_limits_requests_total')).toEqual(
      requestsOf({ allowed: 1, store_unavailable: 1 }),
    );
    expect(await lines(registry, 'listing_limits_store_duration_seconds_count')).toEqual([
      'listing_limits_store_duration_seconds_count 2',
    ]);
    expect(await lines(registry, 'listing_limits_store_duration_seconds_bucket{le="+Inf"}')).toEqual([
      'listing_limits_store_duration_seconds_bucket{le="+Inf"} 2',
    ]);
  });

  it.each([
    { name: 'not a Registry', metrics: {}, message: /options\.metrics must be a prom-client Registry/ },
    { name: 'a string', metrics: 'prometheus', message: /options\.metrics must be a prom-client Registry/ },
  ])('refuses $name', ({ metrics, message }) => {
    expect(() => listingLimits(rows, { metrics } as unknown as ListingLimitsOptions)).toThrow(message);
  });

  it('refuses a Registry that already has the metrics of another middleware, naming the option', () => {
    const registry = new Registry();
    listingLimits(rows, { metrics: registry }).close();
    expect(() => listingLimits(rows, { metrics: registry })).toThrow(
      expect.objectContaining({ name: 'ListingLimitsError', code: 'ERR_INVALID_OPTION', field: 'options.metrics' }),
    );
  });

  it('registers nothing when another option fails', () => {
    const registry = new Registry();
    expect(() => listingLimits(rows, { metrics: registry, cacheMs: -1 })).toThrow(/options\.cacheMs/);
    expect(registry.getMetricsAsArray()).toEqual([]);
  });
});

describeRedis('metrics with the Redis store', () => {
  const shared = redisForBlock();

  it('counts refusals answered from the remembered refusals, and one latency per script run', async () => {
    const registry = new Registry();
    const store = redisStore(shared.client, { prefix: `metrics-${process.pid}`, timeoutMs: 5000, onFailure: 'closed' });
    const a = app({ metrics: registry, store });
    for (const status of [200, 200, 429, 429, 429]) {
      await request(a).get('/v1/things').set('Authorization', 'Bot busy').expect(status);
    }
    expect(await lines(registry, 'listing_limits_requests_total')).toEqual(requestsOf({ allowed: 2, limited: 3 }));
    expect(await lines(registry, 'listing_limits_refusal_cache_hits_total')).toEqual([
      'listing_limits_refusal_cache_hits_total 2',
    ]);
    expect(await lines(registry, 'listing_limits_store_duration_seconds_count')).toEqual([
      'listing_limits_store_duration_seconds_count 3',
    ]);
  });
});
