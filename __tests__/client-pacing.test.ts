// The client's pacing rule on fake timers: a request holds a place from its send until a window after its answer.
import { type ListingClientError } from '../lib/client';
import { MAX_TIMER_MS } from '../lib/shared/check';
import type { Limit } from '../lib/contract/limit';
import { Pacer, type Ticket, type WaitEvent } from '../lib/client/pacing';
import type { ServerLimit } from '../lib/contract/read-headers';

beforeEach(() => jest.useFakeTimers({ now: 0 }));
afterEach(() => jest.useRealTimers());

/** A pacer of `limits` that notes each wait it tells, and what it granted and when. */
function pacerOf(limits: Limit[], maxWaitMs = MAX_TIMER_MS) {
  const waits: WaitEvent[] = [];
  const pacer = new Pacer('GET /x', limits, maxWaitMs, (event) => waits.push(event));
  const granted: { call: number; at: number; ticket: Ticket }[] = [];
  const failed: { call: number; error: unknown }[] = [];
  let calls = 0;
  const take = (n = 1, retry = false) => {
    for (let i = 0; i < n; i++) {
      const call = ++calls;
      pacer.take(undefined, retry).then(
        (ticket) => granted.push({ call, at: Date.now(), ticket }),
        (error: unknown) => failed.push({ call, error }),
      );
    }
  };
  /** Every granted request answered now, with `fields` as what it said of the limits; `'none'`: no field at all. */
  const answerAll = (fields: readonly ServerLimit[] | 'none' = [], ok = true) => {
    for (const { ticket } of granted) pacer.answered(ticket, Date.now(), fields === 'none' ? undefined : fields, ok);
  };
  return { pacer, take, granted, failed, waits, answerAll };
}

/** Lets the promises settle, then moves the clock by `ms`. */
async function after(ms: number): Promise<void> {
  await jest.advanceTimersByTimeAsync(ms);
}
const grantedAt = (granted: { call: number; at: number }[]) => granted.map(({ call, at }) => `${call}@${at}`);

it('frees a place one window after the answer arrived, not after the send: a late answer delays the next call', async () => {
  const { take, granted, answerAll, waits } = pacerOf([{ limit: 2, windowMs: 1000 }]);
  take(3);
  await after(0);
  expect(grantedAt(granted)).toEqual(['1@0', '2@0']);
  // The answers come 30 ms later: the server counted the requests somewhere in between.
  await after(30);
  answerAll();
  await after(999);
  expect(grantedAt(granted)).toEqual(['1@0', '2@0']);
  await after(1);
  expect(grantedAt(granted)).toEqual(['1@0', '2@0', '3@1030']);
  // Told when it was made, as if the answers were coming at once: about a window.
  expect(waits).toEqual([{ endpoint: 'GET /x', ms: 1000, reason: 'table' }]);
});

it('waits for an answer, with no timer, while every place is held by a request in flight', async () => {
  const { pacer, take, granted } = pacerOf([{ limit: 1, windowMs: 1000 }]);
  take(2);
  await after(60_000);
  expect(grantedAt(granted)).toEqual(['1@0']);
  expect(jest.getTimerCount()).toBe(0);
  pacer.answered((granted[0] as { ticket: Ticket }).ticket, Date.now(), [], true);
  await after(1000);
  expect(grantedAt(granted)).toEqual(['1@0', '2@61000']);
});

it('several limits: a call goes when every one has a place', async () => {
  const { take, granted, answerAll } = pacerOf([
    { limit: 2, windowMs: 1000 },
    { limit: 3, windowMs: 2000 },
  ]);
  take(5);
  for (let ms = 0; ms <= 4000; ms += 500) {
    await after(ms === 0 ? 0 : 500);
    answerAll();
  }
  // 2 per second would send the third and fourth at 1000; 3 per 2 s lets only the third go then.
  expect(grantedAt(granted)).toEqual(['1@0', '2@0', '3@1000', '4@2000', '5@2000']);
});

describe('what the answers say', () => {
  const limit = (fields: Partial<ServerLimit> & { remaining: number }): ServerLimit => ({
    limit: undefined,
    windowMs: undefined,
    resetMs: 1000,
    ...fields,
  });

  it('the server counts beyond this client (another on the same token): the rest waits a window, told as the server', async () => {
    const { take, granted, answerAll, waits } = pacerOf([{ limit: 10, windowMs: 15_000 }]);
    take(1);
    await after(0);
    answerAll([limit({ limit: 10, remaining: 3 })]);
    take(5);
    await after(0);
    expect(grantedAt(granted)).toEqual(['1@0', '2@0', '3@0', '4@0']);
    expect(waits).toEqual(Array(2).fill({ endpoint: 'GET /x', ms: 15_000, reason: 'server' }));
  });

  it('a higher limit (a grant) is followed from the first answer', async () => {
    const { take, granted, answerAll } = pacerOf([{ limit: 2, windowMs: 1000 }]);
    take(21);
    await after(0);
    answerAll([limit({ limit: 20, windowMs: 1000, remaining: 18 })]);
    await after(0);
    expect(granted).toHaveLength(20);
  });

  it('a limit with a window the table lacks is added to the endpoint', async () => {
    const { take, granted, answerAll } = pacerOf([{ limit: 2, windowMs: 1000 }]);
    take(4);
    await after(0);
    answerAll([limit({ limit: 2, windowMs: 1000, remaining: 0 }), limit({ limit: 3, windowMs: 2000, remaining: 1 })]);
    await after(1000);
    answerAll([]);
    await after(1000);
    expect(grantedAt(granted)).toEqual(['1@0', '2@0', '3@1000', '4@2000']);
  });

  it('an answer without any field, where the fields came before (an unlimited grant): no pacing until they return', async () => {
    const { take, granted, answerAll } = pacerOf([{ limit: 1, windowMs: 1000 }]);
    take(1);
    await after(0);
    answerAll([limit({ limit: 1, remaining: 0 })]);
    await after(1000);
    take(3);
    await after(0);
    answerAll('none');
    await after(0);
    expect(grantedAt(granted)).toEqual(['1@0', '2@1000', '3@1000', '4@1000']);
    answerAll([limit({ limit: 1, remaining: 0 })]);
    take(1);
    await after(999);
    expect(granted).toHaveLength(4);
    await after(1);
    expect(grantedAt(granted).at(-1)).toBe('5@2000');
  });

  it('successes without any field from a server that never sent them: no grant, each holds its place a window', async () => {
    const { take, granted, answerAll } = pacerOf([{ limit: 2, windowMs: 1000 }]);
    take(5);
    for (let ms = 0; ms < 3000; ms += 250) {
      await after(ms === 0 ? 0 : 250);
      answerAll('none');
    }
    expect(grantedAt(granted)).toEqual(['1@0', '2@0', '3@1000', '4@1000', '5@2000']);
  });

  it('an error without any field is no grant', async () => {
    const { take, granted, answerAll } = pacerOf([{ limit: 1, windowMs: 1000 }]);
    take(1);
    await after(0);
    answerAll([limit({ limit: 1, remaining: 0 })]);
    await after(1000);
    take(2);
    await after(0);
    answerAll('none', false);
    await after(0);
    expect(grantedAt(granted)).toEqual(['1@0', '2@1000']);
  });

  it('a 429 while unlimited: the silence was no grant (a proxy dropping the fields), the table for good', async () => {
    const { pacer, take, granted, answerAll } = pacerOf([{ limit: 2, windowMs: 1000 }]);
    take(1);
    await after(0);
    answerAll([limit({ limit: 2, remaining: 1 })]);
    await after(1000);
    take(1);
    await after(0);
    answerAll('none');
    pacer.refused(1000, Date.now());
    // From then on, every later success without fields holds its place: 2 a second, by the table.
    take(5);
    for (let ms = 0; ms < 4000; ms += 250) {
      await after(250);
      answerAll('none');
    }
    expect(grantedAt(granted)).toEqual(['1@0', '2@1000', '3@2000', '4@2000', '5@3000', '6@3000', '7@4000']);
  });
});

describe('bounded waits', () => {
  it('a call whose wait would pass maxWaitMs rejects at once, saying how long', async () => {
    const { take, failed } = pacerOf([{ limit: 1, windowMs: 1000 }], 999);
    take(2);
    await after(0);
    expect(
      failed.map(({ call, error }) => [call, (error as ListingClientError).code, (error as ListingClientError).waitMs]),
    ).toEqual([[2, 'ERR_WAIT_TOO_LONG', 1000]]);
  });

  it('a 429 asking more than maxWaitMs rejects the calls in line at once, and blocks the endpoint until then', async () => {
    const { pacer, take, granted, failed } = pacerOf([{ limit: 1, windowMs: 1000 }], 5000);
    take(2);
    await after(0);
    pacer.refused(10_000, Date.now());
    await after(0);
    expect(failed.map(({ call, error }) => [call, (error as ListingClientError).waitMs])).toEqual([[2, 10_000]]);
    take(1);
    await after(0);
    expect(failed.map(({ call }) => call)).toEqual([2, 3]);
    expect(granted).toHaveLength(1);
  });

  it('never sets a timer beyond 2^31-1 ms, whatever the windows and the Retry-After', async () => {
    const setTimer = jest.spyOn(global, 'setTimeout');
    const year = 365 * 24 * 3600 * 1000;
    const { pacer, take, failed, answerAll } = pacerOf([{ limit: 1, windowMs: MAX_TIMER_MS - 1 }]);
    take(2);
    await after(0);
    answerAll();
    // The second call waits for the longest timer there may be; the server then asks for a year, and a window of one.
    answerAll([{ limit: 1, windowMs: year, remaining: 0, resetMs: year }]);
    pacer.refused(1e15, Date.now());
    take(1);
    await after(0);
    const delays = setTimer.mock.calls.map(([, ms]) => ms ?? 0);
    setTimer.mockRestore();
    expect(Math.max(...delays)).toBe(MAX_TIMER_MS - 1);
    expect(failed.map(({ call, error }) => [call, (error as ListingClientError).code])).toEqual([
      [2, 'ERR_WAIT_TOO_LONG'],
      [3, 'ERR_WAIT_TOO_LONG'],
    ]);
  });

  it('clear() rejects every call in line with the reason given', async () => {
    const { pacer, take, failed } = pacerOf([{ limit: 1, windowMs: 1000 }]);
    take(3);
    await after(0);
    pacer.clear(new Error('banned'));
    await after(0);
    expect(failed.map(({ call, error }) => [call, (error as Error).message])).toEqual([
      [2, 'banned'],
      [3, 'banned'],
    ]);
  });
});
