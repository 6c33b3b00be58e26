// Rules 5 and 6 of the contract and the ways around limiters: authenticate, bans, grants, shadow mode, hooks.
import request from 'supertest';
import type { BanInfo, LimitEvent, ListingLimitsMiddleware, ListingLimitsOptions } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { createApp } from './helpers/app';
import { storeCases, T0, useFakeClock } from './helpers/stores';

const BANNED = (until: number, retryAfter: number) =>
  `{"success":false,"code":403,"message":"You are banned from this API for circumventing its rate limits","bannedUntil":"${new Date(until).toISOString()}","retryAfter":${retryAfter}}`;

describe.each(storeCases)('$name', (store) => {
  beforeAll(() => store.start?.());
  afterAll(() => store.stop?.());
  beforeEach(useFakeClock);
  afterEach(() => jest.useRealTimers());
  /** The end of a window: exact for a store on the fake clock, within `marginMs` before it for one on a real clock. */
  const expectResetNear = (resetTime: Date | undefined, end: number) => {
    expect(resetTime?.getTime()).toBeLessThanOrEqual(end);
    expect(resetTime?.getTime()).toBeGreaterThan(end - store.marginMs);
  };
  const app = (options: ListingLimitsOptions = {}) =>
    createApp({ listing: 'B', options: { store: store.make(), ...options } });

  describe('authenticate', () => {
    it('counts tokens it refuses by IP, so invented tokens get no fresh counters', async () => {
      const calls: string[] = [];
      const server = app({
        authenticate: (token) => {
          calls.push(token);
          return token.startsWith('valid-');
        },
      });
      await request(server).get('/v1/bots/1').set('Authorization', 'invented-1').expect(200);
      await request(server).get('/v1/bots/1').set('Authorization', 'invented-2').expect(200);
      const third = await request(server).get('/v1/bots/1').set('Authorization', 'invented-3').expect(429);
      expect(third.headers['x-ratelimit-remaining']).toBe('0');
      await request(server).get('/v1/bots/1').expect(429); // the same IP counter
      await request(server).get('/v1/bots/1').set('Authorization', 'valid-a').expect(200);
      await request(server).get('/v1/bots/1').set('Authorization', 'valid-a').expect(200);
      await request(server).get('/v1/bots/1').set('Authorization', 'valid-a').expect(429);
      // Verdicts are cached: one call per distinct token.
      expect(calls).toEqual(['invented-1', 'invented-2', 'invented-3', 'valid-a']);
    });

    it("answers refused tokens with a JSON 401 under invalidToken: 'reject', uncounted", async () => {
      const server = app({ authenticate: async (token) => token === 'good', invalidToken: 'reject' });
      const res = await request(server).get('/v1/bots/1').set('Authorization', 'bad').expect(401);
      expect(res.text).toBe('{"success":false,"code":401,"message":"The Authorization token is not valid"}');
      expect(res.headers['x-ratelimit-remaining']).toBeUndefined();
      const good = await request(server).get('/v1/bots/1').set('Authorization', 'good').expect(200);
      expect(good.headers['x-ratelimit-remaining']).toBe('1');
      const anonymous = await request(server).get('/v1/bots/1').expect(200);
      expect(anonymous.headers['x-ratelimit-remaining']).toBe('1');
    });

    it('asks again once the cached verdict expires', async () => {
      let accepted = false;
      const server = app({ authenticate: () => accepted, invalidToken: 'reject', cacheMs: 5_000 });
      await request(server).get('/v1/bots').set('Authorization', 't').expect(401);
      accepted = true;
      await request(server).get('/v1/bots').set('Authorization', 't').expect(401);
      await store.advance(5_001);
      await request(server).get('/v1/bots').set('Authorization', 't').expect(200);
    });
  });

  describe('bans', () => {
    const ban = { after: 3, within: 60_000, duration: 600_000 };

    it('bans a client refused `after` times within `within`, with a 403 on every endpoint until it ends', async () => {
      const bans: BanInfo[] = [];
      const server = app({ ban, onBan: (info) => bans.push(info) });
      const get = (path: string) => request(server).get(path).set('Authorization', 'abuser');
      await get('/v1/bots/1').expect(200);
      await get('/v1/bots/1').expect(200);
      await get('/v1/bots/1').expect(429);
      await get('/v1/bots/1').expect(429);
      expect(bans).toEqual([]);
      await get('/v1/bots/1').expect(429); // the third refusal bans
      expect(bans).toEqual([
        { key: tokenKey('abuser'), kind: 'token', reason: 'limit', until: new Date(T0 + 600_000), shadow: false },
      ]);

      const banned = await get('/v1/statistics').expect(403);
      expect(banned.text).toBe(BANNED(T0 + 600_000, 600));
      expect(banned.headers['retry-after']).toBe('600');
      expect(banned.headers['content-type']).toBe('application/json; charset=utf-8');
      await request(server).post('/v1/bots/1').set('Authorization', 'abuser').expect(403);
      await request(server).get('/v1/bots/1').set('Authorization', 'someone-else').expect(200);

      await store.advance(599_000);
      const late = await get('/v1/bots').expect(403);
      expect(late.text).toBe(BANNED(T0 + 600_000, 1));
      await store.advance(1_000);
      await get('/v1/bots').expect(200);
    });

    if (store.shared) {
      it('holds a ban decided by one instance on every instance sharing the store, within a second', async () => {
        const shared = store.make();
        const one = createApp({ listing: 'B', options: { store: shared, ban: { ...ban, after: 1 } } });
        const two = createApp({ listing: 'B', options: { store: shared, ban: { ...ban, after: 1 } } });
        await request(one).get('/v1/bots/1').set('Authorization', 'spread').expect(200);
        await request(two).get('/v1/bots/1').set('Authorization', 'spread').expect(200);
        await request(one).get('/v1/bots/1').set('Authorization', 'spread').expect(429);
        await request(one).get('/v1/statistics').set('Authorization', 'spread').expect(403);
        // The other instance reads the ban with the store's next change read (every 250 ms): within a second.
        const decided = performance.now();
        let status = 0;
        while (status !== 403 && performance.now() - decided < 1000) {
          status = (await request(two).get('/v1/statistics').set('Authorization', 'spread')).status;
          if (status !== 403) await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(status).toBe(403);
        await request(two).get('/v1/bots/1').set('Authorization', 'spread').expect(403);
        for (const limiter of [one, two]) (limiter.locals.limiter as ListingLimitsMiddleware).close();
      });
    }

    it('tells onBan, the 403 body and Retry-After one instant, on every instance', async () => {
      jest.setSystemTime(T0 + 1_234);
      const bans: BanInfo[] = [];
      const shared = store.make();
      const options = { store: shared, ban: { ...ban, after: 1 }, onBan: (info: BanInfo) => bans.push(info) };
      const one = createApp({ listing: 'B', options });
      const get = (server = one) => request(server).get('/v1/bots/1').set('Authorization', 'instant');
      await get().expect(200);
      await get().expect(200);
      await get().expect(429);
      const until = new Date(T0 + 1_234 + 600_000).toISOString();
      expect(bans.map((info) => info.until.toISOString())).toEqual([until]);
      const banned = await get().expect(403);
      expect(JSON.parse(banned.text).bannedUntil).toBe(until);
      expect(banned.headers['retry-after']).toBe('600');
      if (store.shared) {
        const other = await get(createApp({ listing: 'B', options })).expect(403);
        expect(JSON.parse(other.text).bannedUntil).toBe(until);
      }
    });

    it('forgets refusals older than `within`', async () => {
      const server = app({ ban });
      const get = () => request(server).get('/v1/bots/1').set('Authorization', 'slow');
      for (const _ of [1, 2]) {
        await get().expect(200);
        await get().expect(200);
        await get().expect(429);
        await get().expect(429);
        await store.advance(61_000);
      }
      await get().expect(200);
    });

    it('unban(key) lifts a ban', async () => {
      let banned: BanInfo | undefined;
      const server = app({
        ban: { ...ban, after: 1 },
        onBan: (info) => {
          banned = info;
        },
      });
      const limiter = server.locals.limiter as ListingLimitsMiddleware;
      await request(server).get('/v1/bots/1').expect(200);
      await request(server).get('/v1/bots/1').expect(200);
      await request(server).get('/v1/bots/1').expect(429);
      expect(banned).toMatchObject({ key: 'ip:127.0.0.1', kind: 'ip', reason: 'limit' });
      await request(server).get('/v1/bots').expect(403);
      await expect(limiter.unban('ip:127.0.0.1')).resolves.toBe(true);
      await request(server).get('/v1/bots').expect(200);
      await expect(limiter.unban('ip:127.0.0.1')).resolves.toBe(false);
    });

    it('bans an IP that rotates through more tokens than tokensPerIp within tokensWithin', async () => {
      const bans: BanInfo[] = [];
      const server = app({ ban: { ...ban, tokensPerIp: 3, tokensWithin: 60_000 }, onBan: (info) => bans.push(info) });
      for (const token of ['a', 'b', 'c', 'a', 'b', 'c']) {
        await request(server).get('/v1/bots').set('Authorization', token).expect(200);
      }
      expect(bans).toEqual([]);
      // The token that is one too many is itself refused: it bans the address.
      const refused = await request(server).get('/v1/bots').set('Authorization', 'd').expect(403);
      expect(refused.text).toBe(BANNED(T0 + 600_000, 600));
      expect(bans).toEqual([
        { key: 'ip:127.0.0.1', kind: 'ip', reason: 'token-rotation', until: new Date(T0 + 600_000), shadow: false },
      ]);
      // Every request from the address is banned now, with or without a token.
      await request(server).get('/v1/bots').set('Authorization', 'a').expect(403);
      await request(server).get('/v1/bots').expect(403);
    });
  });

  describe('grants', () => {
    it.each([
      ['a map by token', { 'Bot partner': { multiplier: 10 } }],
      [
        'a lookup function',
        async ({ token }: { token?: string }) => (token === 'Bot partner' ? { multiplier: 10 } : undefined),
      ],
    ] as const)('multiplies the limits of a granted client (%s), on counters of its own', async (_kind, grants) => {
      const server = app({ grants: grants as ListingLimitsOptions['grants'] });
      const partner = () => request(server).get('/v1/bots/1').set('Authorization', 'Bot partner');
      const first = await partner().expect(200);
      expect(first.headers['ratelimit-policy']).toBe('"GET /v1/bots/:id (x10)";q=20;w=1');
      expect(first.headers.ratelimit).toBe('"GET /v1/bots/:id (x10)";r=19;t=1');
      expect(first.headers['x-ratelimit-limit']).toBe('20');
      for (let i = 2; i <= 20; i++) await partner().expect(200);
      await partner().expect(429);
      // The partner's counter is not the default one.
      const other = await request(server).get('/v1/bots/1').set('Authorization', 'Bot other').expect(200);
      expect(other.headers['x-ratelimit-limit']).toBe('2');
    });

    it('matches a grant row to its table row as duplicate rows are found: case and parameter names aside', async () => {
      const server = app({
        grants: { 'Bot p': { rows: [{ method: 'GET', path: '/V1/Bots/:botId', limit: 5, windowMs: 1000 }] } },
      });
      const res = await request(server).get('/v1/bots/1').set('Authorization', 'Bot p').expect(200);
      expect(res.headers['x-ratelimit-limit']).toBe('5');
      expect(res.headers['x-ratelimit-bucket']).toBe('GET /v1/bots/:id (5/1s)');
    });

    it('replaces the rows a grant names and keeps the others', async () => {
      const server = app({
        grants: { 'Bot dashboard': { rows: [{ method: 'GET', path: '/v1/bots', limit: 100, windowMs: 60_000 }] } },
      });
      const bots = await request(server).get('/v1/bots').set('Authorization', 'Bot dashboard').expect(200);
      expect(bots.headers['ratelimit-policy']).toBe('"GET /v1/bots (100/60s)";q=100;w=60');
      const one = await request(server).get('/v1/bots/1').set('Authorization', 'Bot dashboard').expect(200);
      expect(one.headers['ratelimit-policy']).toBe('"GET /v1/bots/:id";q=2;w=1');
    });

    it("lets an 'unlimited' client through uncounted, by IP", async () => {
      const server = app({ grants: { '127.0.0.1': 'unlimited' } });
      for (let i = 0; i < 5; i++) {
        const res = await request(server).get('/v1/bots/1').expect(200);
        expect(res.headers['x-ratelimit-limit']).toBeUndefined();
      }
      await request(server).get('/v1/bots/1').set('Authorization', 'someone').expect(200);
    });

    it('caches lookups for cacheMs', async () => {
      let calls = 0;
      const server = app({
        cacheMs: 10_000,
        grants: () => {
          calls++;
          return undefined;
        },
      });
      await request(server).get('/v1/bots').expect(200);
      await request(server).get('/v1/bots').expect(200);
      expect(calls).toBe(1);
      await store.advance(10_001);
      await request(server).get('/v1/bots').expect(200);
      expect(calls).toBe(2);
    });
  });

  describe('shadow mode and onLimit', () => {
    it('counts and sets headers but refuses nothing, reporting what it would have refused', async () => {
      const events: LimitEvent[] = [];
      const server = app({
        mode: 'shadow',
        onLimit: (event) => events.push(event),
        ban: { after: 1, within: 60_000, duration: 60_000 },
      });
      await request(server).get('/v1/bots/1').expect(200);
      await request(server).get('/v1/bots/1').expect(200);
      for (let i = 0; i < 3; i++) {
        const res = await request(server).get('/v1/bots/1').expect(200);
        expect(res.headers['x-ratelimit-remaining']).toBe('0');
        expect(res.headers['retry-after']).toBeUndefined();
      }
      expect(events).toHaveLength(3);
      expectResetNear(events[0]?.resetTime, T0 + 1000);
      expect(events[0]).toEqual({
        endpoint: 'GET /v1/bots/:id',
        limit: 2,
        remaining: 0,
        resetTime: expect.any(Date),
        retryAfter: 1,
        client: { kind: 'ip', key: 'ip:127.0.0.1' },
        shadow: true,
      });
    });

    it('calls onLimit on every refusal when enforcing', async () => {
      const events: LimitEvent[] = [];
      const server = app({ onLimit: (event) => events.push(event) });
      await request(server).get('/v1/statistics').set('Authorization', 'x').expect(200);
      for (let i = 0; i < 4; i++) await request(server).get('/v1/statistics').set('Authorization', 'x').expect(200);
      await request(server).get('/v1/statistics').set('Authorization', 'x').expect(429);
      expectResetNear(events[0]?.resetTime, T0 + 1000);
      expect(events).toEqual([
        {
          endpoint: 'GET /v1/statistics',
          limit: 5,
          remaining: 0,
          resetTime: expect.any(Date),
          retryAfter: 1,
          client: { kind: 'token', key: tokenKey('x') },
          shadow: false,
        },
      ]);
    });
  });
});
