// What the client and the verifier read from an answer's rate-limit fields, in every dialect servers write them:
// every policy, and nothing malformed or absurd, which is skipped and listed.
import { MAX_FIELD_CHARS, readFields, readRetryAfter, readServerLimits } from '../lib/contract/read-headers';
import { retryAfterMs } from '../lib/client/sender';

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
    [
      'draft 8, as express-rate-limit writes it',
      {
        'RateLimit-Policy': '"5-in-1sec"; q=5; w=1; pk=:MTJjYTE3YjQ5YWYy:',
        RateLimit: '"5-in-1sec"; r=4; t=1',
      },
      [{ limit: 5, windowMs: 1000, remaining: 4, resetMs: 1000 }],
    ],
    [
      'draft 7: limit=, remaining=, reset=, and the window of RateLimit-Policy',
      { 'RateLimit-Policy': '5;w=1', RateLimit: 'limit=5, remaining=4, reset=1' },
      [{ limit: 5, windowMs: 1000, remaining: 4, resetMs: 1000 }],
    ],
    [
      'draft 6, as express-rate-limit writes it',
      {
        'RateLimit-Policy': '15;w=15',
        'RateLimit-Limit': '15',
        'RateLimit-Remaining': '14',
        'RateLimit-Reset': '15',
      },
      [{ limit: 15, windowMs: 15_000, remaining: 14, resetMs: 15_000 }],
    ],
    [
      'draft 6, as @fastify/rate-limit writes it: no policy, so no window',
      { 'RateLimit-Limit': '2', 'RateLimit-Remaining': '0', 'RateLimit-Reset': '1' },
      [{ limit: 2, windowMs: undefined, remaining: 0, resetMs: 1000 }],
    ],
    [
      'X-RateLimit-Reset in seconds until the reset, as @fastify/rate-limit writes it',
      { 'X-RateLimit-Limit': '30', 'X-RateLimit-Remaining': '29', 'X-RateLimit-Reset': '15' },
      [{ limit: 30, windowMs: undefined, remaining: 29, resetMs: 15_000 }],
    ],
    [
      "X-RateLimit-Reset as a Unix time, against the answer's Date (the server's clock, 5 s behind this one)",
      {
        'X-RateLimit-Remaining': '0',
        'X-RateLimit-Reset': String(NOW / 1000 + 10),
        Date: new Date(NOW - 5000).toUTCString(),
      },
      [{ limit: undefined, windowMs: undefined, remaining: 0, resetMs: 15_000 }],
    ],
    [
      'X-RateLimit-Reset as a Unix time, against the arrival when Date puts it far in the past (a faked clock)',
      {
        'X-RateLimit-Remaining': '0',
        'X-RateLimit-Reset': String(NOW / 1000 + 10),
        Date: new Date(NOW + 300 * 24 * 3600 * 1000).toUTCString(),
      },
      [{ limit: undefined, windowMs: undefined, remaining: 0, resetMs: 10_000 }],
    ],
    [
      'X-RateLimit-Reset-After before X-RateLimit-Reset: its milliseconds are exact',
      { 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': String(NOW / 1000 + 1), 'X-RateLimit-Reset-After': '0.25' },
      [{ limit: undefined, windowMs: undefined, remaining: 0, resetMs: 250 }],
    ],
    [
      'the IETF fields before the others, when an answer carries several dialects',
      {
        'RateLimit-Policy': '"a";q=10;w=60',
        RateLimit: '"a";r=9;t=60',
        'X-RateLimit-Limit': '10',
        'X-RateLimit-Remaining': '9',
        'X-RateLimit-Reset': '60',
      },
      [{ limit: 10, windowMs: 60_000, remaining: 9, resetMs: 60_000 }],
    ],
    [
      'hostile values of every dialect: nothing read',
      {
        RateLimit: 'limit=NaN, remaining=-1, reset=1e999',
        'RateLimit-Limit': '99999999999999999999',
        'RateLimit-Remaining': '-3',
        'RateLimit-Reset': 'Infinity',
        'X-RateLimit-Remaining': '1',
        'X-RateLimit-Reset': '1',
        'X-RateLimit-Reset-After': '-1',
      },
      [{ limit: undefined, windowMs: undefined, remaining: 1, resetMs: 1000 }],
    ],
    [
      `a field over ${MAX_FIELD_CHARS} characters: not parsed, nothing read`,
      { RateLimit: `"a";r=1;t=1, ${'"b";r=1;t=1, '.repeat(400)}"c";r=1;t=1` },
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

describe('readFields', () => {
  it('lists what it skipped, with why, and never throws, whatever the values', () => {
    const long = 'x'.repeat(5000);
    const read = readFields(
      new Headers({
        'RateLimit-Policy': '"a";q=-4;w=abc, "b";q=2000000;w=999999999999',
        RateLimit: long,
        'X-RateLimit-Limit': 'NaN',
        'X-RateLimit-Remaining': '-5',
        'X-RateLimit-Reset': String(NOW),
        'X-RateLimit-Reset-After': 'soon',
      }),
      NOW,
    );
    expect(read.skipped).toEqual([
      {
        field: 'RateLimit-Policy',
        value: expect.any(String),
        why: 'q=-4 is not a whole number of requests from 1 to 1,000,000',
      },
      {
        field: 'RateLimit-Policy',
        value: expect.any(String),
        why: 'w=abc is not a number of seconds from 0 (excluded) to a year',
      },
      {
        field: 'RateLimit-Policy',
        value: expect.any(String),
        why: 'q=2000000 is not a whole number of requests from 1 to 1,000,000',
      },
      {
        field: 'RateLimit-Policy',
        value: expect.any(String),
        why: 'w=999999999999 is not a number of seconds from 0 (excluded) to a year',
      },
      { field: 'RateLimit', value: long, why: '5,000 characters, more than 4,096' },
      { field: 'X-RateLimit-Reset-After', value: 'soon', why: 'not a number of seconds from 0 to a year' },
      { field: 'X-RateLimit-Reset', value: String(NOW), why: 'a Unix time in the past, or more than a year ahead' },
      { field: 'X-RateLimit-Limit', value: 'NaN', why: 'not a whole number of requests from 0 to 1,000,000' },
      { field: 'X-RateLimit-Remaining', value: '-5', why: 'not a whole number of requests from 0 to 1,000,000' },
    ]);
    expect(read.present).toEqual([
      'RateLimit-Policy',
      'RateLimit',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'X-RateLimit-Reset-After',
    ]);
  });

  it('skips a field too long to read once, before any parser sees it', () => {
    const long = `"a";q=1;w=1, ${'"b";q=1;w=1, '.repeat(400)}"c";q=1;w=1`;
    expect(readFields(new Headers({ 'RateLimit-Policy': long }), NOW)).toEqual({
      present: ['RateLimit-Policy'],
      policies: [],
      states: [],
      skipped: [{ field: 'RateLimit-Policy', value: long, why: '5,224 characters, more than 4,096' }],
    });
  });

  it('tells which dialect each number came from, and from which field and key', () => {
    const read = readFields(
      new Headers({ 'RateLimit-Policy': '5;w=1', RateLimit: 'limit=5, remaining=4, reset=1' }),
      NOW,
    );
    expect(read.policies).toEqual([
      {
        dialect: 'draft-7',
        name: undefined,
        quota: { field: 'RateLimit-Policy', key: undefined, value: 5 },
        window: { field: 'RateLimit-Policy', key: 'w', value: 1000 },
      },
    ]);
    expect(read.states).toEqual([
      {
        dialect: 'draft-7',
        name: undefined,
        quota: { field: 'RateLimit', key: 'limit', value: 5 },
        remaining: { field: 'RateLimit', key: 'remaining', value: 4 },
        resets: [{ field: 'RateLimit', key: 'reset', value: 1000 }],
      },
    ]);
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

describe('readRetryAfter', () => {
  it.each([
    ['seconds', { 'Retry-After': '7' }, { ms: 7000, date: false }],
    [
      "an HTTP date, against the answer's Date",
      { 'Retry-After': new Date(NOW + 30_000).toUTCString(), Date: new Date(NOW + 10_000).toUTCString() },
      { ms: 20_000, date: true },
    ],
    ['absent', {}, undefined],
    ['neither', { 'Retry-After': 'soon' }, { skipped: 'neither whole seconds nor an HTTP date' }],
    ['very long', { 'Retry-After': '9'.repeat(100) }, { skipped: '100 characters, not seconds nor an HTTP date' }],
  ])('%s', (_name, fields, expected) => {
    expect(readRetryAfter(new Headers(fields as Record<string, string>), NOW)).toEqual(expected);
  });
});
