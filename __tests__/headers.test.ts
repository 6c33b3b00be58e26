// Header values at the edges of a window (rounding, the floor of Retry-After, sf-string quoting), and stacked limiters.
import { ServerResponse } from 'node:http';
import express from 'express';
import request from 'supertest';
import { listingLimits } from '../lib';
import {
  headerTemplate,
  headerWriter,
  retryAfterSeconds,
  secondsText,
  secondsUntil,
  sfString,
} from '../lib/contract/headers';
import { T0, useFakeClock } from './helpers/stores';

describe('seconds until the window ends', () => {
  it.each([
    { ms: -1, until: 0, retryAfter: 1 },
    { ms: 0, until: 0, retryAfter: 1 },
    { ms: 1, until: 1, retryAfter: 1 },
    { ms: 999, until: 1, retryAfter: 1 },
    { ms: 1000, until: 1, retryAfter: 1 },
    { ms: 1001, until: 2, retryAfter: 2 },
    { ms: 119_999, until: 120, retryAfter: 120 },
  ])('$ms ms → t=$until, Retry-After $retryAfter', ({ ms, until, retryAfter }) => {
    expect(secondsUntil(ms)).toBe(until);
    expect(retryAfterSeconds(ms)).toBe(retryAfter);
  });
});

describe('X-RateLimit-Reset-After: the milliseconds left in seconds, as String(ms / 1000) writes them', () => {
  it.each([
    [0, '0'],
    [1, '0.001'],
    [10, '0.01'],
    [50, '0.05'],
    [100, '0.1'],
    [120, '0.12'],
    [123, '0.123'],
    [999, '0.999'],
    [1000, '1'],
    [1005, '1.005'],
    [59_870, '59.87'],
    [86_400_000, '86400'],
    [2 ** 31 - 1, '2147483.647'],
    [2 ** 31, '2147483.648'],
    [1.5, '0.0015'],
    [-1, '-0.001'],
    [Number.NaN, 'NaN'],
  ])('%s ms → %s', (ms, text) => {
    expect(secondsText(ms)).toBe(text);
  });

  it('writes every whole millisecond of a day as String(ms / 1000) does', () => {
    const differing: number[] = [];
    for (let ms = 0; ms <= 86_400_000; ms += ms < 100_000 ? 1 : 997)
      if (secondsText(ms) !== String(ms / 1000)) differing.push(ms);
    expect(differing).toEqual([]);
  });
});

describe('the headers of draft 10, the default', () => {
  const headersFor = (remaining: number, msBeforeNext: number, now: number) => {
    const res = new ServerResponse({ method: 'GET', httpVersionMajor: 1, httpVersionMinor: 1, headers: {} } as never);
    headerWriter('draft-10').one(res, headerTemplate('GET /v1/bots', 25, 60_000), remaining, msBeforeNext, now, 't:x');
    return res.getHeaders();
  };

  it.each([
    { ms: 60_000, now: 1_767_225_600_000, reset: '1767225660', resetAfter: '60', t: 60 },
    { ms: 250, now: 1_767_225_600_000, reset: '1767225601', resetAfter: '0.25', t: 1 },
    { ms: 1, now: 1_767_225_600_500, reset: '1767225601', resetAfter: '0.001', t: 1 },
    { ms: 0, now: 1_767_225_600_000, reset: '1767225600', resetAfter: '0', t: 0 },
    { ms: -1, now: 1_767_225_600_000, reset: '1767225600', resetAfter: '0', t: 0 },
  ])('$ms ms before the end, at $now', ({ ms, now, reset, resetAfter, t }) => {
    expect(headersFor(3, ms, now)).toEqual({
      'ratelimit-policy': '"GET /v1/bots";q=25;w=60',
      ratelimit: `"GET /v1/bots";r=3;t=${t}`,
      'x-ratelimit-limit': '25',
      'x-ratelimit-remaining': '3',
      'x-ratelimit-reset': reset,
      'x-ratelimit-reset-after': resetAfter,
      'x-ratelimit-bucket': 'GET /v1/bots',
    });
  });
});

it.each([
  ['GET /v1/bots', '"GET /v1/bots"'],
  ['GET /v1/say"hi"', '"GET /v1/say\\"hi\\""'],
  ['GET /v1/a\\b', '"GET /v1/a\\\\b"'],
])('sfString(%j) is %s', (value, quoted) => {
  expect(sfString(value)).toBe(quoted);
});

describe('stacked limiters keep every policy', () => {
  beforeEach(useFakeClock);
  afterEach(() => jest.useRealTimers());
  const reset = (s: number) => String(T0 / 1000 + s);

  /** A custom row of 3 per minute mounted first, then listing B (GET /v1/bots/:id: 2 per second). */
  function stacked() {
    const app = express();
    app.use(listingLimits([{ method: 'GET', path: '/v1/bots/:botId', limit: 3, windowMs: 60_000 }]));
    app.use(listingLimits('B'));
    app.get('/v1/bots/:id', (_req, res) => {
      res.json({ ok: true });
    });
    return app;
  }

  it.each([
    {
      n: 1,
      status: 200,
      ratelimit: '"GET /v1/bots/:botId";r=2;t=60, "GET /v1/bots/:id";r=1;t=1',
      legacy: ['2', '1', reset(1), '1', 'GET /v1/bots/:id'],
      retryAfter: undefined,
    },
    {
      n: 2,
      status: 200,
      ratelimit: '"GET /v1/bots/:botId";r=1;t=60, "GET /v1/bots/:id";r=0;t=1',
      legacy: ['2', '0', reset(1), '1', 'GET /v1/bots/:id'],
      retryAfter: undefined,
    },
    // The second limiter refuses while the first has nothing left for a minute: the legacy fields and Retry-After
    // show the first, since retrying after one second would only meet its refusal.
    {
      n: 3,
      status: 429,
      ratelimit: '"GET /v1/bots/:botId";r=0;t=60, "GET /v1/bots/:id";r=0;t=1',
      legacy: ['3', '0', reset(60), '60', 'GET /v1/bots/:botId'],
      retryAfter: '60',
    },
  ])('request $n: both policies in the IETF fields, the most restrictive in the legacy ones', async (row) => {
    const app = stacked();
    let res: request.Response | undefined;
    for (let i = 1; i <= row.n; i++) res = await request(app).get('/v1/bots/7');
    expect(res?.status).toBe(row.status);
    expect(res?.headers['ratelimit-policy']).toBe('"GET /v1/bots/:botId";q=3;w=60, "GET /v1/bots/:id";q=2;w=1');
    expect(res?.headers.ratelimit).toBe(row.ratelimit);
    const { headers } = res as request.Response;
    expect([
      headers['x-ratelimit-limit'],
      headers['x-ratelimit-remaining'],
      headers['x-ratelimit-reset'],
      headers['x-ratelimit-reset-after'],
      headers['x-ratelimit-bucket'],
    ]).toEqual(row.legacy);
    expect(headers['retry-after']).toBe(row.retryAfter);
  });
});
