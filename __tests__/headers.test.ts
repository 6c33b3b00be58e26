// Header values at the edges of a window: rounding, the floor of Retry-After, sf-string quoting.
import { ServerResponse } from 'node:http';
import { headerTemplate, retryAfterSeconds, secondsUntil, setRateLimitHeaders, sfString } from '../lib/headers';

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

describe('setRateLimitHeaders', () => {
  const headersFor = (remaining: number, msBeforeNext: number, now: number) => {
    const res = new ServerResponse({ method: 'GET', httpVersionMajor: 1, httpVersionMinor: 1, headers: {} } as never);
    setRateLimitHeaders(res, headerTemplate('GET /v1/bots', 25, 60_000), remaining, msBeforeNext, now);
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
