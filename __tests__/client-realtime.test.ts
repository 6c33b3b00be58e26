// listingClient in real time against listing APIs in another process: the server counts no refusal, the client waits its windows.
import { type EndpointRow, type ListingName, listings } from '../lib';
import { type ListingClient, listingClient, type WaitEvent } from '../lib/client';
import { type ApiServer, type AppSpec, startApiServer } from './helpers/api-server';
import { type Compiled, compile } from './helpers/compiled';

/** The contract's rows with windows of at most 2 s, so that three windows of every endpoint take seconds. */
const short = (listing: ListingName): EndpointRow[] =>
  listings[listing].map((row) => ({ ...row, windowMs: Math.min(row.windowMs, 2000) }));

/** Sends `count` calls on `row` at once (distinct query strings: no cache, no shared request); how long they took. */
async function burst(api: ListingClient, row: EndpointRow, count: number): Promise<number> {
  const started = Date.now();
  await Promise.all(
    Array.from({ length: count }, (_, n) =>
      row.method === 'POST'
        ? api.post(row.path, { id: '1', n }, { server_count: n })
        : api.get(row.path, { id: '1', n }),
    ),
  );
  return Date.now() - started;
}

let compiled: Compiled;
beforeAll(() => {
  compiled = compile('client-realtime');
}, 60_000);
afterAll(() => compiled?.remove());

describe('3 × limit calls on every endpoint of both listings, sent at once, against a server in another process', () => {
  const cases = (['A', 'B'] as const).flatMap((listing) =>
    (['fixed', 'sliding'] as const).flatMap((window) =>
      [0, 50].map((delayMs) => ({ listing, window, delayMs, rows: short(listing) })),
    ),
  );
  let server: ApiServer;
  /** Per case, per endpoint: how long its calls took. */
  let took: Record<string, number>[];
  /** Per case: the waits the client told, as `<endpoint> <reason> <ms>`. */
  const told: string[][] = cases.map(() => []);

  beforeAll(async () => {
    server = await startApiServer(
      compiled,
      cases.map(({ rows, window, delayMs }): AppSpec => ({ kind: 'rows', rows, window, delayMs })),
    );
    // Every case and every endpoint at the same time: the endpoints are counted apart, and so are the apps.
    took = await Promise.all(
      cases.map(async ({ rows }, i) => {
        const onWait = ({ endpoint, reason, ms }: WaitEvent) => told[i]?.push(`${endpoint} ${reason} ${ms}`);
        const api = listingClient({ listing: rows, baseUrl: server.urls[i] as string, token: 'Bot paced', onWait });
        const times = await Promise.all(rows.map((row) => burst(api, row, 3 * row.limit)));
        await api.close();
        return Object.fromEntries(rows.map((row, r) => [`${row.method} ${row.path}`, times[r] as number]));
      }),
    );
  }, 60_000);
  afterAll(() => server?.stop());

  it.each(cases.map((c, i) => [c.listing, c.window, c.delayMs, i] as const))(
    'listing %s, %s windows, answers delayed 0 to %i ms: the server counts every call allowed, none limited',
    async (_listing, _window, _delayMs, i) => {
      const { rows } = cases[i] as (typeof cases)[number];
      const outcomes = await server.outcomes(i);
      const counted = rows.map((row) => {
        const name = `${row.method} ${row.path}`;
        return { name, allowed: outcomes[name]?.allowed, limited: outcomes[name]?.limited };
      });
      expect(counted).toEqual(
        rows.map((row) => ({ name: `${row.method} ${row.path}`, allowed: 3 * row.limit, limited: 0 })),
      );
      expect(server.stderr()).toBe('');
    },
  );

  it.each(cases.map((c, i) => [c.listing, c.window, c.delayMs, i] as const))(
    'listing %s, %s windows, delayed 0 to %i ms: each endpoint waits one window, then another, and takes 2 at least',
    (_listing, _window, _delayMs, i) => {
      const { rows } = cases[i] as (typeof cases)[number];
      // Of 3 × limit calls at once, the first third goes at once; the client tells the second third it waits a
      // window, the last third two, each from when the answers of the third before it arrive. So the last third
      // cannot go before two windows have passed; how much later it goes is the machine's speed, which
      // `bench/client.js` measures.
      expect(told[i]).toEqual(
        rows.flatMap((row) =>
          [1, 2].flatMap((windows) =>
            Array.from({ length: row.limit }, () => `${row.method} ${row.path} table ${windows * row.windowMs}`),
          ),
        ),
      );
      const short = rows.flatMap((row) => {
        const ms = took[i]?.[`${row.method} ${row.path}`] as number;
        return ms >= 2 * row.windowMs ? [] : [`${row.method} ${row.path}: ${ms} ms`];
      });
      expect(short).toEqual([]);
    },
  );
});

describe('several rows for one endpoint, calls sent at once, answers delayed 0 to 50 ms', () => {
  // 2 per second and 3 per 2 seconds: 2 calls a second would be refused by the second row.
  const rows: EndpointRow[] = [
    { method: 'GET', path: '/v1/bots/:id', limit: 2, windowMs: 1000 },
    { method: 'GET', path: '/v1/bots/:id', limit: 3, windowMs: 2000 },
    { method: 'POST', path: '/v1/bots/:id', limit: 1, windowMs: 1000 },
    { method: 'POST', path: '/v1/bots/:id', limit: 2, windowMs: 2000 },
  ];
  const [get, , post] = rows as [EndpointRow, EndpointRow, EndpointRow];
  const oneRow: EndpointRow[] = [{ method: 'GET', path: '/v1/bots/:id', limit: 2, windowMs: 1000 }];
  const windows = ['fixed', 'sliding'] as const;
  let server: ApiServer;
  /** Per window kind: how long the GETs and the POSTs of the client of the whole table took. */
  let took: [number, number][];

  beforeAll(async () => {
    // One app of each window kind for the client of the whole table, one more for the client of one row.
    server = await startApiServer(
      compiled,
      [...windows, ...windows].map((window): AppSpec => ({ kind: 'rows', rows, window, delayMs: 50 })),
    );
    const client = (listing: EndpointRow[], i: number) =>
      listingClient({ listing, baseUrl: server.urls[i] as string, token: 'Bot rows' });
    [took] = await Promise.all([
      Promise.all(
        windows.map(async (_window, i) => {
          const api = client(rows, i);
          const times = await Promise.all([burst(api, get, 9), burst(api, post, 6)]);
          await api.close();
          return times;
        }),
      ),
      ...windows.map(async (_window, i) => {
        const api = client(oneRow, windows.length + i);
        await burst(api, get, 9);
        await api.close();
      }),
    ]);
  }, 60_000);
  afterAll(() => server?.stop());

  it.each(windows.map((window, i) => [window, i] as const))(
    '%s windows: the client paces by every row of its table; the server counts none limited',
    async (_window, i) => {
      expect(await server.outcomes(i)).toEqual({
        'GET /v1/bots/:id': expect.objectContaining({ allowed: 9, limited: 0 }),
        'POST /v1/bots/:id': expect.objectContaining({ allowed: 6, limited: 0 }),
      });
      // 9 GETs at 3 per 2 s, 6 POSTs at 2 per 2 s: the last ones cannot go before two windows of 2 s.
      expect(took[i]?.map((ms) => ms >= 4000)).toEqual([true, true]);
    },
  );

  it.each(windows.map((window, i) => [window, i] as const))(
    '%s windows: a client whose table has one of the rows learns the other from the answers; none limited',
    async (_window, i) => {
      const outcomes = await server.outcomes(windows.length + i);
      expect(outcomes['GET /v1/bots/:id']).toEqual(expect.objectContaining({ allowed: 9, limited: 0 }));
    },
  );
});

describe('the example server, tried as a new user would, in another process, answers delayed 0 to 50 ms', () => {
  const windows = ['fixed', 'sliding'] as const;
  let server: ApiServer;
  let took: number[];
  /** Per window kind: the waits the client told, as `<endpoint> <reason> <ms>`. */
  const told: string[][] = windows.map(() => []);

  beforeAll(async () => {
    server = await startApiServer(
      compiled,
      windows.map((window): AppSpec => ({ kind: 'example', listing: 'B', window, delayMs: 50 })),
    );
    took = await Promise.all(
      windows.map(async (_window, i) => {
        const onWait = ({ endpoint, reason, ms }: WaitEvent) => told[i]?.push(`${endpoint} ${reason} ${ms}`);
        const api = listingClient({ listing: 'B', baseUrl: server.urls[i] as string, token: 'Bot newcomer', onWait });
        const started = Date.now();
        await Promise.all(Array.from({ length: 6 }, (_, n) => api.get('/v1/bots/:id', { id: String(n + 1) })));
        const ms = Date.now() - started;
        await api.close();
        return ms;
      }),
    );
  }, 60_000);
  afterAll(() => server?.stop());

  it.each(windows.map((window, i) => [window, i] as const))(
    '%s windows: six GET /v1/bots/:id with distinct ids at 2 per second, none limited, in 2 s at least',
    async (_window, i) => {
      expect((await server.outcomes(i))['GET /v1/bots/:id']).toEqual(
        expect.objectContaining({ allowed: 6, limited: 0 }),
      );
      // Two go at once; the client tells two they wait a second, and the last two, two seconds.
      const waits = [1000, 1000, 2000, 2000];
      expect(told[i]).toEqual(waits.map((ms) => `GET /v1/bots/:id table ${ms}`));
      expect(took[i]).toBeGreaterThanOrEqual(2000);
    },
  );
});
