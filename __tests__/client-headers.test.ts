// What the client reads from an answer's rate-limit fields: every policy, and nothing malformed or absurd.
import { readServerLimits, retryAfterMs } from '../lib/contract/read-headers';

const NOW = Date.UTC(2026, 0, 1);

describe('readServerLimits', () => {
  const policy = (name: string, q: string, w: string) => `"${name}";q=${q};w=${w}`;
  it.each([
    ['no rate-limit field: a server that does not limit this client', {}, undefined],
    [
      'one policy',
      { 'RateLimit-Policy': policy('GET /v1/bots/:id', '2', '1'), RateLimit: '"GET /v1/bots/:id";r=1;t=1' },
      [{ limit: 2, windowMs: 1000, remaining: 1, resetMs: 1000 }],
    ],
    [
      'the milliseconds of X-RateLimit-Reset-After, when its bucket is the policy',
      {
        'RateLimit-Policy': policy('b', '2', '1'),
        RateLimit: '"b";r=0;t=1',
        'X-RateLimit-Bucket': 'b',
        'X-RateLimit-Reset-After': '0.981',
      },
      [{ limit: 2, windowMs: 1000, remaining: 0, resetMs: 981 }],
    ],
    [
      'several policies, in order (an endpoint of several limits)',
      {
        'RateLimit-Policy': `${policy('x per 1s', '2', '1')}, ${policy('x per 2s', '3', '2')}`,
        RateLimit: '"x per 1s";r=1;t=1, "x per 2s";r=0;t=2',
      },
      [
        { limit: 2, windowMs: 1000, remaining: 1, resetMs: 1000 },
        { limit: 3, windowMs: 2000, remaining: 0, resetMs: 2000 },
      ],
    ],
    [
      'a policy named in RateLimit only',
      { RateLimit: '"x";r=4;t=3' },
      [{ limit: undefined, windowMs: undefined, remaining: 4, resetMs: 3000 }],
    ],
    [
      'absurd or malformed q and w: ignored',
      {
        'RateLimit-Policy': `${policy('a', '0', '999999999999999')}, ${policy('b', '2.5', '0')}, ${policy('c', '2000000', '-1')}`,
        RateLimit: '"a";r=0;t=1, "b";r=0;t=1, "c";r=0;t=1',
      },
      Array(3).fill({ limit: undefined, windowMs: undefined, remaining: 0, resetMs: 1000 }),
    ],
    [
      'a window of half a second',
      { 'RateLimit-Policy': policy('a', '1', '0.5'), RateLimit: '"a";r=0;t=1' },
      [{ limit: 1, windowMs: 500, remaining: 0, resetMs: 1000 }],
    ],
    [
      'policies whose r or t is missing, negative, not whole or beyond a year: skipped, nothing read',
      { RateLimit: '"a";t=1, "b";r=-1;t=1, "c";r=1.5;t=1, "d";r=1;t=99999999999, "e";r=1e400' },
      [],
    ],
    ['fields that do not parse: nothing read', { RateLimit: 'garbage;;;', 'RateLimit-Policy': '"' }, []],
    [
      'legacy fields alone',
      { 'X-RateLimit-Limit': '5', 'X-RateLimit-Remaining': '3', 'X-RateLimit-Reset-After': '2.5' },
      [{ limit: 5, windowMs: undefined, remaining: 3, resetMs: 2500 }],
    ],
    [
      'legacy fields with an epoch reset',
      { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(NOW / 1000 + 10) },
      [{ limit: undefined, windowMs: undefined, remaining: 0, resetMs: 10_000 }],
    ],
    [
      'legacy fields that do not parse: nothing read',
      { 'X-RateLimit-Limit': 'NaN', 'X-RateLimit-Remaining': '-5', 'X-RateLimit-Reset-After': 'soon' },
      [],
    ],
    [
      'a legacy reset beyond a year: nothing read',
      { 'X-RateLimit-Remaining': '1', 'X-RateLimit-Reset-After': '99999999999' },
      [],
    ],
  ])('%s', (_name, fields, expected) => {
    expect(readServerLimits(new Headers(fields as Record<string, string>), NOW)).toEqual(expected);
  });

  it('reads at most 16 policies of one answer', () => {
    const items = Array.from({ length: 40 }, (_, i) => `"p${i}";r=${i};t=1`).join(', ');
    expect(readServerLimits(new Headers({ RateLimit: items }), NOW)?.map((limit) => limit.remaining)).toEqual(
      Array.from({ length: 16 }, (_, i) => i),
    );
  });
});

describe('retryAfterMs', () => {
  it.each([
    ['120', 120_000],
    [' 5 ', 5000],
    ['0', 0],
    ['99999999', 99_999_999_000],
    [new Date(NOW + 30_000).toUTCString(), 30_000],
    [new Date(NOW - 30_000).toUTCString(), 0],
    ['Fri, 31 Dec 9999 23:59:59 GMT', Date.UTC(9999, 11, 31, 23, 59, 59) - NOW],
    ['soon', undefined],
    ['1.5', undefined],
    ['-1', undefined],
    ['9999999999999999', undefined],
    ['', undefined],
  ])('Retry-After: %j is %j ms', (value, expected) => {
    expect(retryAfterMs(new Headers(value === '' ? {} : { 'Retry-After': value }), NOW)).toBe(expected);
  });
});
