// Attacks on the limiter, each reproduced over real HTTP against every store, with the answers it must give.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { runInThisContext } from 'node:vm';
import type { ErrorRequestHandler, Request } from 'express';
import type Redis from 'ioredis';
import request from 'supertest';
import * as lib from '../lib';
import {
  type BanInfo,
  type EndpointRow,
  ListingLimitsError,
  type ListingLimitsMiddleware,
  type ListingLimitsOptions,
  type ListingName,
  listingLimits,
  redisStore,
} from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { closeAfterTest, createApp } from './helpers/app';
import { type PipelinedRequest, pipeline, tally } from './helpers/pipeline';
import { describeRedisServer, ioredisClient, RedisServer } from './helpers/redis';
import { serverPerTest } from './helpers/serve';
import { storeCases, T0, useFakeClock } from './helpers/stores';

/** Options as fixed: `onError` receives the errors of `onLimit` and `onBan`. */
type Options = ListingLimitsOptions & { onError?: (error: unknown, req: Request) => void };

const DAY = 86_400_000;
const MAX_DURATION_MS = 31_536_000_000;
const BOT = '/v1/bots/1';
const LIMITED = (retryAfter: number) =>
  `{"success":false,"code":429,"message":"You are sending too many requests, please slow down","retryAfter":${retryAfter}}`;
const BANNED = (until: number, retryAfter: number) =>
  `{"success":false,"code":403,"message":"You are banned from this API for circumventing its rate limits","bannedUntil":"${new Date(until).toISOString()}","retryAfter":${retryAfter}}`;
const UNAVAILABLE =
  '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}';
/** What the test app's route answers a request that passed uncounted. */
const UNCOUNTED = '{"route":"GET /v1/bots/:id","rateLimit":null}';

/** The app's error handler in these tests: a 500 with the error's message, short enough to read in a failed assertion. */
const answerErrors: ErrorRequestHandler = (error: Error, _req, res, _next) => {
  res.status(500).json({ error: error.message });
};

/** Bans for token rotation that refusals alone never trigger. */
const rotation = { after: 1000, within: 60_000, duration: 600_000, tokensPerIp: 3 };

/**
 * Jest hands each test file a copy of `process` whose listeners never hear the real process's events; warnings and
 * unhandled rejections are emitted on the real one, which code run in the main context still sees.
 */
const host = runInThisContext('process') as NodeJS.Process;

/** The package's process warnings (their codes) and the unhandled rejections of the running test. */
function watchProcess(): { warnings: string[]; rejections: unknown[] } {
  const seen = { warnings: [] as string[], rejections: [] as unknown[] };
  const onWarning = (warning: Error & { code?: string }) => {
    if (warning.code?.startsWith('LISTING_LIMITS_')) seen.warnings.push(warning.code);
  };
  const onRejection = (reason: unknown) => seen.rejections.push(reason);
  beforeEach(() => {
    seen.warnings.length = 0;
    seen.rejections.length = 0;
    host.on('warning', onWarning);
    host.on('unhandledRejection', onRejection);
  });
  afterEach(() => {
    host.off('warning', onWarning);
    host.off('unhandledRejection', onRejection);
  });
  return seen;
}

/** Real time for warnings (emitted on the next tick) and rejected hooks to be reported. */
const settle = (ms = 50) => new Promise((resolve) => setTimeout(resolve, ms));

/** `Bot token-0`, `Bot token-1`, ... */
const tokens = (n: number) => Array.from({ length: n }, (_, i) => `Bot token-${i}`);

const withToken = (token: string, path = BOT): PipelinedRequest => ({ path, headers: { Authorization: token } });

/** The statuses of `requests` sent one after another. */
async function statuses(requests: (() => request.Test)[]): Promise<number[]> {
  const answers: number[] = [];
  for (const send of requests) answers.push((await send()).status);
  return answers;
}

/** An app listening dual-stack (`::`, IPv4 clients seen as `::ffff:a.b.c.d`), closed after the test. */
function dualStackPerTest(): (app: Parameters<typeof createServer>[1]) => Promise<string> {
  const servers: Server[] = [];
  afterEach(() =>
    Promise.all(
      servers.splice(0).map(
        (server) =>
          new Promise<void>((closed) => {
            server.closeAllConnections();
            server.close(() => closed());
          }),
      ),
    ),
  );
  return async (app) => {
    const server = createServer(app);
    servers.push(server);
    await new Promise<void>((listening) => server.listen(0, listening));
    const { address, port } = server.address() as AddressInfo;
    expect(address).toBe('::');
    return `http://127.0.0.1:${port}`;
  };
}

describe.each(storeCases)('$name', (store) => {
  beforeAll(() => store.start?.());
  afterAll(() => store.stop?.());
  beforeEach(useFakeClock);
  afterEach(() => jest.useRealTimers());
  const start = serverPerTest();
  const app = (options: Options = {}, listing: ListingName | readonly EndpointRow[] = 'B') =>
    createApp({ listing, options: { store: store.make(), ...options } });
  /** An app served on 127.0.0.1, so that `req.ip` is `127.0.0.1`: its URL. */
  const served = async (options: Options = {}, listing?: ListingName | readonly EndpointRow[]) =>
    (await start(app(options, listing))).url;

  describe('failing hooks never crash the process and never change the answer', () => {
    const seen = watchProcess();
    const failure = new Error('hook failed');
    const fail = (): never => {
      throw failure;
    };
    const ban = { after: 1, within: 60_000, duration: 600_000 };
    const hooks: { hook: string; options: Options; fourth: [number, string] }[] = [
      { hook: 'onLimit throws', options: { onLimit: fail }, fourth: [429, LIMITED(1)] },
      { hook: 'onLimit rejects', options: { onLimit: async () => fail() }, fourth: [429, LIMITED(1)] },
      { hook: 'onBan throws', options: { ban, onBan: fail }, fourth: [403, BANNED(T0 + 600_000, 600)] },
      { hook: 'onBan rejects', options: { ban, onBan: async () => fail() }, fourth: [403, BANNED(T0 + 600_000, 600)] },
    ];
    const cases = hooks.flatMap((c) => [
      { ...c, reported: 'to onError' },
      { ...c, reported: 'as a LISTING_LIMITS_HOOK_ERROR warning' },
    ]);

    it.each(cases)('$hook: the 429 is sent, the error goes $reported', async ({ options, reported, fourth }) => {
      const errors: [unknown, string][] = [];
      const onError = (error: unknown, req: Request) => errors.push([error, req.path]);
      const url = await served(reported === 'to onError' ? { ...options, onError } : options);
      const get = () => request(url).get(BOT).timeout(2000);
      await get().expect(200);
      await get().expect(200);
      const limited = await get();
      expect([limited.status, limited.text, limited.headers['retry-after']]).toEqual([429, LIMITED(1), '1']);
      await settle();
      if (reported === 'to onError') {
        expect(errors).toEqual([[failure, BOT]]);
        expect(seen.warnings).toEqual([]);
      } else {
        expect(seen.warnings).toEqual(['LISTING_LIMITS_HOOK_ERROR']);
      }
      const next = await get();
      expect([next.status, next.text]).toEqual(fourth);
      await settle();
      expect(seen.rejections).toEqual([]);
    });

    it.each([
      ['throws', fail],
      ['rejects', async () => fail()],
    ])(
      'an onError that %s is a LISTING_LIMITS_HOOK_ERROR warning, never an unhandled rejection',
      async (_how, onError) => {
        const url = await served({ onLimit: fail, onError });
        const get = () => request(url).get(BOT).timeout(2000);
        await get().expect(200);
        await get().expect(200);
        const limited = await get();
        expect([limited.status, limited.text]).toEqual([429, LIMITED(1)]);
        await settle();
        expect(seen.warnings).toEqual(['LISTING_LIMITS_HOOK_ERROR']);
        expect(seen.rejections).toEqual([]);
      },
    );

    it.each([
      ['throws', fail],
      ['rejects', async () => fail()],
    ])("a handler that %s goes to the app's error handler", async (_how, handler) => {
      const server = app({ handler });
      server.use(answerErrors);
      const url = (await start(server)).url;
      const get = () => request(url).get(BOT).timeout(2000);
      await get().expect(200);
      await get().expect(200);
      const failed = await get();
      expect([failed.status, failed.text]).toEqual([500, '{"error":"hook failed"}']);
      await settle();
      expect(seen.rejections).toEqual([]);
    });
  });

  describe('durations of 2^31 ms and more', () => {
    const month: EndpointRow = { method: 'GET', path: '/v1/bots', limit: 2, windowMs: 30 * DAY };

    it('counts a 30-day window to its end', async () => {
      const url = await served({}, [month]);
      const get = () => request(url).get('/v1/bots');
      expect(await statuses([get, get])).toEqual([200, 200]);
      const third = await get();
      expect([third.status, third.text]).toEqual([429, LIMITED(2_592_000)]);
      await settle();
      expect(await statuses([get])).toEqual([429]);
      await store.advance(50);
      expect(await statuses([get])).toEqual([429]);
      await store.advance(29 * DAY);
      const late = await get();
      expect([late.status, late.text]).toEqual([429, LIMITED(86_400)]);
      await store.advance(DAY - 50);
      expect(await statuses([get])).toEqual([200]);
    });

    it('holds a 30-day ban to its end', async () => {
      const url = await served({ ban: { after: 1, within: 60_000, duration: 30 * DAY } });
      const get = () => request(url).get(BOT);
      expect(await statuses([get, get, get])).toEqual([200, 200, 429]);
      await settle();
      const banned = await get();
      expect([banned.status, banned.text]).toEqual([403, BANNED(T0 + 30 * DAY, 2_592_000)]);
      await store.advance(29 * DAY);
      const late = await get();
      expect([late.status, late.text]).toEqual([403, BANNED(T0 + 30 * DAY, 86_400)]);
      await store.advance(DAY);
      expect(await statuses([get])).toEqual([200]);
    });

    it('exports MAX_DURATION_MS, one year', () => {
      expect((lib as unknown as Record<string, unknown>).MAX_DURATION_MS).toBe(MAX_DURATION_MS);
    });

    const over = MAX_DURATION_MS + 1000;
    const row = (windowMs: number): EndpointRow[] => [{ ...month, windowMs }];
    it.each<[string, readonly EndpointRow[] | ListingName, Options, string, string]>([
      ['a row windowMs', row(over), {}, 'ERR_INVALID_ROW', 'listing[0].windowMs'],
      [
        'ban.duration',
        'B',
        { ban: { after: 1, within: 60_000, duration: over } },
        'ERR_INVALID_OPTION',
        'options.ban.duration',
      ],
      [
        'ban.within',
        'B',
        { ban: { after: 1, within: over, duration: 60_000 } },
        'ERR_INVALID_OPTION',
        'options.ban.within',
      ],
      [
        'ban.tokensWithin',
        'B',
        { ban: { ...rotation, tokensWithin: over } },
        'ERR_INVALID_OPTION',
        'options.ban.tokensWithin',
      ],
    ])('refuses %s above MAX_DURATION_MS at creation', (_field, listing, options, code, field) => {
      let error: unknown;
      try {
        listingLimits(listing, { store: store.make(), ...options });
      } catch (thrown) {
        error = thrown;
      }
      expect(error).toBeInstanceOf(ListingLimitsError);
      expect(error).toMatchObject({ code, field });
    });

    it('accepts durations of exactly MAX_DURATION_MS', () => {
      const ban = { ...rotation, within: MAX_DURATION_MS, duration: MAX_DURATION_MS, tokensWithin: MAX_DURATION_MS };
      expect(typeof closeAfterTest(listingLimits(row(MAX_DURATION_MS), { store: store.make(), ban }))).toBe('function');
    });
  });

  describe('bans are atomic with the counting that triggers them', () => {
    it('40 distinct tokens pipelined on one connection: 3 served, 37 refused with 403, one ban', async () => {
      const bans: BanInfo[] = [];
      const url = await served({ ban: rotation, onBan: (info) => bans.push(info) });
      const answers = await pipeline(
        url,
        tokens(40).map((token) => withToken(token)),
      );
      expect(tally(answers)).toEqual({ 200: 3, 403: 37 });
      expect(bans).toHaveLength(1);
      expect(bans[0]).toMatchObject({ key: 'ip:127.0.0.1', kind: 'ip', reason: 'token-rotation' });
    });

    it('200 tokens × 10 requests, pipelined token after token: 6 served', async () => {
      const url = await served({ ban: rotation });
      const requests = tokens(200).flatMap((token) => Array.from({ length: 10 }, () => withToken(token)));
      const answers: number[] = [];
      // Four connections of 50 tokens each, one after the other: the first 3 tokens come first.
      for (let i = 0; i < requests.length; i += 500) answers.push(...(await pipeline(url, requests.slice(i, i + 500))));
      if (!store.shared) {
        expect(tally(answers)).toEqual({ 200: 6, 429: 24, 403: 1970 });
        return;
      }
      // A shared store orders the requests in flight together by its own order of commands, which need not be the
      // order they were sent in: later requests of the first three tokens may be counted after the fourth token
      // banned the address, and are refused. Never more than the limit, and only the first three tokens served.
      const servedTokens = answers.flatMap((status, i) => (status === 200 ? [Math.floor(i / 10)] : []));
      expect(servedTokens.length).toBeGreaterThanOrEqual(3);
      expect(servedTokens.length).toBeLessThanOrEqual(6);
      expect(new Set(servedTokens)).toEqual(new Set([0, 1, 2]));
      expect(answers.filter((status) => status !== 200 && status !== 429 && status !== 403)).toEqual([]);
    });

    it('one client refused `after` times: answered normally, then 403 from the next request on', async () => {
      const bans: BanInfo[] = [];
      const url = await served({
        ban: { after: 3, within: 60_000, duration: 600_000 },
        onBan: (info) => bans.push(info),
      });
      const answers = await pipeline(
        url,
        Array.from({ length: 30 }, () => withToken('Bot abuser')),
      );
      expect(answers).toEqual([200, 200, 429, 429, 429, ...Array<number>(25).fill(403)]);
      expect(bans).toHaveLength(1);
      expect(bans[0]).toMatchObject({ key: tokenKey('Bot abuser'), kind: 'token', reason: 'limit' });
    });

    it('200 concurrent sockets, each with its own token: 3 served', async () => {
      const bans: BanInfo[] = [];
      const url = await served({ ban: rotation, onBan: (info) => bans.push(info) });
      const answers = await Promise.all(tokens(200).map((token) => pipeline(url, [withToken(token)])));
      expect(tally(answers.flat())).toEqual({ 200: 3, 403: 197 });
      expect(bans).toHaveLength(1);
    });
  });

  describe('one lookup per client, however many requests race', () => {
    const slowly = <T>(value: T) => new Promise<T>((resolve) => setTimeout(() => resolve(value), 50));

    it('30 concurrent requests with one new token: authenticate is called once', async () => {
      const calls: string[] = [];
      const url = await served({
        authenticate: (token) => {
          calls.push(token);
          return slowly(true);
        },
      });
      const path = '/v1/bots/1/uptime'; // 30 per 15 s
      const answers = await Promise.all(
        Array.from({ length: 30 }, () => request(url).get(path).set('Authorization', 'Bot new')),
      );
      expect(tally(answers.map((res) => res.status))).toEqual({ 200: 30 });
      expect(calls).toEqual(['Bot new']);
    });

    it('50 concurrent requests: the grants function is called once', async () => {
      let calls = 0;
      const url = await served({
        grants: () => {
          calls++;
          return slowly({ multiplier: 2 });
        },
      });
      const answers = await Promise.all(Array.from({ length: 50 }, () => request(url).get('/v1/bots/1/uptime')));
      expect(tally(answers.map((res) => `${res.status} ${res.headers['x-ratelimit-limit']}`))).toEqual({
        '200 60': 50,
      });
      expect(calls).toBe(1);
    });
  });

  it("an anonymous client's ban does not ban a token client at the same address", async () => {
    const bans: BanInfo[] = [];
    const url = await served({
      ban: { after: 1, within: 60_000, duration: 600_000, tokensPerIp: 3 },
      onBan: (info) => bans.push(info),
    });
    const anonymous = () => request(url).get(BOT);
    expect(await statuses([anonymous, anonymous, anonymous, anonymous])).toEqual([200, 200, 429, 403]);
    expect(bans).toHaveLength(1);
    expect(bans[0]).toMatchObject({ key: 'ip:127.0.0.1', kind: 'ip', reason: 'limit' });
    await request(url).get(BOT).set('Authorization', 'member').expect(200);
  });

  it('a grants lookup with a custom key is told the key, and cached per key', async () => {
    const calls: unknown[] = [];
    const url = await served({
      key: (req) => req.get('x-client') ?? 'anon',
      grants: (client, req) => {
        calls.push(client);
        return req.get('x-client') === 'partner' ? { multiplier: 10 } : undefined;
      },
    });
    const limitOf = async (who: string) =>
      (await request(url).get(BOT).set('x-client', who)).headers['x-ratelimit-limit'];
    expect([await limitOf('partner'), await limitOf('partner'), await limitOf('stranger')]).toEqual(['20', '20', '2']);
    expect(calls).toEqual([
      { key: 'partner', token: undefined, ip: '127.0.0.1' },
      { key: 'stranger', token: undefined, ip: '127.0.0.1' },
    ]);
  });

  it.each([
    ['/v1/bots', 1.16, '29'],
    ['/v1/bots', 2.28, '57'],
    ['/v1/bots/1/uptime', 1.1, '33'],
    ['/v1/statistics', 0.5, '2'],
  ])('GET %s with { multiplier: %s } allows %s: exact decimals, rounded down', async (path, multiplier, limit) => {
    const url = await served({ grants: { 'Bot partner': { multiplier } } });
    const res = await request(url).get(path).set('Authorization', 'Bot partner').expect(200);
    expect(res.headers['x-ratelimit-limit']).toBe(limit);
  });

  describe('token-rotation bans: unban and shadow mode', () => {
    it('unban(key) forgets the tokens counted: a fifth token is served', async () => {
      const bans: BanInfo[] = [];
      const server = app({ ban: rotation, onBan: (info) => bans.push(info) });
      const url = (await start(server)).url;
      const get = (token: string) => () => request(url).get('/v1/bots').set('Authorization', token);
      expect(await statuses(['a', 'b', 'c', 'd'].map(get))).toEqual([200, 200, 200, 403]);
      expect(bans).toHaveLength(1);
      await expect((server.locals.limiter as ListingLimitsMiddleware).unban('ip:127.0.0.1')).resolves.toBe(true);
      expect(await statuses(['e', 'e', 'a'].map(get))).toEqual([200, 200, 200]);
      expect(bans).toHaveLength(1);
    });

    it('shadow mode reports the ban with shadow: true and stores none', async () => {
      const shared = store.make();
      const bans: BanInfo[] = [];
      const shadow = createApp({
        options: { store: shared, mode: 'shadow', ban: rotation, onBan: (info) => bans.push(info) },
      });
      const shadowUrl = (await start(shadow)).url;
      const get = (token: string) => () => request(shadowUrl).get('/v1/bots').set('Authorization', token);
      expect(await statuses(['a', 'b', 'c', 'd'].map(get))).toEqual([200, 200, 200, 200]);
      expect(bans).toHaveLength(1);
      expect(bans[0]).toMatchObject({ key: 'ip:127.0.0.1', kind: 'ip', reason: 'token-rotation', shadow: true });
      const enforce = (await start(createApp({ options: { store: shared, ban: rotation } }))).url;
      await request(enforce).get('/v1/bots').expect(200);
    });
  });

  describe('IPv4 spellings', () => {
    const dualStack = dualStackPerTest();

    it('X-Forwarded-For 203.0.113.9 and ::ffff:203.0.113.9 share one counter', async () => {
      const server = createApp({ options: { store: store.make() }, setup: (a) => a.set('trust proxy', true) });
      const url = (await start(server)).url;
      const from = (address: string) => () => request(url).get(BOT).set('X-Forwarded-For', address);
      const answers = await statuses([from('203.0.113.9'), from('::ffff:203.0.113.9'), from('203.0.113.9')]);
      expect(answers).toEqual([200, 200, 429]);
    });

    it("a dual-stack server applies grants by the client's IPv4 address", async () => {
      const url = await dualStack(app({ grants: { '127.0.0.1': 'unlimited' } }));
      for (let i = 0; i < 3; i++) {
        const res = await request(url).get(BOT);
        expect([res.status, res.headers['x-ratelimit-limit']]).toEqual([200, undefined]);
      }
    });

    it('a dual-stack server reports ban keys by IPv4 address', async () => {
      const bans: BanInfo[] = [];
      const url = await dualStack(
        app({ ban: { after: 1, within: 60_000, duration: 600_000 }, onBan: (info) => bans.push(info) }),
      );
      const get = () => request(url).get(BOT);
      expect(await statuses([get, get, get, get])).toEqual([200, 200, 429, 403]);
      expect(bans.map((info) => info.key)).toEqual(['ip:127.0.0.1']);
    });
  });
});

describeRedisServer('when Redis fails', () => {
  let redis: RedisServer;
  let client: Redis;
  let prefixes = 0;
  const start = serverPerTest();
  beforeEach(async () => {
    redis = await RedisServer.start();
    client = await ioredisClient(redis.url);
  });
  afterEach(async () => {
    client.disconnect();
    await redis.close();
  });
  const serve = (options: Options, storeOptions: Parameters<typeof redisStore>[1]) => {
    const store = redisStore(client, { prefix: `attacks-${++prefixes}`, ...storeOptions });
    return start(createApp({ options: { store, ...options } }).use(answerErrors));
  };

  const limitBan = { after: 1, within: 60_000, duration: 600_000 };
  const outage = (['open', 'closed'] as const).flatMap((onFailure) =>
    [
      { bans: 'ban', ban: limitBan },
      { bans: 'ban with tokensPerIp', ban: { ...limitBan, tokensPerIp: 3 } },
    ].map((c) => ({
      ...c,
      onFailure,
      status: onFailure === 'open' ? 200 : 503,
      expected: onFailure === 'open' ? `200 ${UNCOUNTED}` : `503 ${UNAVAILABLE}`,
    })),
  );

  it.each(outage)(
    'Redis stopped, $bans, onFailure $onFailure: every request $status without rate-limit headers, never 500',
    async ({ ban, onFailure, expected }) => {
      const { url } = await serve({ ban }, { onFailure });
      await redis.stop();
      for (let i = 0; i < 100 && client.status === 'ready'; i++) await settle(10);
      expect(client.status).not.toBe('ready');
      const answers: string[] = [];
      // Anonymous, then more tokens than tokensPerIp, then past the limit.
      for (const token of [undefined, 'Bot one', 'Bot two', 'Bot three', 'Bot four', 'Bot four', 'Bot four']) {
        const req = request(url).get(BOT).timeout(2000);
        const res = await (token === undefined ? req : req.set('Authorization', token));
        const rateLimitHeaders = Object.keys(res.headers).filter((name) => /ratelimit|retry-after/.test(name));
        answers.push(`${res.status} ${res.text}${rateLimitHeaders.length > 0 ? ` ${rateLimitHeaders.join()}` : ''}`);
      }
      expect(answers).toEqual(Array<string>(7).fill(expected));
    },
  );

  it.each([
    ['anonymous', undefined],
    ['with a token', 'Bot member'],
  ])(
    'Redis hanging, ban with tokensPerIp, timeoutMs 1000: answered 503 within one deadline (%s)',
    async (_who, token) => {
      const { url } = await serve({ ban: rotation }, { timeoutMs: 1000, onFailure: 'closed' });
      const pauser = await ioredisClient(redis.url);
      try {
        await pauser.call('CLIENT', 'PAUSE', '4000', 'ALL');
        const began = performance.now();
        const req = request(url).get(BOT).timeout(5000);
        const res = await (token === undefined ? req : req.set('Authorization', token));
        const elapsed = performance.now() - began;
        expect([res.status, res.text]).toEqual([503, UNAVAILABLE]);
        expect(elapsed).toBeLessThan(1900);
      } finally {
        pauser.disconnect();
      }
    },
  );
});
