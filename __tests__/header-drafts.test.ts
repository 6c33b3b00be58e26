// Option `headers` chooses the syntax of the IETF fields: draft 7 and draft 8 exactly as express-rate-limit writes
// them, which its ratelimit-header-parser and Structured Field parsers read, or draft 10, the default.
import { ServerResponse } from 'node:http';
import express, { type Express } from 'express';
import { rateLimit } from 'express-rate-limit';
import { parseRateLimit } from 'ratelimit-header-parser';
import { isInnerList, type Item, parseList } from 'structured-headers';
import request from 'supertest';
import { type EndpointRow, type ListingLimitsOptions, ListingLimitsError, listingLimits, listings } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { headerTemplate, headerWriter, partitionKey } from '../lib/contract/headers';
import { readServerLimits } from '../lib/contract/read-headers';
import { T0, useFakeClock } from './helpers/stores';

beforeEach(useFakeClock);
afterEach(() => jest.useRealTimers());

const made: { close(): void }[] = [];
afterEach(() => made.splice(0).forEach((limits) => limits.close()));

/** An app that serves every row of `rows` behind listingLimits with `options`. */
function appOf(rows: readonly EndpointRow[], options: ListingLimitsOptions, limited = rows): Express {
  const limits = listingLimits(limited, options);
  made.push(limits);
  const app = express();
  app.use(limits);
  for (const row of rows) app[row.method.toLowerCase() as 'get'](row.path, (_req, res) => res.json({}));
  return app;
}

const pathOf = (row: EndpointRow) => row.path.replace(/:\w+/g, '7');
const send = (app: Express, row: EndpointRow) =>
  request(app)[row.method.toLowerCase() as 'get'](pathOf(row)).set('Authorization', 'Bot x');

describe('the strings of each syntax, computed once per limit', () => {
  const template = headerTemplate('GET /v1/bots', 25, 60_000);
  const fields = (syntax: 'draft-7' | 'draft-8' | 'draft-10') => {
    const res = new ServerResponse({ method: 'GET', headers: {} } as never);
    headerWriter(syntax).one(res, template, 3, 59_001, T0, 't:key');
    return res.getHeaders();
  };
  const legacy = {
    'x-ratelimit-limit': '25',
    'x-ratelimit-remaining': '3',
    'x-ratelimit-reset': String(T0 / 1000 + 60),
    'x-ratelimit-reset-after': '59.001',
    'x-ratelimit-bucket': 'GET /v1/bots',
  };

  it.each([
    ['draft-10', '"GET /v1/bots";q=25;w=60', '"GET /v1/bots";r=3;t=60'],
    ['draft-8', `"GET /v1/bots"; q=25; w=60; pk=:${partitionKey('t:key')}:`, '"GET /v1/bots"; r=3; t=60'],
    ['draft-7', '25;w=60', 'limit=25, remaining=3, reset=60'],
  ] as const)('%s: RateLimit-Policy %s, RateLimit %s, and the legacy fields', (syntax, policy, ratelimit) => {
    expect(fields(syntax)).toEqual({ 'ratelimit-policy': policy, ratelimit, ...legacy });
  });

  it('a partition key is 16 base64 characters of a hash: never the client key itself', () => {
    expect(partitionKey('t:key')).toMatch(/^[A-Za-z0-9+/]{16}$/);
    expect(partitionKey('t:key')).not.toBe(partitionKey('t:kez'));
  });
});

describe.each(['draft-7', 'draft-8'] as const)('%s as express-rate-limit writes it', (syntax) => {
  it('the same fields, byte for byte, for the same limit, window, name and client key', async () => {
    const key = tokenKey('Bot x');
    const theirs = express();
    theirs.use(
      rateLimit({
        windowMs: 60_000,
        limit: 25,
        standardHeaders: syntax,
        legacyHeaders: false,
        identifier: 'GET /v1/bots',
        keyGenerator: () => key,
      }),
    );
    theirs.get('/v1/bots', (_req, res) => res.json({}));
    const row = listings.B[1] as EndpointRow;
    expect(`${row.method} ${row.path}`).toBe('GET /v1/bots');
    const ours = appOf(listings.B, { headers: syntax });
    for (let i = 1; i <= 3; i++) {
      const [a, b] = await Promise.all([send(theirs, row), send(ours, row)]);
      expect([b.headers['ratelimit-policy'], b.headers.ratelimit]).toEqual([
        a.headers['ratelimit-policy'],
        a.headers.ratelimit,
      ]);
    }
  });
});

describe.each(['A', 'B'] as const)('every endpoint of listing %s', (listing) => {
  const rows = listings[listing];

  it.each(rows.map((row) => [`${row.method} ${row.path}`, row] as const))(
    'draft-7: ratelimit-header-parser reads the limit, remaining and reset of %s',
    async (_name, row) => {
      const app = appOf(rows, { headers: 'draft-7' });
      for (let n = 1; n <= Math.min(row.limit, 3); n++) {
        const res = await send(app, row).expect(200);
        expect(parseRateLimit(res.headers)).toEqual({
          limit: row.limit,
          used: n,
          remaining: row.limit - n,
          reset: new Date(T0 + row.windowMs),
        });
      }
    },
  );

  it.each(rows.map((row) => [`${row.method} ${row.path}`, row] as const))(
    'draft-8: a Structured Field parser reads q, w, r, t and the partition key of %s',
    async (_name, row) => {
      const app = appOf(rows, { headers: 'draft-8' });
      const res = await send(app, row).expect(200);
      const name = `${row.method} ${row.path}`;
      const members = (field: string) =>
        parseList(res.headers[field] as string).map((m) => {
          if (isInnerList(m)) throw new Error('an inner list');
          return [m[0], Object.fromEntries((m as Item)[1])];
        });
      const pk = Buffer.from(partitionKey(tokenKey('Bot x')), 'base64');
      expect(members('ratelimit-policy')).toEqual([[name, { q: row.limit, w: row.windowMs / 1000, pk: pk.buffer }]]);
      expect(members('ratelimit')).toEqual([[name, { r: row.limit - 1, t: row.windowMs / 1000 }]]);
    },
  );
});

describe('draft-8 and ratelimit-header-parser', () => {
  it("reads it as it reads express-rate-limit's own draft-8 fields: not at all (it knows the draft-7 syntax only)", async () => {
    const theirs = express();
    theirs.use(rateLimit({ windowMs: 1000, limit: 2, standardHeaders: 'draft-8', legacyHeaders: false }));
    theirs.get('/v1/bots/:id', (_req, res) => res.json({}));
    const row = listings.B[2] as EndpointRow;
    const [a, b] = await Promise.all([send(theirs, row), send(appOf(listings.B, { headers: 'draft-8' }), row)]);
    const read = (headers: Record<string, string>) => {
      const parsed = parseRateLimit(headers);
      return { ...parsed, reset: String(parsed?.reset) };
    };
    const unread = { limit: NaN, used: NaN, remaining: NaN, reset: 'Invalid Date' };
    expect([read(a.headers), read(b.headers)]).toEqual([unread, unread]);
  });
});

describe('several policies on one response', () => {
  const perSecond: EndpointRow = { method: 'GET', path: '/v1/bots/:id', limit: 2, windowMs: 1000 };
  const perMinute: EndpointRow = { method: 'GET', path: '/v1/bots/:id', limit: 3, windowMs: 60_000 };

  it.each([
    [
      'draft-7',
      '3;w=60, 2;w=1',
      ['limit=2, remaining=1, reset=1', 'limit=2, remaining=0, reset=1', 'limit=3, remaining=0, reset=60'],
    ],
    [
      'draft-8',
      `"GET /v1/bots/:id"; q=3; w=60; pk=:${partitionKey(tokenKey('Bot x'))}:, "GET /v1/bots/:id"; q=2; w=1; pk=:${partitionKey(tokenKey('Bot x'))}:`,
      [
        '"GET /v1/bots/:id"; r=2; t=60, "GET /v1/bots/:id"; r=1; t=1',
        '"GET /v1/bots/:id"; r=1; t=60, "GET /v1/bots/:id"; r=0; t=1',
        '"GET /v1/bots/:id"; r=0; t=60, "GET /v1/bots/:id"; r=0; t=1',
      ],
    ],
  ] as const)(
    '%s, two limiters stacked: every policy, and RateLimit as the syntax has it',
    async (syntax, policy, ratelimits) => {
      const app = express();
      for (const row of [perMinute, perSecond]) {
        const limits = listingLimits([row], { headers: syntax });
        made.push(limits);
        app.use(limits);
      }
      app.get('/v1/bots/:id', (_req, res) => res.json({}));
      const seen: [number, string, string][] = [];
      for (let i = 0; i < 3; i++) {
        const res = await send(app, perSecond);
        seen.push([res.status, res.headers['ratelimit-policy'] as string, res.headers.ratelimit as string]);
      }
      expect(seen).toEqual(ratelimits.map((ratelimit, i) => [i < 2 ? 200 : 429, policy, ratelimit]));
    },
  );

  it.each([
    ['draft-7', '2;w=1, 3;w=60', ['limit=2, remaining=1, reset=1', 'limit=2, remaining=0, reset=1']],
    [
      'draft-8',
      `"GET /v1/bots/:id per 1s"; q=2; w=1; pk=:${partitionKey(tokenKey('Bot x'))}:, "GET /v1/bots/:id per 60s"; q=3; w=60; pk=:${partitionKey(tokenKey('Bot x'))}:`,
      [
        '"GET /v1/bots/:id per 1s"; r=1; t=1, "GET /v1/bots/:id per 60s"; r=2; t=60',
        '"GET /v1/bots/:id per 1s"; r=0; t=1, "GET /v1/bots/:id per 60s"; r=1; t=60',
      ],
    ],
  ] as const)('%s, one endpoint of two limits: each policy', async (syntax, policy, ratelimits) => {
    const app = appOf([perSecond], { headers: syntax }, [perSecond, perMinute]);
    for (const ratelimit of ratelimits) {
      const res = await send(app, perSecond).expect(200);
      expect([res.headers['ratelimit-policy'], res.headers.ratelimit]).toEqual([policy, ratelimit]);
    }
  });
});

describe('option headers', () => {
  it.each([
    [true, '"GET /v1/bots";r=24;t=60'],
    ['draft-10', '"GET /v1/bots";r=24;t=60'],
    [false, undefined],
  ] as const)('%p: RateLimit %p', async (headers, ratelimit) => {
    const res = await send(appOf(listings.B, { headers }), listings.B[1] as EndpointRow).expect(200);
    expect(res.headers.ratelimit).toBe(ratelimit);
  });

  it.each([
    [
      { headers: 'draft-6' },
      'options.headers must be one of "draft-7", "draft-8", "draft-10"; got "draft-6". Did you mean `draft-7`?',
    ],
    [
      { headers: 'draft7' },
      'options.headers must be one of "draft-7", "draft-8", "draft-10"; got "draft7". Did you mean `draft-7`?',
    ],
    [{ headers: 'yes' }, 'options.headers must be one of "draft-7", "draft-8", "draft-10"; got "yes".'],
    [{ headers: 10 }, 'options.headers must be one of "draft-7", "draft-8", "draft-10"; got 10.'],
    [{ standardHeaders: 'draft-7' }, 'options.standardHeaders is not an option. Did you mean `headers`?'],
  ])('%p is refused, naming the choices', (options, message) => {
    expect(() => listingLimits('B', options as never)).toThrow(ListingLimitsError);
    expect(() => listingLimits('B', options as never)).toThrow(
      expect.objectContaining({ message: `listingLimits: ${message}` }),
    );
  });
});

describe("the package's own client reads every syntax", () => {
  it.each(['draft-10', 'draft-8', 'draft-7'] as const)(
    '%s: the limit, the window, what remains, the reset',
    async (headers) => {
      const row = listings.B[1] as EndpointRow;
      const res = await send(appOf(listings.B, { headers }), row).expect(200);
      const fields = new Headers(res.headers as Record<string, string>);
      // Draft 7's RateLimit is a dictionary (limit=, remaining=, reset=); its RateLimit-Policy (25;w=60) tells the window.
      expect(readServerLimits(fields, T0)).toEqual([{ limit: 25, windowMs: 60_000, remaining: 24, resetMs: 60_000 }]);
    },
  );
});
