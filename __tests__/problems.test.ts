// Refusals as RFC 9457 problem details for a client whose Accept prefers them; for every other, the bodies of the
// original service, byte for byte.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { type EndpointRow, type ListingLimitsMiddleware, type ListingLimitsOptions } from '../lib';
import { BANNED, QUOTA_EXCEEDED } from '../lib/limiter/request';
import { createApp, expressVersions } from './helpers/app';
import { T0, useFakeClock } from './helpers/stores';

beforeEach(useFakeClock);
afterEach(() => jest.useRealTimers());

const made: ListingLimitsMiddleware[] = [];
afterEach(() => made.splice(0).forEach((limits) => limits.close()));

const LIMITED =
  '{"success":false,"code":429,"message":"You are sending too many requests, please slow down","retryAfter":1}';
const quotaExceeded = (policies: string[], retryAfter = 1) =>
  JSON.stringify({
    type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
    title: 'Request cannot be satisfied as assigned quota has been exceeded',
    status: 429,
    detail: 'You are sending too many requests, please slow down',
    'violated-policies': policies,
    retryAfter,
  });
const until = new Date(T0 + 60_000).toISOString();
const BANNED_BODY = `{"success":false,"code":403,"message":"You are banned from this API for circumventing its rate limits","bannedUntil":"${until}","retryAfter":60}`;
const BANNED_PROBLEM = JSON.stringify({
  type: 'https://www.npmjs.com/package/listing-limits#problem-type-banned',
  title: 'Banned for circumventing the rate limits',
  status: 403,
  detail: 'You are banned from this API for circumventing its rate limits',
  bannedUntil: until,
  retryAfter: 60,
});

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json';

it("the types: the IETF draft's quota-exceeded, and the package's own for bans", () => {
  expect([QUOTA_EXCEEDED, BANNED]).toEqual([
    'https://iana.org/assignments/http-problem-types#quota-exceeded',
    'https://www.npmjs.com/package/listing-limits#problem-type-banned',
  ]);
});

describe.each(expressVersions)('with %s', (_name, express) => {
  const app = (listing: readonly EndpointRow[] | 'B' = 'B', options: ListingLimitsOptions = {}) => {
    const built = createApp({ express, listing, options });
    made.push(built.locals.limiter as ListingLimitsMiddleware);
    return built;
  };

  /** The third request to GET /v1/bots/:id (2 per second), with `accept`. */
  const refused = async (accept: string | undefined) => {
    const served = app();
    const get = () => {
      const req = request(served).get('/v1/bots/1').set('Authorization', 'Bot x');
      return accept === undefined ? req : req.set('Accept', accept);
    };
    await get().expect(200);
    await get().expect(200);
    return get().expect(429);
  };

  it.each([
    [undefined, 'json'],
    ['application/json', 'json'],
    ['*/*', 'json'],
    ['text/html', 'json'],
    ['application/json, application/problem+json', 'json'],
    ['application/problem+json;q=0.5, application/json', 'json'],
    ['application/problem+json;q=0', 'json'],
    ['application/problem+json', 'problem'],
    ['application/problem+json, application/json', 'problem'],
    ['application/json;q=0.9, application/problem+json', 'problem'],
    ['application/*, application/problem+json', 'problem'],
    ['Application/Problem+JSON', 'problem'],
  ] as const)('a 429 to Accept %p: the %s body', async (accept, kind) => {
    const res = await refused(accept);
    expect(res.headers['retry-after']).toBe('1');
    expect(res.headers.vary).toBe('Accept');
    if (kind === 'json') {
      expect([res.headers['content-type'], res.text]).toEqual([JSON_TYPE, LIMITED]);
    } else {
      expect([res.headers['content-type'], res.text]).toEqual([PROBLEM_TYPE, quotaExceeded(['GET /v1/bots/:id'])]);
    }
  });

  it('an endpoint of several limits names only the policies the request is over', async () => {
    const rows: EndpointRow[] = [
      { method: 'GET', path: '/v1/things/:id', limit: 2, windowMs: 1000 },
      { method: 'GET', path: '/v1/things/:id', limit: 3, windowMs: 60_000 },
    ];
    const served = app(rows);
    const get = () => request(served).get('/v1/things/1').set('Accept', PROBLEM_TYPE);
    await get().expect(200);
    await get().expect(200);
    expect((await get().expect(429)).text).toBe(quotaExceeded(['GET /v1/things/:id per 1s']));
    jest.setSystemTime(T0 + 1000);
    await get().expect(200);
    expect((await get().expect(429)).text).toBe(quotaExceeded(['GET /v1/things/:id per 60s'], 59));
  });

  it("a granted client's policy is named as its headers name it", async () => {
    const served = app('B', { grants: { 'Bot x': { multiplier: 1.5 } } });
    const get = () => request(served).get('/v1/bots/1').set('Authorization', 'Bot x').set('Accept', PROBLEM_TYPE);
    for (let i = 0; i < 3; i++) await get().expect(200);
    const res = await get().expect(429);
    expect(res.headers.ratelimit).toBe('"GET /v1/bots/:id (x1.5)";r=0;t=1');
    expect(res.text).toBe(quotaExceeded(['GET /v1/bots/:id (x1.5)']));
  });

  it.each([
    ['on an endpoint of the table', '/v1/bots/1'],
    ['on a path of the site outside the table', '/elsewhere'],
  ])('a 403 to a banned client %s: problem details when asked for, else the body as before', async (_where, path) => {
    const served = app();
    served.get('/elsewhere', (_req, res) => res.json({}));
    await (served.locals.limiter as ListingLimitsMiddleware).ban({ token: 'Bot x' }, { duration: 60_000 });
    const get = (accept?: string) => {
      const req = request(served).get(path).set('Authorization', 'Bot x');
      return accept ? req.set('Accept', accept) : req;
    };
    const plain = await get().expect(403);
    expect([plain.headers['content-type'], plain.headers['retry-after'], plain.headers.vary, plain.text]).toEqual([
      JSON_TYPE,
      '60',
      'Accept',
      BANNED_BODY,
    ]);
    const problem = await get(`${PROBLEM_TYPE}, application/json;q=0.9`).expect(403);
    expect([
      problem.headers['content-type'],
      problem.headers['retry-after'],
      problem.headers.vary,
      problem.text,
    ]).toEqual([PROBLEM_TYPE, '60', 'Accept', BANNED_PROBLEM]);
  });

  it.each([
    [undefined, 'Accept'],
    ['Origin', 'Origin, Accept'],
    ['Accept-Encoding', 'Accept-Encoding, Accept'],
    ['Origin, accept', 'Origin, accept'],
    ['*', '*'],
  ])(
    "Vary: %p set before the limiter becomes %p on its 429 and 403; an allowed answer's is the app's",
    async (before, after) => {
      const served = createApp({
        express,
        setup: (a) =>
          a.use((_req, res, next) => {
            if (before !== undefined) res.setHeader('Vary', before);
            next();
          }),
      });
      const limits = served.locals.limiter as ListingLimitsMiddleware;
      made.push(limits);
      const get = (token: string) => request(served).get('/v1/bots/1').set('Authorization', token);
      expect((await get('Bot x').expect(200)).headers.vary).toBe(before);
      await get('Bot x').expect(200);
      expect((await get('Bot x').expect(429)).headers.vary).toBe(after);
      await limits.ban({ token: 'Bot y' }, { duration: 60_000 });
      expect((await get('Bot y').expect(403)).headers.vary).toBe(after);
    },
  );
});

it("the README documents the package's ban type under the heading its URI points to", () => {
  const readme = readFileSync(join(__dirname, '..', 'README.md'), 'utf8');
  const fragment = BANNED.slice(BANNED.indexOf('#') + 1);
  const headings = [...readme.matchAll(/^#+ (.*)$/gm)].map(([, text]) =>
    (text as string)
      .toLowerCase()
      .replace(/[^\w\s-]/g, '')
      .replace(/\s/g, '-'),
  );
  expect(headings).toContain(fragment);
  expect(readme).toContain(
    BANNED_PROBLEM.replace(until, '2026-01-01T00:10:00.000Z').replace('"retryAfter":60', '"retryAfter":600'),
  );
});
