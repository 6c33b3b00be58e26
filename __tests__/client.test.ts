// listingClient over real HTTP against the example server: paced by the table and the server's headers, never refused.
import type { RequestListener } from 'node:http';
import { createExampleApp } from '../example-server/app';
import { type EndpointRow, type ListingName, listings } from '../lib';
import { ListingClientError, listingClient, type ListingClientOptions, type WaitEvent } from '../lib/client';
import { planVerification } from '../lib/verify';
import { createApp } from './helpers/app';
import { serverPerTest } from './helpers/serve';
import { T0, useFakeWindows } from './helpers/stores';

const start = serverPerTest();

beforeEach(useFakeWindows);
afterEach(() => jest.useRealTimers());

/** Fetch over real sockets, counting the requests until their body has been read, so that the test knows when the client is idle. */
function countingFetch() {
  let open = 0;
  const send: typeof fetch = async (input, init) => {
    open++;
    try {
      const res = await fetch(input, init);
      const text = await res.text();
      return new Response(text === '' ? null : text, { status: res.status, headers: res.headers });
    } finally {
      open--;
    }
  };
  return { send, idle: () => open === 0 };
}

const turn = () => new Promise<void>((done) => setImmediate(done));

/** Resolves once nothing has been on the wire for a few turns of the event loop. */
async function quiet(idle: () => boolean): Promise<void> {
  for (let turns = 0; turns < 5; turns = idle() ? turns + 1 : 0) await turn();
}

/**
 * Settles `calls`, moving the fake clock to the next timer whenever nothing is on the wire: the windows of the
 * client and of the server end only when the test says so.
 */
async function drive<T>(idle: () => boolean, calls: Promise<T>[]): Promise<PromiseSettledResult<T>[]> {
  let settled = false;
  const all = Promise.allSettled(calls).then((results) => {
    settled = true;
    return results;
  });
  for (let steps = 0; !settled; steps++) {
    let quiet = 0;
    while (quiet < 5 && !settled) {
      await turn();
      quiet = idle() ? quiet + 1 : 0;
    }
    if (settled) break;
    if (steps > 10_000 || jest.getTimerCount() === 0) throw new Error('the calls wait for nothing');
    jest.advanceTimersToNextTimer();
    jest.advanceTimersByTime(0);
  }
  return all;
}

/** An example server of `listing` that notes, per request, the fake time it came at and its answer. */
async function exampleServer(listing: ListingName, app: RequestListener = createExampleApp({ listing })) {
  const seen: { at: number; line: string }[] = [];
  const served = await start((req, res) => {
    const at = Date.now() - T0;
    res.on('finish', () => seen.push({ at, line: `${res.statusCode} ${req.method} ${req.url?.replace(/\?.*/, '')}` }));
    app(req, res);
  });
  return { served, seen };
}

/** A client of `url` over the counting fetch, which notes every wait it is told of. */
function clientOf(url: string, options: Partial<ListingClientOptions> = {}) {
  const { send, idle } = countingFetch();
  const waits: WaitEvent[] = [];
  const api = listingClient({
    listing: 'B',
    baseUrl: url,
    token: 'Bot one',
    fetch: send,
    onWait: (event) => waits.push(event),
    ...options,
  });
  return { api, idle, waits };
}

const rowsOf = (listing: ListingName) =>
  listings[listing].map((row): [ListingName, string, EndpointRow] => [listing, `${row.method} ${row.path}`, row]);

describe('bursts on every endpoint of both listings', () => {
  it.each([...rowsOf('A'), ...rowsOf('B')])(
    'listing %s, %s: the whole limit in each window, no 429',
    async (listing, endpoint, row) => {
      const { served, seen } = await exampleServer(listing);
      // Waits of two windows: beyond the default maxWaitMs where the window is a minute or more.
      const { api, idle, waits } = clientOf(served.url, { listing, maxWaitMs: 2 ** 31 - 1 });
      const { limit, windowMs } = row;
      const calls = Array.from({ length: 2 * limit + 1 }, (_, n) =>
        row.method === 'POST'
          ? api.post(row.path, { id: '1', n }, { server_count: n })
          : api.get(row.path, { id: '1', n }),
      );
      const results = await drive(idle, calls);
      expect(results.map((r) => r.status)).toEqual(calls.map(() => 'fulfilled'));
      const path = row.path.replace(':id', '1');
      expect(seen).toEqual([
        ...Array.from({ length: limit }, () => ({ at: 0, line: `200 ${row.method} ${path}` })),
        ...Array.from({ length: limit }, () => ({ at: windowMs, line: `200 ${row.method} ${path}` })),
        { at: 2 * windowMs, line: `200 ${row.method} ${path}` },
      ]);
      expect(waits).toEqual([
        ...Array.from({ length: limit }, () => ({ endpoint, ms: windowMs, reason: 'table' })),
        { endpoint, ms: 2 * windowMs, reason: 'table' },
      ]);
      await api.close();
    },
  );
});

it.each(['fixed', 'sliding'] as const)(
  'a server counting %s windows never refuses the client: at most 25 requests in any minute, the boundary included',
  async (window) => {
    const { served, seen } = await exampleServer('B', createExampleApp({ listing: 'B', window }));
    const { api, idle, waits } = clientOf(served.url);
    await drive(idle, [api.get('/v1/bots', { n: 0 })]);
    jest.advanceTimersByTime(59_000);
    await drive(
      idle,
      Array.from({ length: 24 }, (_, n) => api.get('/v1/bots', { n: `a${n}` })),
    );
    jest.advanceTimersByTime(1_000);
    // A minute after the first request, one place is free: the 24 others wait for the requests of 59 s to leave.
    const results = await drive(
      idle,
      Array.from({ length: 25 }, (_, n) => api.get('/v1/bots', { n: `b${n}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(25).fill('fulfilled'));
    expect(seen.map(({ at, line }) => `${at} ${line.slice(0, 3)}`)).toEqual([
      '0 200',
      ...Array(24).fill('59000 200'),
      '60000 200',
      ...Array(24).fill('119000 200'),
    ]);
    expect(waits).toEqual(Array(24).fill({ endpoint: 'GET /v1/bots', ms: 59_000, reason: 'table' }));
  },
);

it('two clients on one token are kept right by the server: the second waits for what the first spent, none is lost', async () => {
  const { served, seen } = await exampleServer('B');
  const first = clientOf(served.url);
  const second = clientOf(served.url);
  const idle = () => first.idle() && second.idle();
  const shape = '/v1/users/:id/bots'; // 10 per 15 seconds
  await drive(
    idle,
    Array.from({ length: 6 }, (_, n) => first.api.get(shape, { id: '1', n })),
  );
  // The second client's first answer says that 7 of 10 are spent: of the next 5, 3 go now and 2 wait for the window.
  await drive(idle, [second.api.get(shape, { id: '1', n: 'a' })]);
  const later = Array.from({ length: 5 }, (_, n) => second.api.get(shape, { id: '1', n: `b${n}` }));
  // The first client has not heard of them: its call is refused once, waits out Retry-After, and is sent again.
  const refused = first.api.get(shape, { id: '1', n: 'c' });
  const results = await drive(idle, [...later, refused]);
  expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
  expect(seen.map(({ at, line }) => `${at} ${line}`)).toEqual([
    ...Array(10).fill('0 200 GET /v1/users/1/bots'),
    '0 429 GET /v1/users/1/bots',
    ...Array(3).fill('15000 200 GET /v1/users/1/bots'),
  ]);
  expect(second.waits).toEqual(Array(2).fill({ endpoint: `GET ${shape}`, ms: 15_000, reason: 'server' }));
  expect(first.waits).toEqual([{ endpoint: `GET ${shape}`, ms: 15_000, reason: 'retry-after' }]);
});

it('a granted token is paced by its own higher limits from its first answer on', async () => {
  const app = createApp({ listing: 'B', options: { grants: { 'Bot partner': { multiplier: 10 } } } });
  const { served, seen } = await exampleServer('B', app);
  const { api, idle } = clientOf(served.url, { token: 'Bot partner' });
  // GET /v1/bots/:id: 2 per second by the table, 20 for this token. Two go before any answer, 18 once it came.
  const results = await drive(
    idle,
    Array.from({ length: 21 }, (_, n) => api.get('/v1/bots/:id', { id: '1', n })),
  );
  expect(results.map((r) => r.status)).toEqual(Array(21).fill('fulfilled'));
  expect(seen.map(({ at, line }) => `${at} ${line}`)).toEqual([
    ...Array(20).fill('0 200 GET /v1/bots/1'),
    '1000 200 GET /v1/bots/1',
  ]);
});

it('100 reports within a second become at most 20 POSTs, and the last body arrives', async () => {
  const { served, seen } = await exampleServer('B');
  const errors: unknown[] = [];
  const { api, idle } = clientOf(served.url, { onError: (error) => errors.push(error) });
  const settle = () => quiet(idle);
  for (let n = 1; n <= 100; n++) {
    api.report('/v1/bots/:id', { id: '1' }, { server_count: n });
    await settle();
    jest.advanceTimersByTime(9);
  }
  await drive(idle, [api.close()]);
  const reader = clientOf(served.url);
  const bot = await drive(reader.idle, [reader.api.get('/v1/bots/:id', { id: '1' })]);
  // Every 5th change is sent while the POST row allows (15 per 15 seconds); the 80th waits for the window, and the
  // body sent then is the latest one.
  const posts = seen.filter(({ line }) => line.startsWith('200 POST'));
  expect(posts.map(({ at }) => at)).toEqual([...Array.from({ length: 15 }, (_, i) => 36 + 45 * i), 36 + 15_000]);
  expect(bot).toEqual([{ status: 'fulfilled', value: expect.objectContaining({ server_count: 100 }) }]);
  expect(seen.filter(({ line }) => !line.startsWith('200'))).toEqual([]);
  expect(errors).toEqual([]);
});

it('sends a report once reportIntervalMs has passed since the last send, and close() sends what is pending', async () => {
  const { served, seen } = await exampleServer('B');
  const { api, idle } = clientOf(served.url, { reportIntervalMs: 30_000 });
  const settle = () => quiet(idle);
  api.report('/v1/bots/:id', { id: '1' }, { server_count: 1 });
  api.report('/v1/bots/:id', { id: '1' }, { server_count: 2 });
  api.report('/v1/bots/:id', { id: '1' }, { server_count: 2 }); // the same body: no change
  await settle();
  jest.advanceTimersByTime(29_999);
  await settle();
  expect(seen).toEqual([]);
  jest.advanceTimersByTime(1);
  await settle();
  api.report('/v1/bots/:id', { id: '2' }, { server_count: 3 });
  await drive(idle, [api.close()]);
  expect(seen).toEqual([
    { at: 30_000, line: '200 POST /v1/bots/1' },
    { at: 30_000, line: '200 POST /v1/bots/2' },
  ]);
  expect(() => api.report('/v1/bots/:id', { id: '1' }, { server_count: 4 })).toThrow(
    expect.objectContaining({ code: 'ERR_CLOSED' }),
  );
});

it('listeners that throw break no call: every wait is still told, every call settles, close() resolves', async () => {
  const { served, seen } = await exampleServer('B');
  const told: string[] = [];
  const { api, idle } = clientOf(served.url, {
    onWait: (event) => {
      told.push(`wait ${event.reason} ${event.ms}`);
      throw new Error('onWait fails');
    },
    onError: (error) => {
      told.push(`error ${(error as ListingClientError).code} ${(error as ListingClientError).status}`);
      throw new Error('onError fails');
    },
  });
  // GET /v1/bots/:id: 2 per second by the table, so the third waits a second after the first answer.
  const gets = [1, 2, 3].map((id) => api.get('/v1/bots/:id', { id: String(id) }));
  api.report('/v1/bots/:id', { id: '1' }, { server_count: -1 });
  const results = await drive(idle, [...gets, api.close()]);
  expect(results.map((result) => result.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
  expect(told).toEqual(['wait table 1000', 'error ERR_HTTP 400']);
  expect(seen.map(({ line }) => line)).toEqual([
    '200 GET /v1/bots/1',
    '200 GET /v1/bots/2',
    '400 POST /v1/bots/1',
    '200 GET /v1/bots/3',
  ]);
});

it('a banned token rejects with bannedUntil, without retrying, and sends nothing more until the ban ends', async () => {
  const app = createApp({ listing: 'B' });
  const limiter = app.locals.limiter as {
    ban(client: { token: string }, options: { duration: number }): Promise<unknown>;
  };
  await limiter.ban({ token: 'Bot one' }, { duration: 600_000 });
  const { served, seen } = await exampleServer('B', app);
  const { api, idle } = clientOf(served.url, { retries: 3 });
  const [first, second] = await drive(idle, [
    api.get('/v1/bots/:id', { id: '1' }),
    api.post('/v1/bots/:id', { id: '1' }, { server_count: 1 }),
  ]);
  const until = new Date(T0 + 600_000);
  expect(first).toEqual({
    status: 'rejected',
    reason: expect.objectContaining({ code: 'ERR_BANNED', status: 403, bannedUntil: until }),
  });
  expect(second).toEqual({
    status: 'rejected',
    reason: expect.objectContaining({ code: 'ERR_BANNED', status: 403, bannedUntil: until }),
  });
  const [third] = await drive(idle, [api.get('/v1/bots', {})]);
  expect(third).toEqual({
    status: 'rejected',
    reason: expect.objectContaining({ code: 'ERR_BANNED', status: undefined, bannedUntil: until }),
  });
  expect(seen.map(({ line }) => line)).toEqual(['403 GET /v1/bots/1', '403 POST /v1/bots/1']);
});

it('a call that would wait longer than maxWaitMs rejects at once, saying how long', async () => {
  const { served, seen } = await exampleServer('B');
  const { api, idle, waits } = clientOf(served.url, { maxWaitMs: 999 });
  const results = await drive(
    idle,
    [1, 2, 3].map((n) => api.get('/v1/bots/:id', { id: '1', n })),
  );
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
  const error = (results[2] as PromiseRejectedResult).reason as ListingClientError;
  expect(error).toBeInstanceOf(ListingClientError);
  expect([error.code, error.waitMs, error.message]).toEqual([
    'ERR_WAIT_TOO_LONG',
    1000,
    'listingClient: GET /v1/bots/:id: would wait 1000 ms, more than maxWaitMs.',
  ]);
  expect(seen).toHaveLength(2);
  expect(waits).toEqual([]);
});

it('caches list answers for a minute, shares concurrent identical GETs, and takes 0 to turn caching off', async () => {
  const { served, seen } = await exampleServer('B');
  const { api, idle } = clientOf(served.url, { cache: { '/v1/bots/:id': 0 } });
  const [a, b] = await drive(idle, [api.get('/v1/bots'), api.get('/v1/bots')]);
  expect(a).toEqual(b);
  jest.advanceTimersByTime(59_999);
  await drive(idle, [api.get('/v1/bots')]);
  expect(seen.map(({ at }) => at)).toEqual([0]);
  jest.advanceTimersByTime(1);
  await drive(idle, [api.get('/v1/bots'), api.get('/v1/bots', { page: 2 })]);
  await drive(idle, [api.get('/v1/bots/:id', { id: '1' }), api.get('/v1/bots/:id', { id: '1' })]);
  await drive(idle, [api.get('/v1/bots/:id', { id: '1' })]);
  expect(seen.map(({ at, line }) => `${at} ${line}`)).toEqual([
    '0 200 GET /v1/bots',
    '60000 200 GET /v1/bots',
    '60000 200 GET /v1/bots',
    '60000 200 GET /v1/bots/1',
    '60000 200 GET /v1/bots/1',
  ]);
});

it('an aborted call leaves the line, rejects with the reason of its signal, and is never sent', async () => {
  const { served, seen } = await exampleServer('B');
  const { api, idle } = clientOf(served.url);
  const controller = new AbortController();
  const calls = [1, 2, 3, 4].map((n) =>
    api.get('/v1/bots/:id', { id: '1', n }, n === 3 ? { signal: controller.signal } : {}),
  );
  controller.abort(new Error('not needed'));
  const results = await drive(idle, calls);
  expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : r.status))).toEqual([
    'fulfilled',
    'fulfilled',
    'not needed',
    'fulfilled',
  ]);
  expect(seen.map(({ at }) => at)).toEqual([0, 0, 1000]);
});

it('retries a GET after a 5xx a bounded number of times, and never a POST', async () => {
  let answers = 0;
  const flaky: RequestListener = (_req, res) => {
    answers++;
    res.writeHead(answers === 3 ? 200 : 503, { 'Content-Type': 'application/json' }).end(`{"answer":${answers}}`);
  };
  const { served, seen } = await exampleServer('B', flaky);
  const { api, idle, waits } = clientOf(served.url);
  expect(await drive(idle, [api.get('/v1/statistics')])).toEqual([{ status: 'fulfilled', value: { answer: 3 } }]);
  // Each backoff is told: about 0.5 s, then about 1 s, less up to half at random.
  expect(waits).toEqual([
    { endpoint: 'GET /v1/statistics', ms: expect.any(Number), reason: 'backoff' },
    { endpoint: 'GET /v1/statistics', ms: expect.any(Number), reason: 'backoff' },
  ]);
  expect(waits.map(({ ms }) => [ms >= 250 && ms <= 500, ms >= 500 && ms <= 1000])).toEqual([
    [true, false],
    [false, true],
  ]);
  answers = 0;
  const [posted] = await drive(idle, [api.post('/v1/bots/:id', { id: '1' }, { server_count: 1 })]);
  expect(posted).toEqual({
    status: 'rejected',
    reason: expect.objectContaining({ code: 'ERR_HTTP', status: 503, body: { answer: 1 } }),
  });
  expect(seen.map(({ line }) => line)).toEqual([
    '503 GET /v1/statistics',
    '503 GET /v1/statistics',
    '200 GET /v1/statistics',
    '503 POST /v1/bots/1',
  ]);
});

it('rejects a path shape that is not in the table, missing path parameters, and a body that is not JSON', async () => {
  const api = listingClient({ listing: 'B', baseUrl: 'http://127.0.0.1:1' });
  await expect(api.get('/v1/bot/:id', { id: '1' })).rejects.toMatchObject({
    code: 'ERR_UNKNOWN_ENDPOINT',
    message: 'listingClient: GET "/v1/bot/:id": is not an endpoint of the table. Did you mean `GET /v1/bots/:id`?',
  });
  await expect(api.get('/v1/bots/:id', {})).rejects.toMatchObject({
    code: 'ERR_INVALID_PARAMS',
    message: 'listingClient: GET /v1/bots/:id: params.id is required.',
  });
  expect(() => api.report('/v1/bots/:id', { id: '1' }, { server_count: 1n })).toThrow(
    expect.objectContaining({ code: 'ERR_INVALID_PARAMS' }),
  );
  await expect(api.post('/v1/bots/:id', { id: '1' }, { server_count: 1n })).rejects.toMatchObject({
    code: 'ERR_INVALID_PARAMS',
    message:
      'listingClient: POST /v1/bots/:id: body cannot be sent as JSON: TypeError: Do not know how to serialize a BigInt',
  });
  await api.close();
  await expect(api.get('/v1/bots')).rejects.toMatchObject({ code: 'ERR_CLOSED' });
});

describe('options are checked when the client is made', () => {
  const base = { listing: 'B', baseUrl: 'http://127.0.0.1:3002' };
  const row = { method: 'GET', path: '/x', limit: 0, windowMs: 1000 };
  it.each([
    [{ ...base, listing: 'C' }, 'ERR_UNKNOWN_LISTING', 'options.listing'],
    [{ baseUrl: base.baseUrl }, 'ERR_INVALID_OPTION', 'options.listing'],
    [{ ...base, listing: [row] }, 'ERR_INVALID_ROW', 'options.listing[0].limit'],
    [{ ...base, baseUrl: 'ftp://example.org' }, 'ERR_INVALID_OPTION', 'options.baseUrl'],
    [{ ...base, baseUrl: 'http://example.org/?a=1' }, 'ERR_INVALID_OPTION', 'options.baseUrl'],
    [{ ...base, token: ' Bot x' }, 'ERR_INVALID_OPTION', 'options.token'],
    [{ ...base, maxWait: 5 }, 'ERR_UNKNOWN_OPTION', 'options.maxWait'],
    [{ ...base, maxWaitMs: -1 }, 'ERR_INVALID_OPTION', 'options.maxWaitMs'],
    [{ ...base, maxWaitMs: 2 ** 31 }, 'ERR_INVALID_OPTION', 'options.maxWaitMs'],
    [{ ...base, timeoutMs: 0 }, 'ERR_INVALID_OPTION', 'options.timeoutMs'],
    [{ ...base, timeoutMs: 1.5 }, 'ERR_INVALID_OPTION', 'options.timeoutMs'],
    [
      {
        ...base,
        listing: [
          { ...row, limit: 1 },
          { ...row, limit: 2 },
        ],
      },
      'ERR_DUPLICATE_ROW',
      'options.listing[1]',
    ],
    [{ ...base, cache: 60_000 }, 'ERR_INVALID_OPTION', 'options.cache'],
    [{ ...base, cache: { '/v1/bot': 0 } }, 'ERR_INVALID_OPTION', 'options.cache["/v1/bot"]'],
    [{ ...base, cache: { '/v1/bots': 1.5 } }, 'ERR_INVALID_OPTION', 'options.cache["/v1/bots"]'],
    [{ ...base, reportIntervalMs: 0 }, 'ERR_INVALID_OPTION', 'options.reportIntervalMs'],
    [{ ...base, retries: 11 }, 'ERR_INVALID_OPTION', 'options.retries'],
    [{ ...base, fetch: 'fetch' }, 'ERR_INVALID_OPTION', 'options.fetch'],
    [{ ...base, onWait: true }, 'ERR_INVALID_OPTION', 'options.onWait'],
    [{ ...base, onError: {} }, 'ERR_INVALID_OPTION', 'options.onError'],
  ])('%j: %s naming %s', (options, code, field) => {
    expect(() => listingClient(options as unknown as ListingClientOptions)).toThrow(
      expect.objectContaining({ name: 'ListingLimitsError', code, field }),
    );
  });

  it('names the field and the fix in the message', () => {
    expect(() => listingClient({ ...base, maxWait: 5 } as unknown as ListingClientOptions)).toThrow(
      'listingClient: options.maxWait is not an option. Did you mean `maxWaitMs`?',
    );
    expect(() => listingClient({ ...base, cache: { '/v1/bot': 0 } } as ListingClientOptions)).toThrow(
      'listingClient: options.cache["/v1/bot"] is not the path of a GET row of the table. Did you mean `/v1/bots`?',
    );
  });
});

describe('the options the client shares with verifyContract are checked alike, in the same words', () => {
  const base = { listing: 'B', baseUrl: 'http://127.0.0.1:3002' };
  it.each([
    [{ baseUrl: 'ftp://x' }, 'options.baseUrl must be an http or https URL without query or fragment; got "ftp://x".'],
    [
      { baseUrl: 'http://x/#top' },
      'options.baseUrl must be an http or https URL without query or fragment; got "http://x/#top".',
    ],
    [{ baseUrl: 5 }, 'options.baseUrl must be an http or https URL without query or fragment; got 5.'],
    [
      {
        baseUrl: {
          toString() {
            throw new Error('a hostile toString');
          },
        },
      },
      'options.baseUrl must be an http or https URL without query or fragment; got {}.',
    ],
    [
      { token: ' Bot x' },
      'options.token must be a non-empty header value of printable ASCII, without spaces at either end.',
    ],
    [
      { token: 'a\nb' },
      'options.token must be a non-empty header value of printable ASCII, without spaces at either end.',
    ],
    [{ fetch: 'fetch' }, 'options.fetch must be a function; got "fetch".'],
    [{ timeoutMs: 0 }, 'options.timeoutMs must be a whole number of milliseconds, from 1 to 2147483647; got 0.'],
    [{ timeoutMs: '5' }, 'options.timeoutMs must be a whole number of milliseconds, from 1 to 2147483647; got "5".'],
  ])('%j: %s', (wrong, message) => {
    const options = { ...base, ...wrong } as never;
    expect(() => listingClient(options)).toThrow(new Error(`listingClient: ${message}`));
    expect(() => planVerification(options)).toThrow(new Error(`verifyContract: ${message}`));
  });

  it('names the unit of the whole numbers of its own', () => {
    expect(() => listingClient({ ...base, retries: 11 } as never)).toThrow(
      new Error('listingClient: options.retries must be a whole number of retries, from 0 to 10; got 11.'),
    );
    expect(() => listingClient({ ...base, cache: { '/v1/bots': -1 } } as never)).toThrow(
      new Error(
        'listingClient: options.cache["/v1/bots"] must be a whole number of milliseconds, from 0 to 86400000; got -1.',
      ),
    );
  });
});

describe('what the server says', () => {
  it('an unlimited grant is learned: no pacing while the answers carry no rate-limit field, the table once they return', async () => {
    const app = createApp({ listing: 'B' });
    const limiter = app.locals.limiter as {
      grant(client: { token: string }, grant: 'unlimited'): Promise<boolean>;
      revoke(client: { token: string }): Promise<boolean>;
    };
    const { served, seen } = await exampleServer('B', app);
    const { api, idle } = clientOf(served.url);
    // GET /v1/bots/:id: 2 per second by the table. Its first answer tells the limit: the server speaks its fields.
    await drive(idle, [api.get('/v1/bots/:id', { id: '1', n: 'first' })]);
    await limiter.grant({ token: 'Bot one' }, 'unlimited');
    // One goes in the place left; its answer has no field, where they came before: a grant, and the rest go at once.
    await drive(
      idle,
      Array.from({ length: 10 }, (_, n) => api.get('/v1/bots/:id', { id: '1', n })),
    );
    await limiter.revoke({ token: 'Bot one' });
    // The grant is gone: the next answer carries the fields again, and the table paces from then on.
    await drive(idle, [api.get('/v1/bots/:id', { id: '1', n: 'a' })]);
    await drive(
      idle,
      Array.from({ length: 3 }, (_, n) => api.get('/v1/bots/:id', { id: '1', n: `b${n}` })),
    );
    expect(seen.map(({ at, line }) => `${at} ${line}`)).toEqual([
      ...Array(12).fill('0 200 GET /v1/bots/1'),
      ...Array(2).fill('1000 200 GET /v1/bots/1'),
      '2000 200 GET /v1/bots/1',
    ]);
  });

  it('a server that never sends rate-limit fields: its silence is no grant, every call paced by the table', async () => {
    const app = createApp({ listing: 'B', options: { headers: false } });
    const { served, seen } = await exampleServer('B', app);
    const { api, idle, waits } = clientOf(served.url);
    const results = await drive(
      idle,
      Array.from({ length: 6 }, (_, n) => api.get('/v1/bots/:id', { id: '1', n })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(6).fill('fulfilled'));
    expect(seen.map(({ at, line }) => `${at} ${line}`)).toEqual(
      [0, 0, 1000, 1000, 2000, 2000].map((at) => `${at} 200 GET /v1/bots/1`),
    );
    expect(waits.map(({ ms, reason }) => `${reason} ${ms}`)).toEqual([
      'table 1000',
      'table 1000',
      'table 2000',
      'table 2000',
    ]);
  });

  it('a ban met by a report bans the client: calls in line and later calls reject without a request', async () => {
    const app = createApp({ listing: 'B' });
    const limiter = app.locals.limiter as {
      ban(client: { token: string }, options: { duration: number }): Promise<unknown>;
    };
    const { served, seen } = await exampleServer('B', app);
    const errors: unknown[] = [];
    const { api, idle } = clientOf(served.url, { onError: (error) => errors.push(error) });
    await drive(idle, [api.get('/v1/bots/:id', { id: '1', n: 1 }), api.get('/v1/bots/:id', { id: '1', n: 2 })]);
    await limiter.ban({ token: 'Bot one' }, { duration: 600_000 });
    // In line for the next window when the report meets the ban.
    const waiting = api.get('/v1/bots/:id', { id: '1', n: 3 });
    for (let n = 1; n <= 5; n++) api.report('/v1/bots/:id', { id: '1' }, { server_count: n });
    const [inLine] = await drive(idle, [waiting]);
    const [later] = await drive(idle, [api.get('/v1/bots')]);
    const until = new Date(T0 + 600_000);
    const ban = { code: 'ERR_BANNED', status: undefined, bannedUntil: until };
    expect([inLine, later]).toEqual([
      { status: 'rejected', reason: expect.objectContaining(ban) },
      { status: 'rejected', reason: expect.objectContaining(ban) },
    ]);
    expect(errors).toEqual([
      expect.objectContaining({
        code: 'ERR_BANNED',
        status: 403,
        bannedUntil: until,
        message:
          'listingClient: POST /v1/bots/:id: the token is banned, until 2026-01-01T00:10:00.000Z (answered 403: ' +
          'You are banned from this API for circumventing its rate limits).',
      }),
    ]);
    expect(seen.map(({ at, line }) => `${at} ${line}`)).toEqual([
      '0 200 GET /v1/bots/1',
      '0 200 GET /v1/bots/1',
      '0 403 POST /v1/bots/1',
    ]);
  });

  it('an HTTP error says the status and the message of the server', async () => {
    const { served } = await exampleServer('B');
    const { api, idle } = clientOf(served.url);
    const [missing] = await drive(idle, [api.get('/v1/bots/:id', { id: 'nope' })]);
    expect(missing).toEqual({
      status: 'rejected',
      reason: expect.objectContaining({
        code: 'ERR_HTTP',
        status: 404,
        message: 'listingClient: GET /v1/bots/:id: answered 404: Not found: no bot has the id "nope".',
      }),
    });
  });

  it('waits at most 60 s by default, or the longest window of the table: a call beyond rejects at once', async () => {
    const { served, seen } = await exampleServer('A');
    const { api, idle } = clientOf(served.url, { listing: 'A' });
    // GET /v1/servers: 15 per 2 minutes. The 16th to 30th wait one window, the 31st would wait two.
    const results = await drive(
      idle,
      Array.from({ length: 31 }, (_, n) => api.get('/v1/servers', { n })),
    );
    expect(results.map((r) => r.status)).toEqual([...Array(30).fill('fulfilled'), 'rejected']);
    expect((results[30] as PromiseRejectedResult).reason).toEqual(
      expect.objectContaining({ code: 'ERR_WAIT_TOO_LONG', waitMs: 240_000 }),
    );
    expect(seen).toHaveLength(30);
  });
});
