// The contract, end to end over HTTP: one suite, run for every store and both Express majors.
import { once } from 'node:events';
import { Agent, createServer, get as httpGet } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';
import request from 'supertest';
import { type EndpointRow, type ListingLimitsOptions, listingLimits } from '../lib';
import { partitionKey } from '../lib/contract/headers';
import { tokenKey } from '../lib/contract/keys';
import { closeAfterTest, createApp, expressVersions, pathOf } from './helpers/app';
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
    /** A middleware on a store of this block's, closed after the test. */
    const limits = (listing: 'B' | readonly EndpointRow[] = 'B', options: ListingLimitsOptions = {}) =>
      closeAfterTest(listingLimits(listing, { store: store.make(), ...options }));

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
      const limiter = limits();
      const server = express();
      server.use(limiter);
      server.use(limiter);
      server.get('/v1/bots/:id', (_req, res) => {
        res.json({});
      });
      const res = await request(server).get('/v1/bots/1').expect(200);
      expect(res.headers['x-ratelimit-remaining']).toBe('1');
    });

    describe('req.rateLimit', () => {
      /** What a handler sees of `req.rateLimit`, as JSON, with how it reads. */
      const reader: RequestHandler = (req, res) => {
        const info = req.rateLimit;
        res.json({
          json: JSON.stringify(info) ?? null,
          keys: info ? Object.keys(info) : null,
          date: info?.resetTime instanceof Date,
          same: info === req.rateLimit,
          has: 'rateLimit' in req,
          ...(res.locals.before ? { before: res.locals.before } : {}),
        });
      };
      /** `{ endpoint, limit, remaining, resetTime }` as JSON: exact on a store that counts on the fake clock. */
      const expectInfo = (json: string, endpoint: string, limit: number, remaining: number, windowMs: number) => {
        const info = JSON.parse(json) as { resetTime: string };
        expect(Object.keys(info)).toEqual(['endpoint', 'limit', 'remaining', 'resetTime']);
        expect(info).toEqual({ endpoint, limit, remaining, resetTime: expect.any(String) });
        if (!store.shared) expect(info.resetTime).toBe(new Date(T0 + windowMs).toISOString());
        else expect(Date.parse(info.resetTime)).toBeGreaterThan(T0 + windowMs - store.marginMs);
      };

      it('is one object with its documented fields, read in any later handler, in JSON and by `in`', async () => {
        const server = express();
        server.use(limits());
        server.use((req, res, next) => {
          res.locals.before = { remaining: req.rateLimit?.remaining ?? null };
          next();
        });
        server.get('/v1/bots/:id', reader);
        const res = await request(server).get('/v1/bots/1').expect(200);
        expect(res.body).toMatchObject({
          keys: ['endpoint', 'limit', 'remaining', 'resetTime'],
          date: true,
          same: true,
          has: true,
          before: { remaining: 1 },
        });
        expectInfo(res.body.json, 'GET /v1/bots/:id', 2, 1, 1000);
        const last = await request(server).get('/v1/bots/1').expect(200);
        expectInfo(last.body.json, 'GET /v1/bots/:id', 2, 0, 1000);
      });

      it('is undefined on a request the limiter does not count: no row, or skipped', async () => {
        const server = express();
        server.use(limits('B', { skip: (req) => req.query.skip === '1' }));
        server.get('/v1/bots/:id', reader);
        server.get('/v1/elsewhere', reader);
        for (const path of ['/v1/elsewhere', '/v1/bots/1?skip=1']) {
          const res = await request(server).get(path).expect(200);
          expect(res.body).toMatchObject({ json: null, keys: null });
        }
      });

      it('holds after the request leaves the sub-app the limiter is mounted in', async () => {
        const server = express();
        const sub = express();
        sub.use(limits());
        server.use(sub);
        server.get('/v1/bots/:id', reader);
        const res = await request(server).get('/v1/bots/1').expect(200);
        expectInfo(res.body.json, 'GET /v1/bots/:id', 2, 1, 1000);
      });

      it("is the last answer's: another limiter's value before it is replaced, an assignment after it holds", async () => {
        const erl = () =>
          rateLimit({ windowMs: 60_000, limit: 100, keyGenerator: () => 'k', validate: false, legacyHeaders: false });
        const ours = express();
        ours.use(erl(), limits());
        ours.get('/v1/bots/:id', reader);
        const res = await request(ours).get('/v1/bots/1').expect(200);
        expectInfo(res.body.json, 'GET /v1/bots/:id', 2, 1, 1000);

        const theirs = express();
        theirs.use(limits(), erl());
        theirs.get('/v1/bots/:id', reader);
        const after = await request(theirs).get('/v1/bots/1').expect(200);
        expect(JSON.parse(after.body.json)).toMatchObject({ limit: 100, used: 1, remaining: 99 });

        const assigned = express();
        assigned.use(limits(), (req, _res, next) => {
          req.rateLimit = { endpoint: 'mine', limit: 1, remaining: 0, resetTime: new Date(0) };
          next();
        });
        assigned.get('/v1/bots/:id', reader);
        const mine = await request(assigned).get('/v1/bots/1').expect(200);
        expect(mine.body.json).toBe(
          '{"endpoint":"mine","limit":1,"remaining":0,"resetTime":"1970-01-01T00:00:00.000Z"}',
        );
      });

      it('counts a request once per limiter, mounted twice around another one; the last to count gives it', async () => {
        const twice = limits();
        const other = limits([{ method: 'GET', path: '/v1/bots/:id', limit: 5, windowMs: 60_000 }]);
        const server = express();
        server.use(twice, other, twice);
        server.get('/v1/bots/:id', reader);
        const first = await request(server).get('/v1/bots/1').expect(200);
        expectInfo(first.body.json, 'GET /v1/bots/:id', 5, 4, 60_000);
        expect(first.headers['ratelimit']).toBe('"GET /v1/bots/:id";r=1;t=1, "GET /v1/bots/:id";r=4;t=60');
        await request(server).get('/v1/bots/1').expect(200);
        await request(server).get('/v1/bots/1').expect(429);
      });
      it('without Express (node:http): is set on the request itself, and a request called through twice counts once', async () => {
        const limiter = limits();
        const server = createServer((req, res) => {
          const plain = Object.assign(req, { path: new URL(req.url ?? '/', 'http://x').pathname }) as typeof req & {
            path: string;
            rateLimit?: unknown;
          };
          const answer = () =>
            res.end(JSON.stringify({ own: Object.hasOwn(plain, 'rateLimit'), rateLimit: plain.rateLimit ?? null }));
          limiter(plain as never, res as never, () => limiter(plain as never, res as never, answer));
        });
        const get = () => request(server).get('/v1/bots/1').set('Authorization', 'Bot plain');
        const first = await get().expect(200);
        expect(first.headers['x-ratelimit-remaining']).toBe('1');
        expect(JSON.parse(first.text)).toMatchObject({
          own: true,
          rateLimit: { endpoint: 'GET /v1/bots/:id', remaining: 1 },
        });
        await get().expect(200);
        await get().expect(429);
      });
    });

    describe.each<[string, ListingLimitsOptions['headers'], string, string]>([
      ['true', true, '"GET /v1/bots/:id";q=2;w=1', '"GET /v1/bots/:id";r=1;t=1'],
      ['draft-10', 'draft-10', '"GET /v1/bots/:id";q=2;w=1', '"GET /v1/bots/:id";r=1;t=1'],
      [
        'draft-8',
        'draft-8',
        `"GET /v1/bots/:id"; q=2; w=1; pk=:${partitionKey(tokenKey('Bot x'))}:`,
        '"GET /v1/bots/:id"; r=1; t=1',
      ],
      ['draft-7', 'draft-7', '2;w=1', 'limit=2, remaining=1, reset=1'],
    ])('headers: %s', (_name, headers, policy, ratelimit) => {
      it('writes exactly these header lines, in this order, allowed and refused', async () => {
        const server = app({ listing: 'B', options: { headers } });
        const lines = (res: request.Response) => {
          const raw = (res as unknown as { res: { rawHeaders: string[] } }).res.rawHeaders;
          const pairs: string[][] = [];
          for (let i = 0; i < raw.length; i += 2) pairs.push([raw[i] as string, raw[i + 1] as string]);
          return pairs.filter(([name]) => /ratelimit|retry-after/i.test(name as string));
        };
        const legacy = (remaining: number) => [
          ['X-RateLimit-Limit', '2'],
          ['X-RateLimit-Remaining', String(remaining)],
          ['X-RateLimit-Reset', String(T0 / 1000 + 1)],
          ['X-RateLimit-Reset-After', store.resetAfter(1000)],
          ['X-RateLimit-Bucket', 'GET /v1/bots/:id'],
        ];
        const get = () => request(server).get('/v1/bots/7').set('Authorization', 'Bot x');
        const allowed = await get().expect(200);
        expect(lines(allowed)).toEqual([['RateLimit-Policy', policy], ['RateLimit', ratelimit], ...legacy(1)]);
        await get().expect(200);
        const refused = await get().expect(429);
        const refusedItem = ratelimit.replace(/1(?=[;,])/, '0');
        expect(lines(refused)).toEqual([
          ['RateLimit-Policy', policy],
          ['RateLimit', refusedItem],
          ...legacy(0),
          ['Retry-After', '1'],
        ]);
      });
    });

    it('writes no rate-limit header with `headers: false`, and still sets req.rateLimit', async () => {
      const server = app({ listing: 'B', options: { headers: false } });
      const res = await request(server).get('/v1/bots/7').expect(200);
      expect(Object.keys(res.headers).filter((h) => /ratelimit|retry-after/.test(h))).toEqual([]);
      expect(res.body.rateLimit).toMatchObject({ endpoint: 'GET /v1/bots/:id', limit: 2, remaining: 1 });
      const refused = await request(server).get('/v1/bots/7').expect(200);
      expect(refused.body.rateLimit).toMatchObject({ remaining: 0 });
      const over = await request(server).get('/v1/bots/7').expect(429);
      expect(Object.keys(over.headers).filter((h) => /ratelimit|retry-after/.test(h))).toEqual(['retry-after']);
    });

    it.each<[string, (a: ReturnType<typeof express>) => void]>([
      ["trust proxy off: the socket's address", () => {}],
      ['trust proxy on: X-Forwarded-For', (a) => a.set('trust proxy', true)],
      [
        "an app's own req.ip",
        (a) =>
          Object.defineProperty(a.request, 'ip', {
            get(this: { get(name: string): string | undefined }) {
              return this.get('x-client-ip');
            },
          }),
      ],
    ])('bans a client of a token by its address as req.ip gives it, %s', async (name, setup) => {
      const off = name.startsWith('trust proxy off');
      const server = app({ listing: 'B', setup });
      const limiter = server.locals.limiter as ReturnType<typeof listingLimits>;
      const get = (ip: string) =>
        request(server)
          .get('/v1/bots/1')
          .set('Authorization', `Bot ${ip}`)
          .set('X-Forwarded-For', ip)
          .set('X-Client-IP', ip);
      await get('203.0.113.9').expect(200);
      await limiter.ban({ ip: off ? '127.0.0.1' : '203.0.113.9' }, { duration: 60_000 });
      await get('203.0.113.9').expect(403);
      await get('203.0.113.8').expect(off ? 403 : 200);
      limiter.close();
    });

    it("on one kept-alive connection: an address ban holds and lifts, and the address follows 'trust proxy'", async () => {
      const express = app({ listing: 'B' });
      const limiter = express.locals.limiter as ReturnType<typeof listingLimits>;
      const server = express.listen(0, '127.0.0.1');
      await once(server, 'listening');
      let connections = 0;
      server.on('connection', () => connections++);
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      let tokens = 0; // a token each, so that no request meets the endpoint's limit
      const get = (forwardedFor: string) =>
        new Promise<number | undefined>((resolve, reject) => {
          const headers = { authorization: `Bot kept-alive-${++tokens}`, 'x-forwarded-for': forwardedFor };
          const { port } = server.address() as AddressInfo;
          httpGet({ host: '127.0.0.1', port, path: '/v1/bots/1', agent, headers }, (res) => {
            res.resume().on('end', () => resolve(res.statusCode));
          }).on('error', reject);
        });
      try {
        expect(await get('203.0.113.9')).toBe(200);
        await limiter.ban({ ip: '127.0.0.1' }, { duration: 60_000 });
        expect(await get('203.0.113.9')).toBe(403);
        await limiter.unban({ ip: '127.0.0.1' });
        expect(await get('203.0.113.9')).toBe(200);
        express.set('trust proxy', true);
        await limiter.ban({ ip: '203.0.113.9' }, { duration: 60_000 });
        expect([await get('203.0.113.9'), await get('203.0.113.8')]).toEqual([403, 200]);
        expect(connections).toBe(1);
      } finally {
        agent.destroy();
        server.close();
        limiter.close();
      }
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
