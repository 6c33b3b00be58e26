// verifyContract over real sockets on a fake clock: a server that honours the contract passes; wrong ones fail with the right finding.
import type { RequestListener } from 'node:http';
import { type AddressInfo, createServer as createNetServer } from 'node:net';
import type { Express, RequestHandler } from 'express';
import { type EndpointRow, type LimitHandler, ListingLimitsError, listings, type WindowKind } from '../lib';
import {
  type EndpointReport,
  planVerification,
  type VerifyEvent,
  type VerifyOptions,
  type VerifyReport,
  verifyContract,
  type WindowSeen,
} from '../lib/verify';
import { createExampleApp } from '../example-server/app';
import { createApp } from './helpers/app';
import { type Served, serverPerTest } from './helpers/serve';
import { useFakeClock } from './helpers/stores';

/** Waiting moves the fake clock: windows of minutes pass at once. Endpoints are probed one at a time on it. */
const sleep = async (ms: number) => {
  jest.setSystemTime(Date.now() + ms);
};

const start = serverPerTest();

beforeEach(useFakeClock);
afterEach(() => jest.useRealTimers());

const verify = (served: Served, options: Partial<VerifyOptions> = {}) =>
  verifyContract({ baseUrl: served.url, listing: 'B', sleep, concurrency: 1, ...options });

/** An endpoint's findings: those about the contract, then those about its header fields. */
const findingsOf = (e: EndpointReport | undefined) => [...(e?.findings ?? []), ...(e?.headers.findings ?? [])];

/** The endpoints that fail, with their findings: every other endpoint passed. */
const failing = (report: VerifyReport) =>
  Object.fromEntries(report.endpoints.filter((e) => !e.ok).map((e) => [e.endpoint, findingsOf(e)]));

/** Listing B with one row changed. */
const changedB = (name: string, change: Partial<EndpointRow>): EndpointRow[] =>
  listings.B.map((row) => (`${row.method} ${row.path}` === name ? { ...row, ...change } : row));

describe('against a server that honours the contract', () => {
  it.each(['A', 'B'] as const)(
    'listing %s: every endpoint passes, with exactly the planned requests',
    async (listing) => {
      const served = await start(createApp({ listing }));
      const report = await verify(served, { listing });
      expect(report.ok).toBe(true);
      expect(report.endpoints.map((e) => [e.endpoint, e.ok, e.findings, e.notes])).toEqual(
        listings[listing].map((row) => [`${row.method} ${row.path}`, true, [], []]),
      );
      const plan = planVerification({ baseUrl: served.url, listing });
      expect(report.endpoints.map((e) => e.requests)).toEqual(plan.endpoints.map((e) => e.requests));
      expect(served.requests).toBe(plan.requests);
    },
  );

  it.each(['A', 'B'] as const)('the example server, listing %s: every endpoint passes', async (listing) => {
    const served = await start(createExampleApp({ listing }));
    const report = await verify(served, { listing, token: 'Bot verify' });
    // verify sends POSTs without a body: the example server answers 400, and counts them, as the contract says.
    const notes = (row: EndpointRow) =>
      row.method === 'POST' ? ['POST /v1/bots/1 answered 400', 'POST /v1/bots/2 answered 400'] : [];
    expect(report.endpoints.map((e) => [e.endpoint, e.ok, e.findings, e.notes])).toEqual(
      listings[listing].map((row) => [`${row.method} ${row.path}`, true, [], notes(row)]),
    );
    expect(report.ok).toBe(true);
  });

  it('spends limit + 1 requests in a window, limit after its end, and limit + 1 over both paths on another token', async () => {
    const served = await start(createApp({ listing: 'B' }));
    const report = await verify(served, {
      only: ['GET /v1/bots/:id'],
      token: 'Bot abc',
      otherToken: 'Bot other',
      params: { id: ['7', '9'] },
    });
    expect(report.ok).toBe(true);
    expect(report.endpoints[0]?.paths).toEqual(['/v1/bots/7', '/v1/bots/9']);
    expect(served.log).toEqual([
      // one request at the window's start, limit - 1 from its middle, then one more: refused
      '200 GET /v1/bots/7 Bot abc',
      '200 GET /v1/bots/7 Bot abc',
      '429 GET /v1/bots/7 Bot abc',
      // after the window's end: the whole limit, as a fixed window allows
      '200 GET /v1/bots/7 Bot abc',
      '200 GET /v1/bots/7 Bot abc',
      // another token's counter: the second path first, then alternating, until refused
      '200 GET /v1/bots/9 Bot other',
      '200 GET /v1/bots/7 Bot other',
      '429 GET /v1/bots/9 Bot other',
    ]);
  });

  it('counts by IP when no token is given, and sends one generated token to check another counter', async () => {
    const served = await start(createApp({ listing: 'B' }));
    await verify(served, { only: ['GET /v1/statistics'] });
    // One at the window's start, 4 from its middle and the 429; 5 after its end.
    expect(served.log.slice(0, 11)).toEqual([
      ...Array(5).fill('200 GET /v1/statistics -'),
      '429 GET /v1/statistics -',
      ...Array(5).fill('200 GET /v1/statistics -'),
    ]);
    expect(served.log.slice(11)).toEqual([
      expect.stringMatching(/^200 GET \/v1\/statistics listing-limits-verify-[0-9a-f]{16}$/),
    ]);
  });

  it("takes the response's Date for now when this machine's clock is off", async () => {
    // The server's clock is real here, and it writes Date from it; this run's clock is an hour ahead.
    jest.useRealTimers();
    const served = await start(createApp({ listing: 'B' }));
    const report = await verify(served, {
      only: ['GET /v1/bots/:id/upvotes'],
      now: () => Date.now() + 3_600_000,
      sleep: async () => {},
    });
    expect(report.endpoints[0]?.findings).toEqual([
      // Without waiting, the window is still closed: only that is found, nothing about X-RateLimit-Reset.
      "window longer than the contract's: still refused when its 15 s had passed",
    ]);
  });

  it.each(['fixed', 'sliding'] as const)(
    'waits out a %s counter already in use for a whole window, and notes it',
    async (window) => {
      const served = await start(createApp({ listing: 'B', options: { window } }));
      const only = ['GET /v1/bots/:id/upvotes'];
      await verify(served, { only, window });
      // A sliding window frees a request when Retry-After says, but holds the others for up to a window.
      const again = await verify(served, { only, window });
      expect(again.endpoints[0]).toMatchObject({
        ok: true,
        findings: [],
        notes: ['the counter was in use: waited 16 s for a fresh window'],
        // the refused one, then the 8 planned
        requests: 9,
      });
    },
  );

  it('tells the waits and each endpoint as it goes', async () => {
    const served = await start(createApp({ listing: 'A' }));
    const events: VerifyEvent[] = [];
    await verify(served, {
      listing: 'A',
      only: ['GET /v1/statistics', 'GET /v1/servers'],
      onProgress: (e) => events.push(e),
    });
    expect(events.map((e) => (e.type === 'done' ? `done ${e.result.endpoint}` : e))).toEqual([
      // A limit of 1 waits for its window's end only, and the margin after it: a quarter of a 1-second window.
      { type: 'endpoint', endpoint: 'GET /v1/statistics', index: 1, total: 2 },
      { type: 'wait', endpoint: 'GET /v1/statistics', ms: 1250, reason: 'window' },
      'done GET /v1/statistics',
      // One wait for the window's middle, one for the grace after its end.
      { type: 'endpoint', endpoint: 'GET /v1/servers', index: 2, total: 2 },
      { type: 'wait', endpoint: 'GET /v1/servers', ms: 60_000, reason: 'boundary' },
      { type: 'wait', endpoint: 'GET /v1/servers', ms: 61_000, reason: 'window' },
      'done GET /v1/servers',
    ]);
  });

  it('notes answers other than 429 that are errors: they count all the same', async () => {
    const served = await start(createApp({ listing: 'B', routes: [] }));
    const report = await verify(served, { only: ['GET /v1/users/:id'] });
    expect(report.endpoints[0]).toMatchObject({
      ok: true,
      notes: ['GET /v1/users/1 answered 404', 'GET /v1/users/2 answered 404'],
    });
  });
});

interface WindowCase {
  /** The windows the example server counts. */
  readonly server: WindowKind;
  /** The `window` option, or none: fixed. */
  readonly expected: WindowKind | 'default';
  /** The endpoints that fail, with their findings: every other endpoint passed. */
  readonly failing: Record<string, string[]>;
}

describe('the kind of window, across the end of a window', () => {
  // No path parameters (the next window opens the probe), path parameters (the probe opens the window after it),
  // and a limit of 1, which both kinds count alike.
  const only = ['GET /v1/statistics', 'GET /v1/bots/:id/upvotes', 'GET /v1/users/:id'];
  const rows = listings.B.filter((row) => only.includes(`${row.method} ${row.path}`)).map((row) =>
    row.path === '/v1/users/:id' ? { ...row, limit: 1 } : row,
  );

  it.each<WindowCase>([
    { server: 'fixed', expected: 'default', failing: {} },
    { server: 'sliding', expected: 'sliding', failing: {} },
    {
      server: 'fixed',
      expected: 'sliding',
      failing: {
        'GET /v1/statistics': [
          'fixed window: allowed 9 requests within 0.8 s across the end of a window (4 before it, 5 after it); ' +
            'a sliding window allows 5 in any 1 s',
        ],
        'GET /v1/bots/:id/upvotes': [
          'fixed window: allowed 3 requests within 8.5 s across the end of a window (1 before it, 2 after it); ' +
            'a sliding window allows 2 in any 15 s',
        ],
      },
    },
    {
      server: 'sliding',
      expected: 'default',
      failing: {
        'GET /v1/statistics': [
          'sliding window: allowed 4 requests before the end of a window and 1 after it, then 429; ' +
            'a fixed window allows 5 after it',
        ],
        'GET /v1/bots/:id/upvotes': [
          'sliding window: allowed 1 request before the end of a window and 1 after it, then 429; ' +
            'a fixed window allows 2 after it',
        ],
      },
    },
  ])('a $server server, window: $expected', async ({ server, expected, failing: found }) => {
    const served = await start(createApp({ listing: rows, options: { window: server } }));
    const report = await verify(served, { listing: rows, ...(expected !== 'default' && { window: expected }) });
    expect(report.window).toBe(expected === 'default' ? 'fixed' : expected);
    expect(report.endpoints.map((e) => [e.endpoint, e.windowSeen])).toEqual<[string, WindowSeen][]>([
      ['GET /v1/statistics', server],
      ['GET /v1/bots/:id/upvotes', server],
      ['GET /v1/users/:id', 'either'],
    ]);
    expect(failing(report)).toEqual(found);
    expect(report.ok).toBe(Object.keys(found).length === 0);
    // A server of the kind expected gets exactly the planned requests.
    const plan = planVerification({ baseUrl: served.url, listing: rows, window: server });
    expect(report.endpoints.map((e) => e.requests)).toEqual(plan.endpoints.map((e) => e.requests));
  });

  it.each(['fixed', 'sliding'] as const)(
    'the example server with %s windows: every endpoint of listing B passes when the kind is expected',
    async (window) => {
      const served = await start(createExampleApp({ listing: 'B', window }));
      const report = await verify(served, { listing: 'B', window, token: 'Bot verify' });
      expect(report.endpoints.map((e) => [e.endpoint, e.ok, e.findings, e.windowSeen])).toEqual(
        listings.B.map((row) => [`${row.method} ${row.path}`, true, [], window]),
      );
      expect(served.requests).toBe(planVerification({ baseUrl: served.url, listing: 'B', window }).requests);
    },
  );

  it('sends to a sliding server: one request, limit - 1 from the middle of the window, the 429, then 1 and the 429', async () => {
    const served = await start(createExampleApp({ listing: 'B', window: 'sliding' }));
    const options = { only: ['GET /v1/statistics'], token: 'Bot v', otherToken: 'Bot w', window: 'sliding' } as const;
    const report = await verify(served, options);
    expect(report.endpoints[0]).toMatchObject({ ok: true, windowSeen: 'sliding', requests: 9 });
    expect(served.log).toEqual([
      ...Array(5).fill('200 GET /v1/statistics Bot v'),
      '429 GET /v1/statistics Bot v',
      // after the window's end: the one freed by the first request, then a 429
      '200 GET /v1/statistics Bot v',
      '429 GET /v1/statistics Bot v',
      '200 GET /v1/statistics Bot w',
    ]);
  });

  /** A sliding window approximated from two fixed ones, as some limiters count: neither kind exactly. */
  function approximatelySliding(limit: number, windowMs: number): RequestListener {
    const counts = new Map<string, number>();
    return (req, res) => {
      const client = req.headers.authorization ?? '-';
      const now = Date.now();
      const index = Math.floor(now / windowMs);
      const current = counts.get(`${client} ${index}`) ?? 0;
      const previous = counts.get(`${client} ${index - 1}`) ?? 0;
      if (previous * (1 - (now % windowMs) / windowMs) + current >= limit) {
        res.writeHead(429, { 'Retry-After': String(windowMs / 1000) }).end();
        return;
      }
      counts.set(`${client} ${index}`, current + 1);
      res.writeHead(200).end();
    };
  }

  it.each<{ kind: string; app: () => RequestListener; only: string; failing: string[] }>([
    {
      kind: 'a sliding window approximated from fixed ones',
      app: () => approximatelySliding(5, 1000),
      only: 'GET /v1/statistics',
      failing: [
        'neither fixed nor sliding window: allowed 4 requests before the end of a window and 2 after it; ' +
          'a fixed window allows 5 after it, a sliding one 1',
      ],
    },
    {
      kind: 'a sliding window whose 429 tells clients to wait the whole window',
      app: () =>
        createApp({
          listing: 'B',
          options: {
            window: 'sliding',
            handler: (_req, res) => {
              res.set('Retry-After', '15').status(429).end();
            },
          },
        }),
      only: 'GET /v1/bots/:id/upvotes',
      // The probe's second request was sent 7.5 s into its window, the 429 comes 1 s after its end.
      failing: [
        'Retry-After says 15 on the 429 after the end of a window; its oldest request counted leaves the window in 6 to 7 s',
      ],
    },
  ])('$kind: told, with what was seen', async ({ app, only, failing: found }) => {
    const served = await start(app());
    const report = await verify(served, { only: [only], window: 'sliding' });
    expect(findingsOf(report.endpoints[0])).toEqual(found);
  });

  it.each<{ slow: string; row: EndpointRow; note: string }>([
    {
      slow: 'before the end of a window',
      row: { method: 'GET', path: '/v1/statistics', limit: 3, windowMs: 2000 },
      note: 'window kind inconclusive: 2 requests sent from the middle of a window took 0.6 s, too close to its end',
    },
    {
      slow: 'across the end of a window',
      row: { method: 'GET', path: '/v1/statistics', limit: 2, windowMs: 2000 },
      note: 'window kind inconclusive: 3 requests across the end of a window took 2.4 s, not less than the window of 2 s',
    },
  ])('requests too slow $slow: the kind inconclusive, noted, not held against the server', async ({ row, note }) => {
    const app = createApp({ listing: [row] });
    // Each request takes 300 ms on the shared fake clock.
    const served = await start((req, res) => {
      jest.setSystemTime(Date.now() + 300);
      app(req, res);
    });
    const report = await verify(served, { listing: [row] });
    expect(report.endpoints[0]).toMatchObject({ ok: true, findings: [], notes: [note], windowSeen: 'unclear' });
  });
});

describe('an API under a base path', () => {
  it("requests, plans and reports the paths with the base URL's path", async () => {
    const served = await start(createApp({ listing: 'B', mount: '/api', routes: [] }));
    const options = { baseUrl: `${served.url}/api/`, listing: 'B', only: ['GET /v1/users/:id'] } as const;
    expect(planVerification(options)).toMatchObject({
      baseUrl: `${served.url}/api`,
      endpoints: [{ endpoint: 'GET /v1/users/:id', paths: ['/api/v1/users/1', '/api/v1/users/2'] }],
    });
    const report = await verifyContract({ ...options, sleep });
    expect(report.endpoints[0]).toMatchObject({
      ok: true,
      paths: ['/api/v1/users/1', '/api/v1/users/2'],
      notes: ['GET /api/v1/users/1 answered 404', 'GET /api/v1/users/2 answered 404'],
    });
  });
});

interface WrongServer {
  readonly wrong: string;
  readonly app: () => Express;
  /** Endpoints to check; default: all. */
  readonly only?: string[];
  /** The endpoints that fail, with their findings. */
  readonly failing: Record<string, string[]>;
}

describe('against deliberately wrong servers', () => {
  /** A 429 like the default one, without Retry-After. */
  const noRetryAfter: RequestHandler = (_req, res) => {
    res.status(429).json({ success: false, code: 429 });
  };

  it.each<WrongServer>([
    {
      wrong: 'a limit off by one',
      app: () => createApp({ listing: changedB('GET /v1/bots/:id', { limit: 3 }) }),
      failing: {
        'GET /v1/bots/:id': [
          'allowed 3 requests, contract says 2',
          'RateLimit-Policy says "GET /v1/bots/:id";q=3;w=1, contract says q=2;w=1',
          'RateLimit says "GET /v1/bots/:id";r=2;t=1 on request 1, expected r=1',
          'X-RateLimit-Limit says 3, contract says 2',
          'X-RateLimit-Remaining says 2 on request 1, expected 1',
        ],
      },
    },
    {
      wrong: 'a limit one too low',
      app: () => createApp({ listing: changedB('GET /v1/bots', { limit: 24 }) }),
      failing: {
        'GET /v1/bots': [
          'allowed 24 requests, contract says 25',
          'RateLimit-Policy says "GET /v1/bots";q=24;w=60, contract says q=25;w=60',
          'RateLimit says "GET /v1/bots";r=23;t=60 on request 1, expected r=24',
          'X-RateLimit-Limit says 24, contract says 25',
          'X-RateLimit-Remaining says 23 on request 1, expected 24',
        ],
      },
    },
    {
      wrong: 'path parameters counted separately',
      app: () =>
        createApp({ listing: 'B', options: { key: (req) => `${req.get('authorization') || req.ip} ${req.path}` } }),
      failing: Object.fromEntries(
        listings.B.filter((row) => row.path.includes(':')).map((row) => {
          const name = `${row.method} ${row.path}`;
          return [
            name,
            [
              'path parameters counted separately',
              `RateLimit says "${name}";r=${row.limit - 1};t=${row.windowMs / 1000} on request 2, expected r=${row.limit - 2}`,
              `X-RateLimit-Remaining says ${row.limit - 1} on request 2, expected ${row.limit - 2}`,
            ],
          ];
        }),
      ),
    },
    {
      wrong: 'a window longer than the contract’s',
      app: () => createApp({ listing: changedB('GET /v1/bots/:id/upvotes', { windowMs: 30_000 }) }),
      // Alone, so that the clock starts at 2026-01-01T00:00:00Z and X-RateLimit-Reset is known.
      only: ['GET /v1/bots/:id/upvotes'],
      failing: {
        'GET /v1/bots/:id/upvotes': [
          "window longer than the contract's: still refused when its 15 s had passed",
          'RateLimit-Policy says "GET /v1/bots/:id/upvotes";q=2;w=30, contract says q=2;w=15',
          'RateLimit says "GET /v1/bots/:id/upvotes";r=1;t=30, not t=0 to t=15 (the contract\'s window)',
          "X-RateLimit-Reset-After says 30, not 0 to 15 s (the contract's window)",
          "X-RateLimit-Reset says 1767225630, not within 15 s (the contract's window) after the response's Date",
          // the 429 came from the window's middle: 22.5 s of the server's 30 were left
          "Retry-After says 23, longer than the contract's window of 15 s",
        ],
      },
    },
    {
      wrong: 'one endpoint without a limit',
      app: () =>
        createApp({
          listing: listings.B.filter((row) => row.path !== '/v1/bots/:id/uptime'),
          routes: listings.B,
        }),
      failing: { 'GET /v1/bots/:id/uptime': ['allowed 31 requests, contract says 30'] },
    },
    {
      wrong: 'every token sharing the counter of its IP',
      app: () => createApp({ listing: 'B', options: { key: (req) => req.ip ?? '' } }),
      failing: Object.fromEntries(
        listings.B.map((row) => [`${row.method} ${row.path}`, ['a different token shares the counter']]),
      ),
    },
  ])('$wrong', async ({ app, only, failing: expected }) => {
    const served = await start(app());
    const report = await verify(served, { only });
    expect(report.ok).toBe(false);
    expect(failing(report)).toEqual(expected);
  });

  it('no Retry-After on its 429s: noted, since the contract does not require it; a failure with strictHeaders', async () => {
    const served = await start(createApp({ listing: 'B', options: { handler: noRetryAfter } }));
    const only = ['GET /v1/statistics', 'GET /v1/bots/:id/upvotes'];
    const report = await verify(served, { only });
    expect(report.ok).toBe(true);
    expect(report.endpoints.map((e) => e.headers)).toEqual(
      only.map(() => ({
        probed: true,
        sent: ['drafts 8-11', 'X-RateLimit'],
        findings: [],
        notes: ['no Retry-After on 429'],
      })),
    );
    const strict = await verify(served, { only, strictHeaders: true });
    expect(strict).toMatchObject({ ok: false, strictHeaders: true });
    expect(strict.endpoints.map((e) => [e.ok, e.findings, e.headers.findings, e.headers.notes])).toEqual(
      only.map(() => [false, [], ['no Retry-After on 429'], []]),
    );
  });

  it('an endpoint without a limit sends no rate-limit fields: noted beside the finding', async () => {
    const served = await start(createApp({ listing: [listings.B[0] as EndpointRow], routes: listings.B }));
    const report = await verify(served, { only: ['GET /v1/bots'] });
    expect(report.endpoints[0]).toMatchObject({
      ok: false,
      findings: ['allowed 26 requests, contract says 25'],
      notes: [],
      headers: { probed: true, sent: [], findings: [], notes: ['sent no rate-limit fields'] },
      requests: 26,
      windowSeen: 'not probed',
    });
    expect(served.requests).toBe(26);
  });

  it('a Retry-After shorter than the window: still refused when it has passed', async () => {
    const shortRetry: RequestHandler = (_req, res) => {
      res.set('Retry-After', '1').status(429).end();
    };
    const served = await start(createApp({ listing: 'B', options: { handler: shortRetry } }));
    const report = await verify(served, { only: ['GET /v1/users/:id/bots'] });
    // The 429 came 7.5 s into the window, 1 s after it the window still holds: refused again, as the contract says.
    // The rest of the probe goes on: the counts are right, only the header is wrong.
    expect(report.endpoints[0]).toMatchObject({
      ok: false,
      findings: [],
      headers: {
        findings: ['Retry-After says 1, earlier than RateLimit t=8', 'still refused when Retry-After had passed (1 s)'],
      },
      windowSeen: 'fixed',
    });
  });

  it('a window shorter than the contract’s, which its Retry-After tells: served again too soon', async () => {
    // 10 s instead of 15: the 429 from the window's middle (7.5 s) says 3 s, and 1 s after those the window is new.
    const served = await start(createApp({ listing: changedB('GET /v1/bots/:id/upvotes', { windowMs: 10_000 }) }));
    const report = await verify(served, { only: ['GET /v1/bots/:id/upvotes'] });
    expect(findingsOf(report.endpoints[0])).toEqual([
      'allowed 3 requests within 11.5 s once Retry-After had passed (3 s), contract says 2 per 15 s',
      'RateLimit-Policy says "GET /v1/bots/:id/upvotes";q=2;w=10, contract says q=2;w=15',
    ]);
  });

  it('another token whose counter gives less than the limit', async () => {
    const served = await start(createApp({ listing: 'B' }));
    // Each request of the other token reaches the server twice, as behind a proxy that retries: counted twice.
    const twice: typeof fetch = async (url, init) => {
      const headers = new Headers(init?.headers);
      if (headers.get('authorization') === 'Bot other') await fetch(url, init).then((r) => r.body?.cancel());
      return fetch(url, init);
    };
    const report = await verify(served, { only: ['GET /v1/bots/:id'], otherToken: 'Bot other', fetch: twice });
    expect(findingsOf(report.endpoints[0])).toEqual([
      'allowed 1 request with another token, contract says 2',
      'RateLimit says "GET /v1/bots/:id";r=0;t=1 on request 1, expected r=1',
      'X-RateLimit-Remaining says 0 on request 1, expected 1',
    ]);
  });

  it('a Retry-After as an HTTP date: read, and noted', async () => {
    // The window's end, as a date.
    const dated: LimitHandler = (_req, res, _next, info) => {
      res
        .set('Retry-After', new Date(Date.now() + info.retryAfter * 1000).toUTCString())
        .status(429)
        .end();
    };
    const served = await start(createApp({ listing: 'B', options: { handler: dated } }));
    const report = await verify(served, { only: ['GET /v1/users/:id/bots'] });
    expect(report.endpoints[0]).toMatchObject({
      ok: true,
      headers: {
        sent: ['drafts 8-11', 'X-RateLimit', 'Retry-After (date)'],
        notes: ['Retry-After as an HTTP date, not seconds'],
      },
    });
  });

  it.each([
    ['not seconds nor a date', 'soon', 'Retry-After says "soon": neither whole seconds nor an HTTP date'],
    ['a fraction', '1.5', 'Retry-After says 1.5: neither whole seconds nor an HTTP date'],
    [
      'a date longer than the window',
      'Thu, 01 Jan 2026 00:01:00 GMT',
      'Retry-After says "Thu, 01 Jan 2026 00:01:00 GMT", longer than the contract\'s window of 15 s',
    ],
  ])('a Retry-After that is %s: a finding about the headers', async (_what, value, finding) => {
    const handler: RequestHandler = (_req, res) => {
      res.set('Retry-After', value).status(429).end();
    };
    const served = await start(createApp({ listing: 'B', options: { handler } }));
    const report = await verify(served, { only: ['GET /v1/users/:id/bots'] });
    expect(report.endpoints[0]).toMatchObject({ ok: false, findings: [], headers: { findings: [finding] } });
  });

  it('fields without the contract’s values, or not parseable', async () => {
    const served = await start(
      createApp({
        listing: 'B',
        setup: (app) =>
          app.use((_req, res, next) => {
            // Written after the limiter's own fields, as a proxy in front of the API might.
            const writeHead = res.writeHead;
            res.writeHead = function (this: typeof res, ...args: Parameters<typeof writeHead>) {
              res.setHeader('RateLimit-Policy', 'not a list ;;');
              res.setHeader('X-RateLimit-Reset', String(Date.now()));
              res.setHeader('X-RateLimit-Reset-After', 'soon');
              res.removeHeader('RateLimit');
              return writeHead.apply(this, args);
            } as typeof writeHead;
            next();
          }),
      }),
    );
    const report = await verify(served, { only: ['GET /v1/statistics'] });
    expect(report.endpoints[0]).toMatchObject({
      findings: [],
      headers: {
        findings: [
          'RateLimit-Policy says not a list ;;: not a Structured Field list',
          'X-RateLimit-Reset-After says "soon": not a number of seconds from 0 to a year',
          `X-RateLimit-Reset says ${Date.UTC(2026, 0, 1)}: a Unix time in the past, or more than a year ahead`,
        ],
        notes: ['sent no RateLimit'],
      },
    });
  });

  it('requests slower than the window: inconclusive, not a pass and not a wrong limit', async () => {
    const app = createApp({ listing: 'B' });
    // Each request takes 300 ms on the shared fake clock: a 1-second window ends during the burst from its middle.
    const served = await start((req, res) => {
      jest.setSystemTime(Date.now() + 300);
      app(req, res);
    });
    const report = await verify(served, { only: ['GET /v1/statistics', 'GET /v1/bots'] });
    expect(failing(report)).toEqual({
      'GET /v1/statistics': ["inconclusive: 6 requests took 2 s, longer than the contract's window of 1 s"],
    });
  });

  it('a server that cannot be reached: a finding per endpoint, not an error', async () => {
    const served = await start(createApp({ listing: 'A' }));
    await served.close();
    const report = await verify(served, { listing: 'A', only: ['GET /v1/statistics', 'GET /v1/servers'] });
    expect(failing(report)).toEqual({
      'GET /v1/statistics': ['request failed: ECONNREFUSED'],
      'GET /v1/servers': ['request failed: ECONNREFUSED'],
    });
    expect(report.endpoints.map((e) => e.requests)).toEqual([1, 1]);
  });

  it('a server that does not answer in time', async () => {
    const served = await start(() => {});
    const report = await verify(served, { only: ['GET /v1/statistics'], timeoutMs: 50 });
    expect(report.endpoints[0]?.findings).toEqual(['request failed: no response within 0.05 s']);
  });

  it('a server that accepts every connection and closes it: the request settles at its deadline, a finding', async () => {
    // fetch may stay pending on such a socket, holding nothing that keeps a process alive: the deadline ends it.
    const server = createNetServer((socket) => socket.destroy());
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    const { port } = server.address() as AddressInfo;
    try {
      const report = await verifyContract({
        baseUrl: `http://127.0.0.1:${port}`,
        listing: 'B',
        only: ['GET /v1/statistics', 'GET /v1/bots/:id'],
        timeoutMs: 200,
      });
      expect(report.ok).toBe(false);
      // fetch may also see the close, as a socket error: a failure all the same.
      const failed = expect.stringMatching(/^request failed: (no response within 0\.2 s|UND_ERR_SOCKET|ECONNRESET)$/);
      expect(failing(report)).toEqual({ 'GET /v1/statistics': [failed], 'GET /v1/bots/:id': [failed] });
      // Nothing was received: nothing is said of the fields, which were not probed.
      expect(report.endpoints.map((e) => e.headers)).toEqual([
        { probed: false, sent: [], findings: [], notes: [] },
        { probed: false, sent: [], findings: [], notes: [] },
      ]);
    } finally {
      server.close();
    }
  });

  it.each([
    ['a host name that does not resolve', 'http://listing-limits.invalid', /^request failed: (ENOTFOUND|EAI_AGAIN)$/],
    ['TLS to a server that speaks plain HTTP', 'https://127.0.0.1:PORT', /^request failed: \S+/],
  ])('%s: a finding, not a pass', async (_what, url, finding) => {
    const served = await start(createApp({ listing: 'B' }));
    const baseUrl = url.replace('PORT', served.url.split(':').at(-1) as string);
    const report = await verify(served, { baseUrl, only: ['GET /v1/statistics'], timeoutMs: 5000 });
    expect(report.ok).toBe(false);
    expect(report.endpoints[0]?.findings).toEqual([expect.stringMatching(finding)]);
  });

  it('a route that answers 500 within the limit: a finding saying so, not a wrong limit', async () => {
    const app = createApp({ listing: 'B', routes: [] });
    // After the limiter has counted it, as a route that fails would.
    app.get('/v1/statistics', (_req, res) => {
      res.status(500).json({ error: 'database down' });
    });
    const served = await start(app);
    const report = await verify(served, { only: ['GET /v1/statistics'] });
    expect(report.endpoints[0]).toMatchObject({
      ok: false,
      findings: ["answered 500 on the first request of a window, within the contract's limit of 5"],
      windowSeen: 'not probed',
    });
  });

  it('a long field: quoted cut short, with its length; one too long to read: skipped, with its length', async () => {
    const policy = Array.from({ length: 110 }, (_, i) => `"p${i}";q=9;w=9`).join(', ');
    const ratelimit = Array.from({ length: 400 }, (_, i) => `"p${i}";r=1;t=1`).join(', ');
    const served = await start(
      createApp({
        listing: 'B',
        setup: (app) =>
          app.use((_req, res, next) => {
            const writeHead = res.writeHead;
            res.writeHead = function (this: typeof res, ...args: Parameters<typeof writeHead>) {
              res.setHeader('RateLimit-Policy', policy);
              res.setHeader('RateLimit', ratelimit);
              return writeHead.apply(this, args);
            } as typeof writeHead;
            next();
          }),
      }),
    );
    const report = await verify(served, { only: ['GET /v1/statistics'] });
    const cut = (text: string) => `${text.slice(0, 100)}… (${text.length.toLocaleString('en')} characters)`;
    expect([policy.length, ratelimit.length]).toEqual([1648, 6288]);
    expect(report.endpoints[0]?.headers.findings).toEqual([
      'RateLimit says ' + cut(ratelimit) + ': 6,288 characters, more than 4,096',
      `RateLimit-Policy says ${cut(policy)}, contract says q=5;w=1`,
    ]);
  });
});

describe('several limits on one endpoint', () => {
  /** GET /v1/bots at 2 a second and 10 per 15 seconds (given longest first), and an endpoint of one row. */
  const rows: EndpointRow[] = [
    { method: 'GET', path: '/v1/bots', limit: 10, windowMs: 15_000 },
    { method: 'GET', path: '/v1/statistics', limit: 3, windowMs: 1000 },
    { method: 'GET', path: '/v1/bots', limit: 2, windowMs: 1000 },
  ];
  const only = ['GET /v1/bots'];

  it.each(['fixed', 'sliding'] as const)(
    'a %s server that honours them: every row is filled in turn, paced by the others, and passes',
    async (window) => {
      const served = await start(createApp({ listing: rows, options: { window } }));
      const report = await verify(served, { listing: rows, window, only, token: 'Bot a' });
      expect(report.endpoints).toMatchObject([
        {
          endpoint: 'GET /v1/bots',
          limit: 2,
          windowMs: 1000,
          limits: [
            { limit: 2, windowMs: 1000 },
            { limit: 10, windowMs: 15_000 },
          ],
          ok: true,
          findings: [],
          notes: [],
          windowSeen: window,
        },
      ]);
      const plan = planVerification({ baseUrl: served.url, listing: rows, window, only, token: 'Bot a' });
      expect(served.requests).toBe(plan.requests);
      expect(report.endpoints[0]?.requests).toBe(plan.requests);
      // The first row's probe, another token's request, then the second row: filled up 2 at a time (fixed) or as
      // the first row's requests leave its window (sliding), refused, and served again once its window has ended.
      const own = served.log.filter((line) => line.endsWith('Bot a'));
      expect(own.filter((line) => line.startsWith('429')).length).toBe(window === 'fixed' ? 2 : 3);
      expect(own.at(-2)).toBe('429 GET /v1/bots Bot a');
      expect(own.at(-1)).toBe('200 GET /v1/bots Bot a');
    },
  );

  it.each<{ wrong: string; served: EndpointRow[]; failing: string[] }>([
    {
      wrong: 'the longer row one too high',
      served: [rows[2] as EndpointRow, { ...(rows[0] as EndpointRow), limit: 11 }],
      failing: [
        '10 per 15 s: allowed 11 requests, contract says 10',
        'RateLimit-Policy says "GET /v1/bots per 1s";q=2;w=1, "GET /v1/bots per 15s";q=11;w=15, contract says q=10;w=15',
        // when both rows have none left, the legacy fields show the one that resets last: there, still 1 left
        'X-RateLimit-Limit says 2, contract says 10',
      ],
    },
    {
      wrong: 'the longer row missing',
      served: [rows[2] as EndpointRow],
      failing: [
        '10 per 15 s: allowed 11 requests, contract says 10',
        'RateLimit-Policy says "GET /v1/bots";q=2;w=1, contract says q=10;w=15',
        'X-RateLimit-Limit says 2, contract says 10',
        'X-RateLimit-Remaining says 1 on request 11, expected 0',
      ],
    },
    {
      wrong: 'the shorter row missing',
      served: [rows[0] as EndpointRow],
      failing: [
        '2 per 1 s: allowed 3 requests, contract says 2',
        'RateLimit-Policy says "GET /v1/bots";q=10;w=15, contract says q=2;w=1',
        'X-RateLimit-Limit says 10, contract says 2',
        'X-RateLimit-Remaining says 9 on request 1, expected 1',
        "X-RateLimit-Reset-After says 15, not 0 to 1 s (the contract's window)",
        "X-RateLimit-Reset says 1767225615, not within 1 s (the contract's window) after the response's Date",
      ],
    },
  ])('$wrong: the row named in the finding', async ({ served: table, failing: found }) => {
    const served = await start(createApp({ listing: table }));
    const report = await verify(served, { listing: rows, only });
    expect(findingsOf(report.endpoints[0])).toEqual(found);
  });

  it('refuses a row that a longer window allowing no more requests makes unreachable, naming both', () => {
    const table: EndpointRow[] = [
      { method: 'GET', path: '/v1/bots', limit: 5, windowMs: 1000 },
      { method: 'GET', path: '/V1/Bots', limit: 5, windowMs: 10_000 },
    ];
    expect(() => planVerification({ baseUrl: 'http://127.0.0.1:1', listing: table })).toThrow(
      expect.objectContaining({
        code: 'ERR_INVALID_ROW',
        field: 'options.listing[0]',
        message:
          'verifyContract: options.listing[0] (GET /v1/bots, 5 per 1 s) is never reached: options.listing[1] ' +
          'allows no more (5 per 10 s), so it refuses first. The rows of one endpoint must allow more requests as ' +
          'their windows grow.',
      }),
    );
  });

  it('notes a row the shorter ones never let fill up, and checks the rest', async () => {
    // 2 a second leave no room for 6 in 2 seconds, once the margins around each window's end are kept.
    const table: EndpointRow[] = [
      { method: 'GET', path: '/v1/bots', limit: 2, windowMs: 1000 },
      { method: 'GET', path: '/v1/bots', limit: 6, windowMs: 2000 },
    ];
    const served = await start(createApp({ listing: table }));
    const report = await verify(served, { listing: table });
    expect(report.endpoints[0]).toMatchObject({
      ok: true,
      findings: [],
      notes: [
        "6 per 2 s: not checked: the endpoint's shorter limits, with the margins kept around their windows' ends, " +
          'do not let 6 requests into 2 s',
      ],
      windowSeen: 'fixed',
    });
  });
});

describe('a server that bans this client half-way', () => {
  it('is told on each endpoint it refuses with 403, not as a wrong limit', async () => {
    const served = await start(
      createApp({ listing: 'B', options: { ban: { after: 2, within: 600_000, duration: 600_000 } } }),
    );
    const report = await verify(served, { token: 'Bot banned' });
    // The second 429, GET /v1/bots's from the middle of its minute (31.25 s in), bans the token: every request after
    // it gets 403. Its probe's next request, after the window's end (62.25 s in), is the 27th: 569 s of the ban left.
    const banned = (request: number) =>
      `banned by the server: 403 on request ${request} (Retry-After: 569); not probed further`;
    expect(failing(report)).toEqual({
      'GET /v1/bots': [banned(27)],
      'GET /v1/bots/:id': [banned(1)],
      'POST /v1/bots/:id': [banned(1)],
      'GET /v1/bots/:id/upvotes': [banned(1)],
      'GET /v1/bots/:id/uptime': [banned(1)],
      'GET /v1/users/:id': [banned(1)],
      'GET /v1/users/:id/bots': [banned(1)],
    });
    expect(served.log.filter((line) => line.startsWith('403'))).toHaveLength(7);
  });

  it('a 403 the route gives every request is counted like any other answer, and noted', async () => {
    const forbidden: EndpointRow = { method: 'GET', path: '/v1/users/:id', limit: 2, windowMs: 1000 };
    const app = createApp({ listing: [forbidden], routes: [] });
    // After the limiter has counted it, as a route that checks permissions would.
    app.get('/v1/users/:id', (_req, res) => {
      res.status(403).json({ error: 'forbidden' });
    });
    const served = await start(app);
    const report = await verify(served, { listing: [forbidden] });
    expect(report.endpoints[0]).toMatchObject({
      ok: true,
      notes: ['GET /v1/users/1 answered 403', 'GET /v1/users/2 answered 403'],
    });
  });
});

describe('endpoints probed together', () => {
  it('stop when progress throws: the error rejects the run, and no probe sends another request', async () => {
    const served = await start(createApp({ listing: 'B' }));
    const failure = new Error('the terminal went away');
    const run = verify(served, {
      concurrency: 2,
      onProgress: (event) => {
        if (event.type === 'wait') throw failure;
      },
    });
    await expect(run).rejects.toBe(failure);
    // Both probes had sent their first request; neither sent another once one of them had failed.
    expect(served.requests).toBe(2);
  });
});

describe('hostile answers and options', () => {
  it('a fetch that throws something other than an Error: a finding naming it', async () => {
    const report = await verifyContract({
      baseUrl: 'http://127.0.0.1:1',
      listing: 'B',
      only: ['GET /v1/statistics'],
      fetch: () => Promise.reject('no network'),
    });
    expect(report.endpoints[0]?.findings).toEqual(['request failed: no network']);
  });

  it('waits of a year-long window are slept in parts, never with a timer beyond 2^31-1 ms', async () => {
    jest.useFakeTimers({ now: Date.UTC(2026, 0, 1) });
    const delays: number[] = [];
    const setTimeout = global.setTimeout;
    const spy = jest.spyOn(global, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return setTimeout(fn, ms);
    }) as typeof global.setTimeout);
    const year = 365 * 24 * 3600 * 1000;
    const row: EndpointRow = { method: 'GET', path: '/v1/statistics', limit: 1, windowMs: year };
    let sent = 0;
    const run = verifyContract({
      baseUrl: 'http://127.0.0.1:1',
      listing: [row],
      // The one request of a window passes, the next is refused until the year is over.
      fetch: async () =>
        sent++ === 1
          ? new Response(null, { status: 429, headers: { 'retry-after': String(year / 1000) } })
          : new Response(null, { status: 200 }),
    });
    for (let i = 0; i < 20 && sent < 4; i++) await jest.advanceTimersByTimeAsync(2 ** 31 - 1);
    const report = await run;
    spy.mockRestore();
    expect(report.endpoints[0]?.requests).toBe(4);
    expect(delays.length).toBeGreaterThan(10);
    expect(delays.filter((ms) => ms > 2 ** 31 - 1)).toEqual([]);
  });
});

describe('planVerification', () => {
  it('plans every request and wait without sending anything', async () => {
    const served = await start(createApp({ listing: 'B' }));
    const plan = planVerification({
      baseUrl: `${served.url}/api/`,
      listing: 'B',
      params: { id: '1234567890123456789' },
    });
    expect(plan.baseUrl).toBe(`${served.url}/api`);
    expect(plan.window).toBe('fixed');
    expect(plan.endpoints.map((e) => e.paths)).toEqual(
      listings.B.map((row) => {
        const path = (id: string) => `/api${row.path.replace(':id', id)}`;
        return row.path.includes(':id') ? [path('1234567890123456789'), path('1234567890123456790')] : [path('')];
      }),
    );
    // Per endpoint: one request at a window's start, limit - 1 from its middle and the 429; after its end, the limit
    // (of which limit - 1 only tell the kind of window); another token: one request, or limit + 1 over both paths.
    // One wait to the window's middle, one to the margin after its end: the grace, at most a quarter of the window.
    expect(plan.endpoints.map((e) => [e.endpoint, e.requests, e.waitMs, e.boundaryRequests])).toEqual([
      ['GET /v1/statistics', 1 + 4 + 1 + 5 + 1, 1250, 4],
      ['GET /v1/bots', 1 + 24 + 1 + 25 + 1, 61_000, 24],
      ['GET /v1/bots/:id', 1 + 1 + 1 + 2 + 3, 1250, 1],
      ['POST /v1/bots/:id', 1 + 14 + 1 + 15 + 16, 16_000, 14],
      ['GET /v1/bots/:id/upvotes', 1 + 1 + 1 + 2 + 3, 16_000, 1],
      ['GET /v1/bots/:id/uptime', 1 + 29 + 1 + 30 + 31, 16_000, 29],
      ['GET /v1/users/:id', 1 + 1 + 1 + 2 + 3, 1250, 1],
      ['GET /v1/users/:id/bots', 1 + 9 + 1 + 10 + 11, 16_000, 9],
    ]);
    expect(plan.endpoints.every((e) => e.boundaryWaitMs === 0)).toBe(true);
    expect(plan.requests).toBe(259);
    // Every endpoint at once: the run lasts as long as the longest window and its margin.
    expect(plan.concurrency).toBe(8);
    expect(plan.waitMs).toBe(61_000);
    expect(served.requests).toBe(0);
  });

  it.each([
    // the minute of GET /v1/bots in one lane, all the others after one another in the other
    [2, 1250 + 1250 + 16_000 * 4 + 1250],
    [1, 1250 * 3 + 61_000 + 16_000 * 4],
    [100, 61_000],
  ])('with a concurrency of %d, plans a run of %d ms', (concurrency, waitMs) => {
    const plan = planVerification({ baseUrl: 'http://127.0.0.1:1', listing: 'B', concurrency });
    expect(plan).toMatchObject({ concurrency, requests: 259, waitMs });
  });

  it('plans 2 requests after the window’s end for sliding windows (one passes, one gets the 429), and none for a limit of 1', () => {
    const plan = planVerification({ baseUrl: 'http://127.0.0.1:1', listing: 'A', window: 'sliding', graceMs: 500 });
    expect(plan.window).toBe('sliding');
    expect(plan.endpoints.map((e) => [e.endpoint, e.limit, e.requests, e.boundaryRequests, e.waitMs])).toEqual([
      ['GET /v1/statistics', 1, 1 + 1 + 1 + 1, 0, 1250],
      ['GET /v1/servers', 15, 1 + 14 + 1 + 2 + 1, 1, 120_500],
      ['GET /v1/servers/:id', 6, 1 + 5 + 1 + 2 + 7, 1, 15_500],
      ['GET /v1/servers/:id/upvotes', 15, 1 + 14 + 1 + 2 + 16, 1, 15_500],
      ['GET /v1/users/:id', 2, 1 + 1 + 1 + 2 + 3, 1, 1250],
      ['GET /v1/users/:id/servers', 6, 1 + 5 + 1 + 2 + 7, 1, 15_500],
    ]);
    expect(plan.waitMs).toBe(120_500);
  });

  it.each([
    ['123', '124'],
    ['1234567890123456789', '1234567890123456790'],
    ['abc', 'abc-2'],
    ['007', '8'],
  ])('the second value of %s is %s', (first, second) => {
    const plan = planVerification({
      baseUrl: 'http://127.0.0.1:1',
      listing: 'B',
      only: ['GET /v1/users/:id'],
      params: { id: first },
    });
    expect(plan.endpoints[0]?.paths).toEqual([`/v1/users/${first}`, `/v1/users/${second}`]);
  });

  it('encodes parameter values into the path', () => {
    const plan = planVerification({
      baseUrl: 'http://127.0.0.1:1',
      listing: 'B',
      only: ['GET /v1/users/:id'],
      params: { id: 'a b/c' },
    });
    expect(plan.endpoints[0]?.paths).toEqual(['/v1/users/a%20b%2Fc', '/v1/users/a%20b%2Fc-2']);
  });
});

describe('bad options fail before anything is sent, naming the option', () => {
  const base = { baseUrl: 'http://127.0.0.1:1', listing: 'B' } as const;
  it.each([
    [{ ...base, baseUrl: 'ftp://x' }, 'ERR_INVALID_OPTION', 'options.baseUrl'],
    [{ ...base, baseUrl: 'not a url' }, 'ERR_INVALID_OPTION', 'options.baseUrl'],
    [{ ...base, baseUrl: 'http://x/?q=1' }, 'ERR_INVALID_OPTION', 'options.baseUrl'],
    [{ ...base, listing: 'C' }, 'ERR_UNKNOWN_LISTING', 'options.listing'],
    [{ ...base, listing: undefined }, 'ERR_INVALID_OPTION', 'options.listing'],
    [
      { ...base, listing: [{ method: 'GET', path: '/x', limit: 0, windowMs: 1000 }] },
      'ERR_INVALID_ROW',
      'options.listing[0].limit',
    ],
    [{ ...base, only: [] }, 'ERR_INVALID_OPTION', 'options.only'],
    [{ ...base, only: ['GET /v1/bots', 'GET /v1/bot'] }, 'ERR_INVALID_OPTION', 'options.only[1]'],
    [{ ...base, params: { bot: '1' } }, 'ERR_INVALID_OPTION', 'options.params.bot'],
    [{ ...base, params: { id: ['1', '2', '3'] } }, 'ERR_INVALID_OPTION', 'options.params.id'],
    [{ ...base, params: { id: ['1', '1'] } }, 'ERR_INVALID_OPTION', 'options.params.id'],
    [{ ...base, params: { id: '' } }, 'ERR_INVALID_OPTION', 'options.params.id'],
    [{ ...base, token: 'a\nb' }, 'ERR_INVALID_OPTION', 'options.token'],
    [{ ...base, token: 'same', otherToken: 'same' }, 'ERR_INVALID_OPTION', 'options.otherToken'],
    [{ ...base, graceMs: -1 }, 'ERR_INVALID_OPTION', 'options.graceMs'],
    [{ ...base, window: 'slide' }, 'ERR_INVALID_OPTION', 'options.window'],
    [{ ...base, window: 'Sliding' }, 'ERR_INVALID_OPTION', 'options.window'],
    [{ ...base, timeoutMs: 0 }, 'ERR_INVALID_OPTION', 'options.timeoutMs'],
    [{ ...base, timeoutMs: 2 ** 31 }, 'ERR_INVALID_OPTION', 'options.timeoutMs'],
    [{ ...base, strictHeaders: 'yes' }, 'ERR_INVALID_OPTION', 'options.strictHeaders'],
    [{ ...base, concurrency: 0 }, 'ERR_INVALID_OPTION', 'options.concurrency'],
    [{ ...base, concurrency: 1.5 }, 'ERR_INVALID_OPTION', 'options.concurrency'],
    [{ ...base, concurrency: 'all' }, 'ERR_INVALID_OPTION', 'options.concurrency'],
    [
      {
        ...base,
        listing: [
          { method: 'GET', path: '/x', limit: 2, windowMs: 1000 },
          { method: 'GET', path: '/x', limit: 3, windowMs: 1000 },
        ],
      },
      'ERR_DUPLICATE_ROW',
      'options.listing[1]',
    ],
    [{ ...base, sleep: 5 }, 'ERR_INVALID_OPTION', 'options.sleep'],
    [{ ...base, tokn: 'x' }, 'ERR_UNKNOWN_OPTION', 'options.tokn'],
  ])('%j → %s at %s', async (options, code, field) => {
    const rejection = verifyContract(options as never);
    await expect(rejection).rejects.toBeInstanceOf(ListingLimitsError);
    await expect(rejection).rejects.toMatchObject({ code, field });
    expect(() => planVerification(options as never)).toThrow(
      new RegExp(`^verifyContract: ${field.replace(/[[\].]/g, '\\$&')} `),
    );
  });

  it('names the listings of the contract when the listing is missing', () => {
    expect(() => planVerification({ baseUrl: 'http://127.0.0.1:1' } as never)).toThrow(
      'verifyContract: options.listing is required: "A", "B", or an array of rows.',
    );
  });

  it('names the window kinds', () => {
    expect(() => planVerification({ ...base, window: 'slide' as 'sliding' })).toThrow(
      'verifyContract: options.window must be one of "fixed", "sliding"; got "slide". Did you mean `sliding`?',
    );
  });

  it('suggests the endpoint meant', () => {
    expect(() => planVerification({ ...base, only: ['GET /v1/bot'] })).toThrow(
      'verifyContract: options.only[0] "GET /v1/bot" is not an endpoint of listing B. Did you mean "GET /v1/bots"?',
    );
    expect(() => planVerification({ ...base, listing: 'A', params: { bot: '1' } })).toThrow(
      'verifyContract: options.params.bot is not a path parameter of the endpoints checked (parameters: :id).',
    );
  });
});
