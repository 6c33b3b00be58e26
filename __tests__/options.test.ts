// Configuration errors at creation, and the behaviour of every option over HTTP.
import express from 'express';
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import request from 'supertest';
import {
  type CounterSpec,
  type EndpointRow,
  ListingLimitsError,
  type ListingLimitsOptions,
  listingLimits,
  memoryStore,
  redisStore,
  type StoreFailurePolicy,
} from '../lib';
import { createApp } from './helpers/app';

const row = (over: Partial<Record<keyof EndpointRow, unknown>> = {}) =>
  ({ method: 'GET', path: '/v1/x', limit: 1, windowMs: 1000, ...over }) as EndpointRow;

describe('bad configuration fails at creation, naming the field', () => {
  it.each([
    { name: 'unknown listing', listing: 'C', options: undefined, code: 'ERR_UNKNOWN_LISTING', field: 'listing' },
    { name: 'a listing and a space', listing: 'b ', options: undefined, code: 'ERR_UNKNOWN_LISTING', field: 'listing' },
    { name: 'empty table', listing: [], options: undefined, code: 'ERR_UNKNOWN_LISTING', field: 'listing' },
    { name: 'row not an object', listing: [null], options: undefined, code: 'ERR_INVALID_ROW', field: 'listing[0]' },
    {
      name: 'zero limit',
      listing: [row({ limit: 0 })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].limit',
    },
    {
      name: 'fractional limit',
      listing: [row(), row({ path: '/y', limit: 1.5 })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[1].limit',
    },
    {
      name: 'string limit',
      listing: [row({ limit: '5' })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].limit',
    },
    {
      name: 'negative window',
      listing: [row({ windowMs: -1000 })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].windowMs',
    },
    {
      name: 'window not whole seconds',
      listing: [row({ windowMs: 1500 })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].windowMs',
    },
    {
      name: 'unparseable path',
      listing: [row({ path: '/v1/:' })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].path',
    },
    {
      name: 'path without slash',
      listing: [row({ path: 'v1/x' })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].path',
    },
    {
      name: 'non-ASCII path',
      listing: [row({ path: '/v1/ü' })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].path',
    },
    {
      name: 'unknown method',
      listing: [row({ method: 'FETCH' })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].method',
    },
    {
      name: 'lower-case method',
      listing: [row({ method: 'get' })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].method',
    },
    {
      name: 'HEAD row',
      listing: [row({ method: 'HEAD' })],
      options: undefined,
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].method',
    },
    {
      name: 'row field typo',
      listing: [{ ...row(), limt: 2 }],
      options: undefined,
      code: 'ERR_UNKNOWN_OPTION',
      field: 'listing[0].limt',
    },
    {
      name: 'duplicate row',
      listing: [row(), row({ limit: 2 })],
      options: undefined,
      code: 'ERR_DUPLICATE_ROW',
      field: 'listing[1]',
    },
    {
      name: 'duplicate row, other param name',
      listing: [row({ path: '/v1/:a' }), row({ path: '/V1/:b' })],
      options: undefined,
      code: 'ERR_DUPLICATE_ROW',
      field: 'listing[1]',
    },
    {
      name: 'option typo',
      listing: 'B',
      options: { stor: memoryStore() },
      code: 'ERR_UNKNOWN_OPTION',
      field: 'options.stor',
    },
    { name: 'options not an object', listing: 'B', options: 5, code: 'ERR_INVALID_OPTION', field: 'options' },
    {
      name: 'store not a function',
      listing: 'B',
      options: { store: {} },
      code: 'ERR_INVALID_OPTION',
      field: 'options.store',
    },
    {
      name: 'store returns nothing',
      listing: 'B',
      options: { store: () => undefined },
      code: 'ERR_INVALID_OPTION',
      field: 'options.store',
    },
    {
      name: 'key not a function',
      listing: 'B',
      options: { key: 'authorization' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.key',
    },
    {
      name: 'skip not a function',
      listing: 'B',
      options: { skip: true },
      code: 'ERR_INVALID_OPTION',
      field: 'options.skip',
    },
    {
      name: 'handler not a function',
      listing: 'B',
      options: { handler: 'x' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.handler',
    },
    {
      name: 'headers not boolean',
      listing: 'B',
      options: { headers: 'yes' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.headers',
    },
    {
      name: 'ipv6Subnet too large',
      listing: 'B',
      options: { ipv6Subnet: 129 },
      code: 'ERR_INVALID_OPTION',
      field: 'options.ipv6Subnet',
    },
    {
      name: 'ipv6Subnet true',
      listing: 'B',
      options: { ipv6Subnet: true },
      code: 'ERR_INVALID_OPTION',
      field: 'options.ipv6Subnet',
    },
    {
      name: 'authenticate with key',
      listing: 'B',
      options: { key: () => 'k', authenticate: (): boolean => true },
      code: 'ERR_INVALID_OPTION',
      field: 'options.authenticate',
    },
    {
      name: 'invalidToken unknown',
      listing: 'B',
      options: { authenticate: (): boolean => true, invalidToken: 'drop' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.invalidToken',
    },
    {
      name: 'invalidToken without authenticate',
      listing: 'B',
      options: { invalidToken: 'reject' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.invalidToken',
    },
    {
      name: 'cacheMs zero',
      listing: 'B',
      options: { cacheMs: 0 },
      code: 'ERR_INVALID_OPTION',
      field: 'options.cacheMs',
    },
    {
      name: 'mode unknown',
      listing: 'B',
      options: { mode: 'dry-run' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.mode',
    },
    { name: 'ban not an object', listing: 'B', options: { ban: 3 }, code: 'ERR_INVALID_OPTION', field: 'options.ban' },
    {
      name: 'ban field typo',
      listing: 'B',
      options: { ban: { after: 1, within: 1000, duration: 1000, durration: 1 } },
      code: 'ERR_UNKNOWN_OPTION',
      field: 'options.ban.durration',
    },
    {
      name: 'ban.after missing',
      listing: 'B',
      options: { ban: { within: 1000, duration: 1000 } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.ban.after',
    },
    {
      name: 'ban.within not seconds',
      listing: 'B',
      options: { ban: { after: 1, within: 1500, duration: 1000 } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.ban.within',
    },
    {
      name: 'ban.duration missing',
      listing: 'B',
      options: { ban: { after: 1, within: 1000 } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.ban.duration',
    },
    {
      name: 'ban.tokensPerIp zero',
      listing: 'B',
      options: { ban: { after: 1, within: 1000, duration: 1000, tokensPerIp: 0 } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.ban.tokensPerIp',
    },
    {
      name: 'ban.tokensWithin alone',
      listing: 'B',
      options: { ban: { after: 1, within: 1000, duration: 1000, tokensWithin: 1000 } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.ban.tokensWithin',
    },
    {
      name: 'onBan without ban',
      listing: 'B',
      options: { onBan: () => undefined },
      code: 'ERR_INVALID_OPTION',
      field: 'options.onBan',
    },
    {
      name: 'onLimit not a function',
      listing: 'B',
      options: { onLimit: 1 },
      code: 'ERR_INVALID_OPTION',
      field: 'options.onLimit',
    },
    {
      name: 'grants not an object',
      listing: 'B',
      options: { grants: 'all' },
      code: 'ERR_INVALID_OPTION',
      field: 'options.grants',
    },
    {
      name: 'grant of unknown shape',
      listing: 'B',
      options: { grants: { tok: { times: 2 } } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.grants["tok"]',
    },
    {
      name: 'grant with a mistyped field',
      listing: 'B',
      options: { grants: { tok: { multiply: 2 } } },
      code: 'ERR_UNKNOWN_OPTION',
      field: 'options.grants["tok"].multiply',
    },
    {
      name: 'grant multiplier zero',
      listing: 'B',
      options: { grants: { tok: { multiplier: 0 } } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.grants["tok"].multiplier',
    },
    {
      // 1e308 × 25 is a limit of 309 digits: a Structured Field integer has at most 15.
      name: 'grant multiplier beyond what a header field carries',
      listing: 'B',
      options: { grants: { tok: { multiplier: 1e308 } } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.grants["tok"].multiplier',
    },
    {
      name: 'row limit beyond what a header field carries',
      listing: [row({ limit: Number.MAX_SAFE_INTEGER })],
      options: {},
      code: 'ERR_INVALID_ROW',
      field: 'listing[0].limit',
    },
    {
      name: 'grant row limit beyond what a header field carries',
      listing: 'B',
      options: { grants: { tok: { rows: [row({ path: '/v1/bots', limit: 1e15 })] } } },
      code: 'ERR_INVALID_ROW',
      field: 'options.grants["tok"].rows[0].limit',
    },
    {
      name: 'grant row of no table row',
      listing: 'B',
      options: { grants: { tok: { rows: [row({ path: '/v1/servers' })] } } },
      code: 'ERR_INVALID_OPTION',
      field: 'options.grants["tok"].rows[0]',
    },
    {
      name: 'grant row invalid',
      listing: 'B',
      options: { grants: { tok: { rows: [row({ path: '/v1/bots', limit: -1 })] } } },
      code: 'ERR_INVALID_ROW',
      field: 'options.grants["tok"].rows[0].limit',
    },
  ])('$name → $code at $field', ({ listing, options, code, field }) => {
    let error: unknown;
    try {
      listingLimits(listing as never, options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ListingLimitsError);
    expect(error).toMatchObject({ code, field });
    expect((error as Error).message).toMatch(new RegExp(`^listingLimits: ${field.replace(/[[\]().]/g, '\\$&')} `));
  });

  it('suggests the option meant by a typo', () => {
    expect(() => listingLimits('B', { stor: memoryStore() } as never)).toThrow(
      'listingLimits: options.stor is not an option. Did you mean `store`?',
    );
    expect(() => listingLimits([{ ...row(), windwMs: 1 }] as never)).toThrow(
      'listingLimits: listing[0].windwMs is not a row field. Did you mean `windowMs`?',
    );
  });
});

describe('error messages show what was given, never code', () => {
  class Client {
    constructor(readonly url: string) {}
  }
  const long = { huge: 'x'.repeat(500) };
  it.each([
    [
      'a listing with a space',
      () => listingLimits('b ' as never),
      'listingLimits: listing "b " is not a listing. Use "A" or "servers", "B" or "bots", or an array of rows. Did you mean `B` (bots)?',
    ],
    [
      'an array as options',
      () => listingLimits('B', [] as never),
      'listingLimits: options must be an object of options; got [].',
    ],
    [
      'null as options',
      () => listingLimits('B', null as never),
      'listingLimits: options must be an object of options; got null.',
    ],
    [
      'a string limit',
      () => listingLimits([row({ limit: '5' })]),
      'listingLimits: listing[0].limit must be a positive integer; got "5".',
    ],
    [
      'a limit of 16 digits',
      () => listingLimits([row({ limit: 2 ** 53 - 1 })]),
      'listingLimits: listing[0].limit must be at most 999999999999999, the largest integer a header field carries (15 digits); got 9007199254740991.',
    ],
    [
      'a multiplier that makes a limit of 16 digits',
      () => listingLimits('B', { grants: { 'Bot x': { multiplier: 1e15 } } }),
      'listingLimits: options.grants["Bot x"].multiplier makes a limit of 30000000000000000 on GET /v1/bots/:id/uptime; a header field carries at most 999999999999999 (15 digits). Grant \'unlimited\', or a smaller multiplier.',
    ],
    [
      'the memoryStore function itself',
      () => listingLimits('B', { store: memoryStore as never }),
      'listingLimits: options.store is the memoryStore function itself; call it: `memoryStore()`.',
    ],
    [
      'the redisStore function itself',
      () => listingLimits('B', { store: redisStore as never }),
      'listingLimits: options.store is the redisStore function itself; call it with your client: `redisStore(client)`.',
    ],
    [
      'a client class instead of an instance',
      () => redisStore(Client as never),
      'redisStore: client is the class Client, not a client: pass a connected instance, e.g. `redisStore(new Redis(url))`.',
    ],
    [
      'a huge value, cut short',
      () => listingLimits('B', { grants: { tok: long as never } }),
      `listingLimits: options.grants["tok"] must be 'unlimited', { multiplier } or { rows }; got {"huge":"${'x'.repeat(51)}….`,
    ],
    [
      'a function where a store should return a limiter',
      () => listingLimits('B', { store: () => (() => 1) as never }),
      'listingLimits: options.store returned the function for GET /v1/statistics; a store must return a rate-limiter-flexible limiter.',
    ],
  ])('%s', (_name, create, message) => {
    expect(create).toThrow(ListingLimitsError);
    let error: Error | undefined;
    try {
      create();
    } catch (e) {
      error = e as Error;
    }
    expect(error?.message).toBe(message);
    expect(error?.message).not.toMatch(/=>|\{\s*\n|function \w*\(/);
  });
});

describe('options over HTTP', () => {
  it('headers: false sends no rate-limit headers, but Retry-After on every 429', async () => {
    const app = createApp({ options: { headers: false } });
    const ok = await request(app).get('/v1/bots/1').expect(200);
    expect(Object.keys(ok.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
    await request(app).get('/v1/bots/1').expect(200);
    const refused = await request(app).get('/v1/bots/1').expect(429);
    expect(Object.keys(refused.headers).filter((h) => h.includes('ratelimit'))).toEqual([]);
    expect(refused.headers['retry-after']).toBe('1');
  });

  it('handler answers refused requests, with the headers already set', async () => {
    const handler: ListingLimitsOptions['handler'] = (_req, res, _next, info) => {
      res.status(418).json({ refused: info.endpoint, retryAfter: info.retryAfter, remaining: info.remaining });
    };
    const app = createApp({ options: { handler } });
    await request(app).get('/v1/bots/1').expect(200);
    await request(app).get('/v1/bots/1').expect(200);
    const res = await request(app).get('/v1/bots/1').expect(418);
    expect(res.body).toEqual({ refused: 'GET /v1/bots/:id', retryAfter: 1, remaining: 0 });
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
  });

  it.each([
    ['sync', (req: express.Request) => req.get('x-internal') === 'yes'],
    ['async', async (req: express.Request) => req.get('x-internal') === 'yes'],
  ])('skip (%s) lets chosen requests through uncounted and without headers', async (_kind, skip) => {
    const app = createApp({ options: { skip } });
    for (let i = 0; i < 5; i++) {
      const res = await request(app).get('/v1/bots/1').set('X-Internal', 'yes').expect(200);
      expect(res.headers['x-ratelimit-remaining']).toBeUndefined();
    }
    await request(app).get('/v1/bots/1').expect(200);
  });

  it.each([
    ['sync', (req: express.Request) => req.get('x-api-key') ?? 'anonymous'],
    ['async', async (req: express.Request) => req.get('x-api-key') ?? 'anonymous'],
  ])('key (%s) chooses the client a request is counted for', async (_kind, key) => {
    const app = createApp({ options: { key } });
    const get = (apiKey: string) => request(app).get('/v1/bots/1').set('X-Api-Key', apiKey);
    await get('one').expect(200);
    await get('one').set('Authorization', 'other').expect(200);
    await get('one').expect(429);
    await get('two').expect(200);
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('key broke');
      },
      'key broke',
    ],
    ['rejects', async () => Promise.reject(new Error('key broke')), 'key broke'],
    ['returns an empty key', () => '', 'options.key returned ""'],
  ])('a key function that %s reaches the error handler, and the process goes on', async (_kind, key, message) => {
    const app = express();
    app.use(listingLimits('B', { key: key as () => string }));
    app.get('/v1/bots/:id', (_req, res) => {
      res.json({});
    });
    app.use((err: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).json({ error: err.message });
    });
    const res = await request(app).get('/v1/bots/1').expect(500);
    expect(res.body.error).toContain(message);
  });

  /** A factory of limiters whose `consume()` does `fail`, with the failure policy given, if any. */
  const failing = (fail: () => Promise<never>, failure?: StoreFailurePolicy) => {
    const factory = (e: CounterSpec) => {
      const limiter = new RateLimiterMemory({ points: e.limit, duration: e.windowMs / 1000 });
      limiter.consume = fail;
      return limiter;
    };
    return failure ? Object.assign(factory, { failure }) : factory;
  };
  const down = () => Promise.reject(new Error('Table is not created yet'));
  const thrown = (): Promise<never> => {
    throw new Error('no connection');
  };
  it.each([
    { name: 'rejects with an Error', store: failing(down), answer: [200, '"GET /v1/bots";r=24;t=60', '{}'] },
    { name: 'throws at once', store: failing(thrown), answer: [200, '"GET /v1/bots";r=24;t=60', '{}'] },
    {
      name: "rejects, its failure 'open'",
      store: failing(down, { timeoutMs: 200, onFailure: 'open' }),
      answer: [200, null, '{}'],
    },
    {
      name: "rejects, its failure 'closed'",
      store: failing(down, { timeoutMs: 200, onFailure: 'closed' }),
      answer: [
        503,
        null,
        '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}',
      ],
    },
  ])("a limiter that $name gets its store's onFailure (memory by default), never a 500", async ({ store, answer }) => {
    const app = express();
    app.use(listingLimits('B', { store }));
    app.get('/v1/bots', (_req, res) => res.json({}));
    const res = await request(app).get('/v1/bots');
    expect([res.status, res.headers.ratelimit ?? null, res.text]).toEqual(answer);
  });

  it("a limiter's refusal is a 429, even one that says 0 points consumed (a key blocked in memory)", async () => {
    const app = express();
    app.use(listingLimits('B', { store: failing(() => Promise.reject(new RateLimiterRes(0, 5000))) }));
    app.get('/v1/bots', (_req, res) => res.json({}));
    const res = await request(app).get('/v1/bots');
    expect([res.status, res.headers.ratelimit, res.headers['retry-after']]).toEqual([
      429,
      '"GET /v1/bots";r=0;t=5',
      '5',
    ]);
  });

  it('a store is asked for one counter per endpoint, by name, limit and window, and for no route row', () => {
    const seen: unknown[] = [];
    listingLimits('A', {
      store: (counter) => {
        seen.push(counter);
        return memoryStore()(counter);
      },
      ban: { after: 3, within: 60_000, duration: 600_000, tokensPerIp: 5 },
    });
    expect(seen).toEqual([
      { name: 'GET /v1/statistics', limit: 1, windowMs: 1000 },
      { name: 'GET /v1/servers', limit: 15, windowMs: 120000 },
      { name: 'GET /v1/servers/:id', limit: 6, windowMs: 15000 },
      { name: 'GET /v1/servers/:id/upvotes', limit: 15, windowMs: 15000 },
      { name: 'GET /v1/users/:id', limit: 2, windowMs: 1000 },
      { name: 'GET /v1/users/:id/servers', limit: 6, windowMs: 15000 },
      { name: 'listing-limits strikes', limit: 3, windowMs: 60000 },
      { name: 'listing-limits seen-tokens', limit: 1, windowMs: 60000 },
      { name: 'listing-limits tokens-per-ip', limit: 5, windowMs: 60000 },
    ]);
  });
});
