// An instance's flush of its traffic to a shared store: bounded by the store's callTimeoutMs, its failures told once.
import { RuntimeStateError } from '../lib';
import { SiteTraffic } from '../lib/limiter/observe/site';
import { countIn, type Minute, type SiteHour, type TrafficStore } from '../lib/stores/traffic';

const MINUTE = 29_000_000;
const NOW = MINUTE * 60_000 + 30_000;

/** A store whose `add` answers as `answer` says, and records what each call sent. */
function storeOf(answer: (call: number) => Promise<SiteHour | undefined>) {
  const calls: { minutes: Minute[]; read: number | undefined }[] = [];
  const store: TrafficStore = {
    intervalMs: 1000,
    add: (minutes, read) => {
      calls.push({ minutes: minutes.map((m) => ({ ...m, endpoints: new Map(m.endpoints) })), read });
      return answer(calls.length);
    },
  };
  return { store, calls };
}

const siteOf = (store: TrafficStore, callTimeoutMs = 1000) => {
  const reported: unknown[] = [];
  const site = new SiteTraffic(store, {
    endpoints: new Set(['GET /a']),
    callTimeoutMs,
    report: (error) => reported.push(error),
    skipped: () => {},
  });
  return { site, reported };
};

describe('SiteTraffic', () => {
  it('sends the counts since the last flush, and shows the hour read with those sent or waiting since', async () => {
    const { store, calls } = storeOf(async () => {
      const endpoints = new Map<string, [number, number]>([
        ['GET /a', [5, 1]],
        ['GET /other', [9, 9]],
      ]);
      return { instances: 2, minutes: [{ at: MINUTE, endpoints, refused: new Map() }], refused: new Map([['t:x', 1]]) };
    });
    const { site, reported } = siteOf(store);
    // The first read flushes at once, at the real time.
    const before = Math.floor(Date.now() / 60_000);
    site.read();
    await new Promise((resolve) => setImmediate(resolve));
    expect([before, before + 1]).toContain(calls[0]?.read);
    countIn(site.minute(MINUTE), 'GET /a', false, undefined);
    countIn(site.minute(MINUTE - 60), 'GET /a', false, undefined); // before the hour: never sent
    await site.flush(NOW);
    expect(calls.map((c) => [c.minutes.map((m) => [m.at, [...m.endpoints]]), c.read])).toEqual([
      [[], calls[0]?.read],
      [[[MINUTE, [['GET /a', [1, 0]]]]], MINUTE],
    ]);
    countIn(site.minute(MINUTE), 'GET /a', true, 't:x');
    // Another middleware's endpoint on the same prefix is left out.
    expect(site.hour?.minutes.map((m) => [m.at, [...m.endpoints]])).toEqual([
      [MINUTE, [['GET /a', [5, 1]]]],
      [MINUTE, [['GET /a', [0, 1]]]],
    ]);
    expect(site.hour?.instances).toBe(2);
    expect(reported).toEqual([]);
  });

  it('drops the counts of a failed flush; tells onError at the second failure in a row, once until one succeeds', async () => {
    const { store, calls } = storeOf((call) =>
      call === 4 ? Promise.resolve(undefined) : Promise.reject(new Error('down')),
    );
    const { site, reported } = siteOf(store);
    for (let i = 0; i < 3; i++) {
      countIn(site.minute(MINUTE), 'GET /a', false, undefined);
      await site.flush(NOW);
    }
    expect(calls.map((c) => c.minutes.length)).toEqual([1, 1, 1]);
    expect(reported).toHaveLength(1);
    expect(reported[0]).toBeInstanceOf(RuntimeStateError);
    expect(reported[0]).toMatchObject({
      code: 'ERR_STATE_WRITE',
      message: "listing-limits: this instance's traffic was not added to the store twice in a row: the hour misses it.",
    });
    await site.flush(NOW); // succeeds
    await site.flush(NOW);
    await site.flush(NOW);
    expect(reported).toHaveLength(2);
  });

  it('a store that never answers holds a flush for callTimeoutMs at the most, and no flush starts meanwhile', async () => {
    const { store, calls } = storeOf(() => new Promise(() => {}));
    const { site, reported } = siteOf(store, 50);
    const first = site.flush(NOW);
    await site.flush(NOW);
    expect(calls).toHaveLength(1);
    await first;
    await site.flush(NOW);
    expect(calls).toHaveLength(2);
    expect(reported).toHaveLength(1);
    expect((reported[0] as Error & { cause: Error }).cause.message).toBe(
      'listing-limits traffic: options.store did not answer within 50 ms (its callTimeoutMs). Nothing of this call ' +
        'was changed: try again once it answers.',
    );
  });
});
