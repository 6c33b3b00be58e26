// The memory counter, and MemoryLimiter its rate-limiter-flexible face: contracts on a fake clock, sweep, no timers.
import { RateLimiterRes, RateLimiterUnion } from 'rate-limiter-flexible';
import { ListingLimitsError } from '../lib';
import { MAX_DURATION_MS } from '../lib/shared/check';
import { MemoryLimiter } from '../lib/stores/memory/limiter';
import { MemoryCounter } from '../lib/stores/memory/counter';
import { memoryCounter } from '../lib/stores/memory/store';
import { T0, useFakeClock } from './helpers/stores';

const SECOND = 1000;
const DAY = 24 * 3600 * SECOND;
const MAX_SECONDS = MAX_DURATION_MS / SECOND;

/** A settled call, as data: `ok` false for a rejection with a RateLimiterRes. */
interface Settled {
  ok: boolean;
  res: ReturnType<RateLimiterRes['toJSON']> | null;
}

async function settle(call: Promise<RateLimiterRes | null>): Promise<Settled> {
  try {
    const res = await call;
    return { ok: true, res: res && res.toJSON() };
  } catch (rejection) {
    if (!(rejection instanceof RateLimiterRes)) throw rejection;
    return { ok: false, res: rejection.toJSON() };
  }
}

/** A RateLimiterRes as data: [remainingPoints, msBeforeNext, consumedPoints, isFirstInDuration]. */
function res(remainingPoints: number, msBeforeNext: number, consumedPoints: number, isFirstInDuration: boolean) {
  return { remainingPoints, msBeforeNext, consumedPoints, isFirstInDuration };
}

const advance = (ms: number) => jest.setSystemTime(Date.now() + ms);

beforeEach(useFakeClock);
afterEach(() => {
  jest.useRealTimers();
  jest.restoreAllMocks();
});

describe('methods, as RateLimiterMemory resolves and rejects them (2 points per 1 s)', () => {
  type Step = (limiter: MemoryLimiter) => Promise<RateLimiterRes | null>;
  const cases: { name: string; before?: Step[]; wait?: number; call: Step; expected: Settled }[] = [
    {
      name: 'consume: first in a window',
      call: (l) => l.consume('a'),
      expected: { ok: true, res: res(1, 1000, 1, true) },
    },
    {
      name: 'consume: the last point, 300 ms later',
      before: [(l) => l.consume('a')],
      wait: 300,
      call: (l) => l.consume('a'),
      expected: { ok: true, res: res(0, 700, 2, false) },
    },
    {
      name: 'consume: over the limit rejects with remainingPoints 0',
      before: [(l) => l.consume('a'), (l) => l.consume('a')],
      wait: 999,
      call: (l) => l.consume('a'),
      expected: { ok: false, res: res(0, 1, 3, false) },
    },
    {
      name: 'consume: several points at once',
      call: (l) => l.consume('a', 3),
      expected: { ok: false, res: res(0, 1000, 3, true) },
    },
    {
      name: 'consume: a window that has ended starts anew',
      before: [(l) => l.consume('a', 5)],
      wait: 1000,
      call: (l) => l.consume('a'),
      expected: { ok: true, res: res(1, 1000, 1, true) },
    },
    {
      name: 'consume: customDuration sets the length of the window it starts',
      call: (l) => l.consume('a', 1, { customDuration: 60 }),
      expected: { ok: true, res: res(1, 60_000, 1, true) },
    },
    {
      name: 'consume: customDuration does not change a window already started',
      before: [(l) => l.consume('a')],
      call: (l) => l.consume('a', 1, { customDuration: 60 }),
      expected: { ok: true, res: res(0, 1000, 2, false) },
    },
    {
      name: 'consume: numbers and strings are one key',
      before: [(l) => l.consume(7)],
      call: (l) => l.consume('7'),
      expected: { ok: true, res: res(0, 1000, 2, false) },
    },
    { name: 'get: null without a counter', call: (l) => l.get('a'), expected: { ok: true, res: null } },
    {
      name: 'get: the counter, never first in its window',
      before: [(l) => l.consume('a')],
      wait: 250,
      call: (l) => l.get('a'),
      expected: { ok: true, res: res(1, 750, 1, false) },
    },
    {
      name: 'get: null once the window has ended',
      before: [(l) => l.consume('a')],
      wait: 1000,
      call: (l) => l.get('a'),
      expected: { ok: true, res: null },
    },
    {
      name: 'set: points for secDuration, remainingPoints 0 as RateLimiterMemory',
      call: (l) => l.set('a', 1, 10),
      expected: { ok: true, res: res(0, 10_000, 1, false) },
    },
    {
      name: 'set: then get',
      before: [(l) => l.set('a', 1, 10)],
      wait: 4000,
      call: (l) => l.get('a'),
      expected: { ok: true, res: res(1, 6000, 1, false) },
    },
    {
      name: 'set: replaces a window already started',
      before: [(l) => l.consume('a', 2)],
      call: (l) => l.set('a', 0, 5),
      expected: { ok: true, res: res(0, 5000, 0, false) },
    },
    {
      name: 'set: 0 seconds never expires',
      call: (l) => l.set('a', 1, 0),
      expected: { ok: true, res: res(0, -1, 1, false) },
    },
    {
      name: 'set: 0 seconds, a year later',
      before: [(l) => l.set('a', 1, 0)],
      wait: MAX_DURATION_MS,
      call: (l) => l.get('a'),
      expected: { ok: true, res: res(1, -1, 1, false) },
    },
    {
      name: "set: a negative duration is the limiter's",
      call: (l) => l.set('a', 1, -1),
      expected: { ok: true, res: res(0, 1000, 1, false) },
    },
    {
      name: 'set: over the limit, consume rejects until it ends',
      before: [(l) => l.set('a', 3, 60)],
      wait: 59_999,
      call: (l) => l.consume('a'),
      expected: { ok: false, res: res(0, 1, 4, false) },
    },
    {
      name: 'set: over the limit, ends on time',
      before: [(l) => l.set('a', 3, 60)],
      wait: 60_000,
      call: (l) => l.consume('a'),
      expected: { ok: true, res: res(1, 1000, 1, true) },
    },
  ];

  it.each(cases)('$name', async ({ before = [], wait = 0, call, expected }) => {
    const limiter = new MemoryLimiter({ points: 2, duration: 1 });
    for (const step of before) await settle(step(limiter));
    advance(wait);
    expect(await settle(call(limiter))).toEqual(expected);
  });

  it.each([
    { name: 'a live counter', wait: 999, expected: true },
    { name: 'an ended window', wait: 1000, expected: false },
  ])('delete: resolves $expected for $name, and forgets it', async ({ wait, expected }) => {
    const limiter = new MemoryLimiter({ points: 2, duration: 1 });
    await limiter.consume('a');
    advance(wait);
    expect(await limiter.delete('a')).toBe(expected);
    expect(await limiter.delete('a')).toBe(false);
    expect(limiter.size).toBe(0);
    expect((await limiter.consume('a')).isFirstInDuration).toBe(true);
  });
});

describe('countNow()', () => {
  // Requests from one client: the ms the clock moves before each, and [allowed, remaining, consumed, msBeforeNext].
  const steps = [
    { advance: 0, expected: [true, 1, 1, 1000] },
    { advance: 300, expected: [true, 0, 2, 700] },
    { advance: 100, expected: [false, 0, 3, 600] },
    { advance: 599, expected: [false, 0, 4, 1] },
    { advance: 1, expected: [true, 1, 1, 1000] },
    { advance: 1000, expected: [true, 1, 1, 1000] },
    { advance: 999, expected: [true, 0, 2, 1] },
  ];

  it('counts as consume() does, step by step', async () => {
    const promised = new MemoryLimiter({ points: 2, duration: 1 });
    const immediate = new MemoryLimiter({ points: 2, duration: 1 });
    for (const [step, { advance: ms, expected }] of steps.entries()) {
      advance(ms);
      const { ok, res: r } = await settle(promised.consume('a'));
      const { count, resetAt } = immediate.countNow('a');
      const now = [count <= immediate.points, Math.max(immediate.points - count, 0), count, resetAt - Date.now()];
      const viaPromise = [ok, r?.remainingPoints, r?.consumedPoints, r?.msBeforeNext];
      expect({ step, now, viaPromise }).toEqual({ step, now: expected, viaPromise: expected });
    }
  });

  it('returns the live counter: read it at once, the next call changes it', () => {
    const limiter = new MemoryLimiter({ points: 2, duration: 1 });
    const first = limiter.countNow('a');
    expect(first.count).toBe(1);
    limiter.countNow('a');
    expect(first.count).toBe(2);
    expect(first.resetAt).toBe(T0 + 1000);
  });

  it('shares its counters with the promise methods', async () => {
    const limiter = new MemoryLimiter({ points: 2, duration: 1 });
    await limiter.set('a', 3, 5);
    expect(limiter.countNow('a')).toEqual({ count: 4, resetAt: T0 + 5000 });
    expect(limiter.countsNow).toBe(true);
  });
});

describe('long durations (30 days; a Node timer fires at once from 2^31 ms, about 24.8 days)', () => {
  const MONTH = 30 * DAY;
  // The clock moves by `wait` before each check; all three end exactly at 30 days.
  const checks = [
    { wait: 0, at: '0', live: true },
    { wait: 50, at: '50 ms', live: true },
    { wait: 29 * DAY - 50, at: '29 days', live: true },
    { wait: DAY - 1, at: '30 days less 1 ms', live: true },
    { wait: 1, at: '30 days', live: false },
  ];

  it('a 30-day window holds until exactly 30 days', async () => {
    const limiter = new MemoryLimiter({ points: 100, duration: MONTH / SECOND });
    for (const { wait, at, live } of checks) {
      advance(wait);
      const r = await limiter.consume('a');
      const elapsed = Date.now() - T0;
      expect({ at, first: r.isFirstInDuration, msBeforeNext: r.msBeforeNext }).toEqual({
        at,
        first: !live || elapsed === 0,
        msBeforeNext: live ? MONTH - elapsed : MONTH,
      });
    }
  });

  it('a 30-day set() holds until exactly 30 days', async () => {
    const limiter = new MemoryLimiter({ points: 2, duration: 1 });
    await limiter.set('a', 1, MONTH / SECOND);
    for (const { wait, at, live } of checks) {
      advance(wait);
      const r = await limiter.get('a');
      const expected = live ? MONTH - (Date.now() - T0) : null;
      expect({ at, msBeforeNext: r?.msBeforeNext ?? null }).toEqual({ at, msBeforeNext: expected });
    }
  });

  it('a 30-day set() over the limit refuses until exactly 30 days', async () => {
    const limiter = new MemoryLimiter({ points: 2, duration: 1 });
    await limiter.set('a', 3, MONTH / SECOND);
    for (const { wait, at, live } of checks) {
      advance(wait);
      const { ok } = await settle(limiter.consume('a'));
      expect({ at, blocked: !ok }).toEqual({ at, blocked: live });
    }
  });

  it('accepts exactly one year', async () => {
    const limiter = new MemoryLimiter({ points: 1, duration: MAX_SECONDS });
    expect((await limiter.consume('a')).msBeforeNext).toBe(MAX_DURATION_MS);
    expect((await limiter.set('b', 2, MAX_SECONDS)).msBeforeNext).toBe(MAX_DURATION_MS);
  });
});

describe('options that cannot work', () => {
  it.each([
    {
      options: { points: 1, duration: MAX_SECONDS + 1 },
      field: 'duration',
      message: /duration must be a number of seconds from 0 to 31536000 \(one year\); got 31536001\./,
    },
    { options: { points: 1, duration: -1 }, field: 'duration', message: /got -1\./ },
    { options: { points: 1, duration: Number.NaN }, field: 'duration', message: /got NaN\./ },
    {
      options: { points: Number.POSITIVE_INFINITY, duration: 1 },
      field: 'points',
      message: /points must be a finite number/,
    },
    { options: { points: 1, duration: 1, keyPrefix: 7 }, field: 'keyPrefix', message: /keyPrefix must be a string/ },
    {
      options: { points: 1, duration: 1, blockDuration: 60 },
      field: 'blockDuration',
      message: /blockDuration is not supported by the memory store\.$/,
    },
    { options: { points: 1, duration: 1, execEvenly: true }, field: 'execEvenly', message: /not supported/ },
  ])('refuses $field: $options', ({ options, field, message }) => {
    let error: unknown;
    try {
      new MemoryLimiter(options as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ListingLimitsError);
    expect(error).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      field,
      message: expect.stringMatching(/^MemoryLimiter: /),
    });
    expect((error as Error).message).toMatch(message);
  });

  it('refuses a duration over one year set later', () => {
    const limiter = new MemoryLimiter({ points: 1, duration: 1 });
    expect(() => {
      limiter.duration = MAX_SECONDS + 1;
    }).toThrow(ListingLimitsError);
    expect(limiter.duration).toBe(1);
  });

  const overOneYear = (what: string, got: string) =>
    `MemoryLimiter: ${what} must be at most 31536000 seconds (one year); got ${got}.`;
  it.each([
    {
      call: (l: MemoryLimiter) => l.set('a', 1, MAX_SECONDS + 1),
      message: overOneYear('set(): secDuration', '31536001'),
    },
    { call: (l: MemoryLimiter) => l.set('a', 1, Number.NaN), message: overOneYear('set(): secDuration', 'NaN') },
    {
      call: (l: MemoryLimiter) => l.consume('a', 1, { customDuration: MAX_SECONDS + 1 }),
      message: overOneYear('customDuration', '31536001'),
    },
  ])('rejects a duration over one year given to a method: $message', async ({ call, message }) => {
    const limiter = new MemoryLimiter({ points: 1, duration: 1 });
    await expect(call(limiter)).rejects.toThrow(new RangeError(message));
    expect(limiter.size).toBe(0);
  });
});

describe('memory', () => {
  it('removes ended windows as new keys arrive: a flood of 100,000 keys after another holds at most 150,000', async () => {
    const limiter = new MemoryLimiter({ points: 1, duration: 1 });
    // A long refusal among them must not stop the sweep.
    await limiter.set('banned', 2, (30 * DAY) / SECOND);
    for (let i = 0; i < 100_000; i++) limiter.countNow(`old-${i}`);
    expect(limiter.size).toBe(100_001);
    advance(1000);
    let largest = 0;
    for (let i = 0; i < 100_000; i++) {
      limiter.countNow(`new-${i}`);
      largest = Math.max(largest, limiter.size);
    }
    expect(largest).toBeLessThanOrEqual(150_001);
    // Every old key is gone; the new ones and the block are left.
    expect(limiter.size).toBe(100_001);
    expect(await limiter.get('banned')).not.toBeNull();
  });

  it('reuses the entry of a key whose window has ended', () => {
    const limiter = new MemoryLimiter({ points: 1, duration: 1 });
    const entry = limiter.countNow('a');
    advance(1000);
    expect(limiter.countNow('a')).toBe(entry);
    expect(entry).toEqual({ count: 1, resetAt: T0 + 2000 });
    expect(limiter.size).toBe(1);
  });

  it('sets no timer, per key or otherwise', async () => {
    const setTimeout = jest.spyOn(global, 'setTimeout');
    const setInterval = jest.spyOn(global, 'setInterval');
    const limiter = new MemoryLimiter({ points: 1, duration: 60 });
    for (let i = 0; i < 1000; i++) {
      limiter.countNow(`a-${i}`);
      await settle(limiter.consume(`b-${i}`));
      await limiter.set(`c-${i}`, 1, (30 * DAY) / SECOND);
      limiter.countNow(`d-${i}`);
    }
    expect(limiter.size).toBe(4000);
    expect(setTimeout).not.toHaveBeenCalled();
    expect(setInterval).not.toHaveBeenCalled();
  });
});

describe('the memory counter', () => {
  const limits = [
    { limit: 1, windowMs: SECOND },
    { limit: 5, windowMs: 60 * SECOND },
  ];

  it.each(['fixed', 'sliding'] as const)(
    'answers a known key with its live counts, all limits or none (%s)',
    (window) => {
      const counter = new MemoryCounter({ name: 'GET /x', window, limits });
      const first = counter.hit('a');
      expect(counter.hit('a')).toBe(first);
      expect(first.map((c) => c.count)).toEqual([2, 1]);
    },
  );

  it('counts every request of one limit in fixed windows, the refused ones too, as rate-limiter-flexible does', () => {
    const counter = memoryCounter({ name: 'GET /x', window: 'fixed', limits: [{ limit: 1, windowMs: SECOND }] });
    for (let i = 0; i < 3; i++) counter.hit('a');
    expect(counter.hit('a')).toEqual([{ count: 4, resetAt: T0 + SECOND }]);
  });
});

describe('rate-limiter-flexible compatibility', () => {
  it('is accepted by its wrappers, such as RateLimiterUnion', async () => {
    const union = new RateLimiterUnion(
      new MemoryLimiter({ points: 1, duration: 1, keyPrefix: 'second' }),
      new MemoryLimiter({ points: 5, duration: 60, keyPrefix: 'minute' }),
    );
    await union.consume('a');
    const rejected = (await union.consume('a').catch((r: unknown) => r)) as Record<string, RateLimiterRes>;
    expect(rejected.second).toBeInstanceOf(RateLimiterRes);
    expect(rejected.second?.consumedPoints).toBe(2);
  });

  it('has no penalty(), reward() or block(): they throw, as its abstract limiter does', () => {
    const limiter = new MemoryLimiter({ points: 3, duration: 2 });
    expect(() => limiter.penalty('a')).toThrow("You have to implement the method 'penalty'!");
    expect(() => limiter.reward('a')).toThrow("You have to implement the method 'reward'!");
    expect(() => limiter.block('a', 1)).toThrow("You have to implement the method 'block'!");
    expect(limiter.size).toBe(0);
  });

  it('implements the rest of its abstract limiter', () => {
    const limiter = new MemoryLimiter({ points: 3, duration: 2 });
    expect({
      keyPrefix: limiter.keyPrefix,
      key: limiter.getKey('a'),
      parsed: limiter.parseKey(limiter.getKey('a')),
      msDuration: limiter.msDuration,
      blockDuration: limiter.blockDuration,
      msBlockDuration: limiter.msBlockDuration,
      execEvenly: limiter.execEvenly,
    }).toEqual({
      keyPrefix: 'rlflx',
      key: 'rlflx:a',
      parsed: 'a',
      msDuration: 2000,
      blockDuration: 0,
      msBlockDuration: 0,
      execEvenly: false,
    });
  });
});
