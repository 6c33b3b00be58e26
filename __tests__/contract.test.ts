// The contract, end to end over HTTP: one suite, run for every store and both Express majors.
import request from 'supertest';
import { type EndpointRow, listingLimits } from '../lib';
import { createApp, expressVersions, pathOf } from './helpers/app';
import { BODY_429, expectLimitHolds, rowsOf } from './helpers/contract';
import { storeCases, T0, useFakeWindows } from './helpers/stores';

function send(app: Parameters<typeof request>[0], row: EndpointRow, path = pathOf(row)) {
  const agent = request(app);
  return row.method === 'POST' ? agent.post(path) : agent.get(path);
}

describe.each(storeCases)('$name', (store) => {
  beforeAll(() => store.start?.());
  afterAll(() => store.stop?.());

  describe.each(expressVersions)('%s', (_version, express) => {
    beforeEach(useFakeWindows);
    afterEach(() => jest.useRealTimers());
    const app = (options: Parameters<typeof createApp>[0] = {}) =>
      createApp({ express, ...options, options: { store: store.make(), ...options.options } });

    it.each([...rowsOf('A'), ...rowsOf('B')])(
      'listing %s, %s: exactly `limit` requests pass, then 429 with exact headers and body',
      async (listing, name, row) => {
        const server = app({ listing });
        await expectLimitHolds(
          row,
          store,
          () => send(server, row),
          (res) => expect(res.body.route).toBe(name),
        );
      },
    );

    it('ignores path parameters: different ids share one counter', async () => {
      const server = app({ listing: 'B' });
      await request(server).get('/v1/users/1').expect(200);
      await request(server).get('/v1/users/2').expect(200);
      const res = await request(server).get('/v1/users/3').expect(429);
      expect(res.headers['x-ratelimit-bucket']).toBe('GET /v1/users/:id');
    });

    it('gives every endpoint its own counter, GET and POST of one path included', async () => {
      const server = app({ listing: 'B' });
      await request(server).get('/v1/bots/7').expect(200);
      await request(server).get('/v1/bots/7').expect(200);
      await request(server).get('/v1/bots/7').expect(429);
      const post = await request(server).post('/v1/bots/7').expect(200);
      expect(post.headers['x-ratelimit-remaining']).toBe('14');
      const upvotes = await request(server).get('/v1/bots/7/upvotes').expect(200);
      expect(upvotes.headers['x-ratelimit-remaining']).toBe('1');
      const stats = await request(server).get('/v1/statistics').expect(200);
      expect(stats.headers['x-ratelimit-remaining']).toBe('4');
    });

    it('counts each Authorization value apart, and requests without one by IP', async () => {
      const server = app({ listing: 'B' });
      const get = (authorization?: string) => {
        const req = request(server).get('/v1/bots/1');
        return authorization === undefined ? req : req.set('Authorization', authorization);
      };
      await get('token-a').expect(200);
      await get('token-a').expect(200);
      await get('token-a').expect(429);
      await get('token-b').expect(200);
      await get('Token-a').expect(200);
      await get().expect(200);
      await get('').expect(200); // empty counts as absent: the IP's counter
      await get().expect(429);
    });

    it('starts a fixed window at the first request and opens the counter again when it ends', async () => {
      const server = app({ listing: 'B' });
      for (let i = 0; i < 25; i++) await request(server).get('/v1/bots').expect(200);
      await store.advance(30_000);
      const half = await request(server).get('/v1/bots').expect(429);
      expect(half.headers['retry-after']).toBe('30');
      expect(half.headers.ratelimit).toBe('"GET /v1/bots";r=0;t=30');
      await store.advance(30_000 - store.marginMs);
      const last = await request(server).get('/v1/bots').expect(429);
      expect(last.headers['retry-after']).toBe('1');
      expect(last.headers['x-ratelimit-reset-after']).toEqual(store.resetAfter(store.marginMs));
      expect(last.text).toBe(BODY_429(1));
      await store.advance(store.marginMs);
      const fresh = await request(server).get('/v1/bots').expect(200);
      expect(fresh.headers.ratelimit).toBe('"GET /v1/bots";r=24;t=60');
      expect(fresh.headers['x-ratelimit-reset']).toBe(String(T0 / 1000 + 120));
    });

    it('lets exactly `limit` of many simultaneous requests through', async () => {
      const server = app({ listing: 'B' }).listen(0);
      try {
        const statuses = await Promise.all(
          Array.from({ length: 75 }, () =>
            request(server)
              .get('/v1/bots')
              .then((res) => res.status),
          ),
        );
        expect(statuses.filter((s) => s === 200)).toHaveLength(25);
        expect(statuses.filter((s) => s === 429)).toHaveLength(50);
      } finally {
        server.close();
      }
    });

    it('tells later handlers about the request in req.rateLimit', async () => {
      const res = await request(app({ listing: 'A' }))
        .get('/v1/servers/9')
        .expect(200);
      expect(res.body.rateLimit).toEqual({
        endpoint: 'GET /v1/servers/:id',
        limit: 6,
        remaining: 5,
        resetTime: expect.any(String),
      });
      // Exact on a store that counts on the fake clock; on Redis's own clock, within its margin before the end.
      const resetTime = Date.parse(res.body.rateLimit.resetTime);
      expect(resetTime).toBeLessThanOrEqual(T0 + 15_000);
      expect(resetTime).toBeGreaterThan(T0 + 15_000 - store.marginMs);
    });

    if (!store.shared) {
      it('gives req.rateLimit.resetTime one value per window, however late in it a request comes', async () => {
        const server = app({ listing: 'A' });
        const first = await request(server).get('/v1/servers/1').expect(200);
        await store.advance(7);
        const second = await request(server).get('/v1/servers/2').expect(200);
        expect(second.body.rateLimit.resetTime).toBe(first.body.rateLimit.resetTime);
        expect(first.body.rateLimit.resetTime).toBe(new Date(T0 + 15_000).toISOString());
      });
    }

    it('matches like the Express router: any case, trailing slash, query string, HEAD as GET', async () => {
      const server = app({ listing: 'B' });
      const variants = [
        request(server).get('/v1/statistics'),
        request(server).get('/V1/STATISTICS/'),
        request(server).get('/v1/Statistics?page=2'),
        request(server).head('/v1/statistics'),
        request(server).get('/v1/statistics/?x=/v1/bots'),
      ];
      const remaining = [];
      for (const variant of variants) remaining.push((await variant).headers['x-ratelimit-remaining']);
      expect(remaining).toEqual(['4', '3', '2', '1', '0']);
      await request(server).get('/v1/STATISTICS').expect(429);
    });

    it('matches relative to the mount path', async () => {
      const server = app({ listing: 'B', mount: '/api' });
      const res = await request(server).get('/api/v1/bots/5').expect(200);
      expect(res.headers['x-ratelimit-bucket']).toBe('GET /v1/bots/:id');
      const outside = await request(server).get('/v1/bots/5').expect(404);
      expect(outside.headers['x-ratelimit-remaining']).toBeUndefined();
    });

    it('passes requests that match no row untouched: not counted, no headers', async () => {
      const server = app({ listing: 'B' });
      const unlimited = await request(server).get('/v1/unlimited').expect(200);
      const otherListing = await request(server).get('/v1/servers').expect(404);
      const otherMethod = await request(server).delete('/v1/bots/1').expect(404);
      for (const res of [unlimited, otherListing, otherMethod]) {
        expect(Object.keys(res.headers).filter((h) => /ratelimit|retry-after/.test(h))).toEqual([]);
      }
    });

    it('counts a request once when the same middleware is mounted twice on its path', async () => {
      const limiter = listingLimits('B', { store: store.make() });
      const server = express();
      server.use(limiter);
      server.use(limiter);
      server.get('/v1/bots/:id', (_req, res) => {
        res.json({});
      });
      const res = await request(server).get('/v1/bots/1').expect(200);
      expect(res.headers['x-ratelimit-remaining']).toBe('1');
    });

    it('groups IPv6 clients by /64 by default, and by the configured prefix', async () => {
      const setup = (a: { set(k: string, v: unknown): unknown }) => a.set('trust proxy', true);
      const get = (server: Parameters<typeof request>[0], ip: string) =>
        request(server).get('/v1/bots/1').set('X-Forwarded-For', ip);
      const by64 = app({ listing: 'B', setup });
      await get(by64, '2001:db8:1:2::1').expect(200);
      await get(by64, '2001:db8:1:2:ffff::9').expect(200);
      await get(by64, '2001:db8:1:2:abcd::').expect(429);
      await get(by64, '2001:db8:1:3::1').expect(200);

      const alone = app({ listing: 'B', setup, options: { ipv6Subnet: false } });
      await get(alone, '2001:db8:1:2::1').expect(200);
      await get(alone, '2001:db8:1:2::1').expect(200);
      await get(alone, '2001:db8:1:2::2').expect(200);

      const ipv4 = app({ listing: 'B', setup });
      await get(ipv4, '203.0.113.7').expect(200);
      await get(ipv4, '::ffff:203.0.113.7').expect(200);
      await get(ipv4, '203.0.113.7').expect(429);
      await get(ipv4, '203.0.113.8').expect(200);
    });
  });
});
