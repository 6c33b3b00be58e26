// The example server in process: every endpoint's payload, its errors, a POST that changes later GETs, and the contract's limits.
import express from 'express';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import request from 'supertest';
import { createExampleApp } from '../example-server/app';
import { type EndpointRow, listings } from '../lib';
import { closeAfterTest, pathOf } from './helpers/app';
import { expectLimitHolds, rowsOf } from './helpers/contract';
import { storeCases, T0, useFakeWindows } from './helpers/stores';

type App = ReturnType<typeof createExampleApp>;

const error = (code: number, message: string) => ({ success: false, code, message });

const upvote = { user_id: expect.any(String), username: expect.any(String), voted_at: expect.any(String) };
const entry = {
  id: expect.any(String),
  name: expect.any(String),
  description: expect.any(String),
  tags: expect.any(Array),
  owner_id: expect.any(String),
  created_at: expect.any(String),
  upvotes: expect.any(Number),
};
const server = { ...entry, member_count: expect.any(Number) };
const bot = {
  ...entry,
  prefix: expect.any(String),
  server_count: expect.any(Number),
  shard_count: expect.any(Number),
  shards: expect.any(Array),
  stats_updated_at: expect.any(String),
};
const page = <T>(item: T, count: number, total: number, pages: number, at = 1) => ({
  results: Array.from({ length: count }, () => item),
  page: at,
  pages,
  per_page: 25,
  total,
});

const SERVER_1 = {
  id: '1',
  name: 'Forest Lounge',
  description: 'A friendly gaming community.',
  tags: ['gaming', 'anime'],
  owner_id: '25',
  created_at: '2022-03-09T00:00:00.000Z',
  member_count: 10,
  upvotes: 10,
};
const BOT_1 = {
  id: '1',
  name: 'TuneMaster',
  prefix: '?',
  description: 'A fun, music bot.',
  tags: ['fun', 'music'],
  owner_id: '29',
  created_at: '2025-10-16T00:00:00.000Z',
  server_count: 10,
  shard_count: 1,
  shards: [10],
  stats_updated_at: '2025-12-31T15:13:00.000Z',
  upvotes: 57,
};
const USER_2 = {
  id: '2',
  username: 'frosty_gecko',
  bio: 'Builds things at night.',
  created_at: '2023-07-25T00:00:00.000Z',
};

/** Sends what the endpoint accepts: POST /v1/bots/:id with credentials and a valid body. */
function send(app: App, row: EndpointRow, path = pathOf(row)) {
  const agent = request(app);
  return row.method === 'POST'
    ? agent.post(path).set('Authorization', 'test-token').send({ server_count: 42 })
    : agent.get(path);
}

/** Every page of a list, concatenated. */
async function all(app: App, path: string): Promise<Record<string, unknown>[]> {
  const first = await request(app).get(path).expect(200);
  const results = [...first.body.results];
  for (let p = 2; p <= first.body.pages; p++) {
    results.push(...(await request(app).get(`${path}?page=${p}`).expect(200)).body.results);
  }
  expect(results).toHaveLength(first.body.total);
  return results;
}

const sum = (items: Record<string, unknown>[], field: string) => items.reduce((s, i) => s + (i[field] as number), 0);

describe('every endpoint answers with its payload', () => {
  it.each([
    ['A', '/v1/statistics', { servers: 120, users: 60, upvotes: 4684, members: 954945 }],
    ['A', '/v1/servers', page(server, 25, 120, 5)],
    ['A', '/v1/servers?page=5', page(server, 20, 120, 5, 5)],
    ['A', '/v1/servers?page=6', page(server, 0, 120, 5, 6)],
    ['A', '/v1/servers/1', SERVER_1],
    ['A', '/v1/servers/1/upvotes', page(upvote, 10, 10, 1)],
    ['A', '/v1/users/2', { ...USER_2, servers: 2 }],
    ['A', '/v1/users/2/servers', page({ ...server, owner_id: '2' }, 2, 2, 1)],
    ['A', '/v1/users/1/servers', page(server, 0, 0, 1)],
    ['B', '/v1/statistics', { bots: 150, users: 60, upvotes: 6130, servers: 1256096, shards: 621 }],
    ['B', '/v1/bots', page(bot, 25, 150, 6)],
    ['B', '/v1/bots?page=6', page(bot, 25, 150, 6, 6)],
    ['B', '/v1/bots/1', BOT_1],
    ['B', '/v1/bots/1/upvotes', page(upvote, 25, 57, 3)],
    ['B', '/v1/bots/1/upvotes?page=3', page(upvote, 7, 57, 3, 3)],
    ['B', '/v1/bots/1/uptime', { bot_id: '1', checks: 4410, online: 4371, uptime: 99.12 }],
    ['B', '/v1/users/2', { ...USER_2, bots: 2 }],
    ['B', '/v1/users/2/bots', page({ ...bot, owner_id: '2' }, 2, 2, 1)],
  ] as const)('listing %s: GET %s', async (listing, path, body) => {
    const res = await request(createExampleApp({ listing }))
      .get(path)
      .expect(200)
      .expect('Content-Type', 'application/json; charset=utf-8');
    expect(res.body).toEqual(body);
  });

  it('lists in id order, page after page, the same in every app', async () => {
    const ids = (await all(createExampleApp({ listing: 'B' }), '/v1/bots')).map((b) => b.id);
    expect(ids).toEqual(Array.from({ length: 150 }, (_, i) => String(i + 1)));
    const [one, two] = [createExampleApp({ listing: 'A' }), createExampleApp({ listing: 'A' })];
    expect((await request(one).get('/v1/servers?page=3')).body).toEqual(
      (await request(two).get('/v1/servers?page=3')).body,
    );
  });

  it('lists upvotes newest first', async () => {
    const { results } = (await request(createExampleApp({ listing: 'B' })).get('/v1/bots/1/upvotes')).body;
    const times = results.map((u: { voted_at: string }) => u.voted_at);
    expect(times).toEqual([...times].sort().reverse());
  });

  it('listing A: statistics agree with the servers, and each server with its upvotes and owner', async () => {
    const app = createExampleApp({ listing: 'A' });
    const stats = (await request(app).get('/v1/statistics')).body;
    const servers = await all(app, '/v1/servers');
    expect(stats).toEqual({
      servers: servers.length,
      users: 60,
      upvotes: sum(servers, 'upvotes'),
      members: sum(servers, 'member_count'),
    });
    const upvotes = await all(app, '/v1/servers/7/upvotes');
    expect(upvotes).toHaveLength(servers[6]?.upvotes as number);
    const owner = servers[6]?.owner_id as string;
    const owned = await all(app, `/v1/users/${owner}/servers`);
    expect(owned.map((s) => s.id)).toEqual(servers.filter((s) => s.owner_id === owner).map((s) => s.id));
    expect((await request(app).get(`/v1/users/${owner}`)).body.servers).toBe(owned.length);
  });

  it('listing B: statistics agree with the bots, shards add up, uptime is the share of checks online', async () => {
    const app = createExampleApp({ listing: 'B' });
    const stats = (await request(app).get('/v1/statistics')).body;
    const bots = await all(app, '/v1/bots');
    expect(stats).toEqual({
      bots: bots.length,
      users: 60,
      upvotes: sum(bots, 'upvotes'),
      servers: sum(bots, 'server_count'),
      shards: sum(bots, 'shard_count'),
    });
    for (const b of bots) {
      expect((b.shards as number[]).reduce((x, y) => x + y, 0)).toBe(b.server_count);
      expect(b.shards).toHaveLength(b.shard_count as number);
    }
    const uptime = (await request(app).get('/v1/bots/9/uptime')).body;
    expect(uptime.uptime).toBe(Math.round((uptime.online / uptime.checks) * 10000) / 100);
    expect(uptime.online).toBeLessThanOrEqual(uptime.checks);
    expect((await request(app).get('/v1/bots/9/upvotes')).body.total).toBe(bots[8]?.upvotes);
  });
});

describe('errors are JSON { success, code, message }', () => {
  it.each([
    ['A', '/v1/servers/0', 'Not found: no server has the id "0".'],
    ['A', '/v1/servers/121/upvotes', 'Not found: no server has the id "121".'],
    ['A', '/v1/users/61', 'Not found: no user has the id "61".'],
    ['A', '/v1/users/x/servers', 'Not found: no user has the id "x".'],
    ['A', '/v1/bots', 'Not found: GET /v1/bots is not an endpoint of this listing.'],
    ['B', '/v1/bots/151', 'Not found: no bot has the id "151".'],
    ['B', '/v1/bots/abc/upvotes', 'Not found: no bot has the id "abc".'],
    ['B', '/v1/bots/999/uptime', 'Not found: no bot has the id "999".'],
    ['B', '/v1/users/0/bots', 'Not found: no user has the id "0".'],
    ['B', '/v1/servers', 'Not found: GET /v1/servers is not an endpoint of this listing.'],
    ['B', '/v2/bots', 'Not found: GET /v2/bots is not an endpoint of this listing.'],
    ['B', '/', 'Not found: GET / is not an endpoint of this listing.'],
  ] as const)('listing %s: GET %s is a 404', async (listing, path, message) => {
    const res = await request(createExampleApp({ listing }))
      .get(path)
      .expect(404)
      .expect('Content-Type', 'application/json; charset=utf-8');
    expect(res.body).toEqual(error(404, message));
  });

  it('a method the listing does not serve is a 404', async () => {
    const res = await request(createExampleApp({ listing: 'B' }))
      .delete('/v1/bots/1')
      .expect(404);
    expect(res.body).toEqual(error(404, 'Not found: DELETE /v1/bots/1 is not an endpoint of this listing.'));
  });

  it.each(['/v1/bots?page=0', '/v1/bots?page=abc', '/v1/bots?page=-1', '/v1/bots?page=1.5', '/v1/bots?page=1&page=2'])(
    'GET %s is a 400 naming page',
    async (path) => {
      const res = await request(createExampleApp({ listing: 'B' }))
        .get(path)
        .expect(400);
      expect(res.body).toEqual(
        error(400, expect.stringMatching(/^page must be a whole number from 1 \(\?page=2\); got /)),
      );
    },
  );

  it.each([
    ['no header', undefined],
    ['an empty header', ''],
  ])('POST /v1/bots/:id with %s is a 401', async (_case, authorization) => {
    const req = request(createExampleApp({ listing: 'B' })).post('/v1/bots/1');
    if (authorization !== undefined) req.set('Authorization', authorization);
    const res = await req.send({ server_count: 1 }).expect(401);
    expect(res.body).toEqual(
      error(401, 'Unauthorized: send an Authorization header (the example server accepts any value).'),
    );
  });

  it('POST to an unknown bot is a 404, checked before the body', async () => {
    const res = await request(createExampleApp({ listing: 'B' }))
      .post('/v1/bots/999')
      .set('Authorization', 'token')
      .type('json')
      .send('{not json')
      .expect(404);
    expect(res.body).toEqual(error(404, 'Not found: no bot has the id "999".'));
  });

  const objectNeeded =
    'body must be a JSON object sent with Content-Type: application/json, such as {"server_count": 1234, "shards": [600, 634]}.';
  it.each([
    ['a JSON array', '[1]', objectNeeded],
    ['JSON null', 'null', objectNeeded],
    ['a JSON number', '42', objectNeeded],
    [
      'no server_count',
      '{}',
      'body.server_count is required: the number of servers the bot is in, as in {"server_count": 1234, "shards": [600, 634]}.',
    ],
    ['a misspelt field', '{"servercount": 5}', 'body.servercount is not a field. Did you mean `server_count`?'],
    ['a string count', '{"server_count": "5"}', 'body.server_count must be a whole number of 0 or more; got "5".'],
    ['a negative count', '{"server_count": -1}', 'body.server_count must be a whole number of 0 or more; got -1.'],
    ['a fractional count', '{"server_count": 1.5}', 'body.server_count must be a whole number of 0 or more; got 1.5.'],
    [
      'an unsafe count',
      '{"server_count": 1e300}',
      'body.server_count must be a whole number of 0 or more; got 1e+300.',
    ],
    [
      'a zero shard_count',
      '{"server_count": 5, "shard_count": 0}',
      'body.shard_count must be a whole number of 1 or more; got 0.',
    ],
    [
      'shards not an array',
      '{"server_count": 5, "shards": 5}',
      'body.shards must be an array of 1 to 10000 server counts, one per shard; got 5.',
    ],
    [
      'no shards',
      '{"server_count": 5, "shards": []}',
      'body.shards must be an array of 1 to 10000 server counts, one per shard; got [].',
    ],
    [
      'a bad shard',
      '{"server_count": 5, "shards": [2, "3"]}',
      'body.shards[1] must be a whole number of 0 or more; got "3".',
    ],
    [
      'shards not adding up',
      '{"server_count": 5, "shards": [2, 2]}',
      'body.shards adds up to 4 servers, but body.server_count is 5.',
    ],
    [
      'shard_count against shards',
      '{"server_count": 5, "shard_count": 3, "shards": [2, 3]}',
      'body.shard_count is 3, but body.shards lists 2 shards.',
    ],
    [
      'a long value, cut short',
      `{"server_count": "${'x'.repeat(100)}"}`,
      `body.server_count must be a whole number of 0 or more; got "${'x'.repeat(36)}....`,
    ],
  ])('POST /v1/bots/:id with %s is a 400 naming the field', async (_case, body, message) => {
    const res = await request(createExampleApp({ listing: 'B' }))
      .post('/v1/bots/1')
      .set('Authorization', 'token')
      .type('json')
      .send(body)
      .expect(400);
    expect(res.body).toEqual(error(400, message));
  });

  it.each([
    ['malformed JSON', 'application/json', '{"server_count": 5'],
    ['a truncated string', 'application/json', '{"server_count'],
  ])('POST /v1/bots/:id with %s is a JSON 400 naming the body', async (_case, type, body) => {
    const res = await request(createExampleApp({ listing: 'B' }))
      .post('/v1/bots/1')
      .set('Authorization', 'token')
      .set('Content-Type', type)
      .send(body)
      .expect(400)
      .expect('Content-Type', 'application/json; charset=utf-8');
    expect(res.body).toEqual(error(400, expect.stringMatching(/^body is not valid JSON: \S/)));
  });

  it.each([
    ['no body', undefined, undefined],
    ['a form body', 'application/x-www-form-urlencoded', 'server_count=5'],
    ['a text body', 'text/plain', '{"server_count": 5}'],
  ])('POST /v1/bots/:id with %s is a 400 asking for JSON', async (_case, type, body) => {
    const req = request(createExampleApp({ listing: 'B' }))
      .post('/v1/bots/1')
      .set('Authorization', 'token');
    if (type) req.set('Content-Type', type);
    const res = await (body === undefined ? req : req.send(body)).expect(400);
    expect(res.body).toEqual(error(400, objectNeeded));
  });

  it('a body over the size limit is a JSON 413', async () => {
    const res = await request(createExampleApp({ listing: 'B' }))
      .post('/v1/bots/1')
      .set('Authorization', 'token')
      .type('json')
      .send(`{"server_count": 5, "x": "${'x'.repeat(200_000)}"}`)
      .expect(413);
    expect(res.body).toEqual(error(413, 'body: request entity too large'));
  });

  it('a store that fails counts in memory, its onFailure by default: never a 500', async () => {
    class BrokenLimiter extends RateLimiterMemory {
      override consume(): Promise<never> {
        return Promise.reject(new Error('store down'));
      }
    }
    const lines: string[] = [];
    const app = createExampleApp({
      listing: 'B',
      store: (e) => new BrokenLimiter({ points: e.limit, duration: e.windowMs / 1000 }),
      log: (line) => lines.push(line),
    });
    const res = await request(app).get('/v1/bots').expect(200);
    expect(res.headers.ratelimit).toBe('"GET /v1/bots";r=24;t=60');
    expect(lines).toEqual(['[B] GET /v1/bots -> 200 | GET /v1/bots: 24 of 25 left']);
  });
});

describe('POST /v1/bots/:id', () => {
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());

  it('changes what later GETs of the bot, its owner and the statistics return', async () => {
    const app = createExampleApp({ listing: 'B' });
    const before = (await request(app).get('/v1/statistics')).body;
    const posted = await request(app)
      .post('/v1/bots/1')
      .set('Authorization', 'token')
      .send({ server_count: 5000, shards: [2400, 2600] })
      .expect(200);
    const updated = {
      ...BOT_1,
      server_count: 5000,
      shard_count: 2,
      shards: [2400, 2600],
      stats_updated_at: new Date(T0).toISOString(),
    };
    expect(posted.body).toEqual(updated);
    expect((await request(app).get('/v1/bots/1')).body).toEqual(updated);
    expect((await request(app).get('/v1/bots')).body.results[0]).toEqual(updated);
    expect((await request(app).get('/v1/users/29/bots')).body.results).toContainEqual(updated);
    expect((await request(app).get('/v1/statistics')).body).toEqual({
      ...before,
      servers: before.servers - 10 + 5000,
      shards: before.shards - 1 + 2,
    });
  });

  it.each([
    ['server_count alone: shards unknown, shard_count one per 2,500 servers', { server_count: 6000 }, 3, []],
    ['server_count and shard_count', { server_count: 6000, shard_count: 8 }, 8, []],
    ['shards without shard_count', { server_count: 6, shards: [1, 2, 3] }, 3, [1, 2, 3]],
    ['zero servers', { server_count: 0 }, 1, []],
  ])('stores %s', async (_case, body, shard_count, shards) => {
    const app = createExampleApp({ listing: 'B' });
    await request(app).post('/v1/bots/2').set('Authorization', 'token').send(body).expect(200);
    const res = await request(app).get('/v1/bots/2').expect(200);
    expect(res.body).toMatchObject({ server_count: body.server_count, shard_count, shards });
  });

  it('a refused body changes nothing', async () => {
    const app = createExampleApp({ listing: 'B' });
    await request(app).post('/v1/bots/1').set('Authorization', 'token').send({ server_count: -5 }).expect(400);
    expect((await request(app).get('/v1/bots/1')).body).toEqual(BOT_1);
  });

  it('changes only the app it was sent to: each app has data of its own', async () => {
    const [one, two] = [createExampleApp({ listing: 'B' }), createExampleApp({ listing: 'B' })];
    await request(one).post('/v1/bots/1').set('Authorization', 'token').send({ server_count: 1 }).expect(200);
    expect((await request(two).get('/v1/bots/1')).body).toEqual(BOT_1);
  });
});

describe.each(storeCases)('the limits of each listing hold on the example server ($name)', (store) => {
  beforeAll(() => store.start?.());
  afterAll(() => store.stop?.());
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());
  /** The example app of `listing` on a store of this block's, its middleware closed after the test. */
  const appOf = (listing: 'A' | 'B') => {
    const app = createExampleApp({ listing, store: store.make() });
    closeAfterTest(app.locals.limiter as { close(): void });
    return app;
  };

  it.each([...rowsOf('A'), ...rowsOf('B')])(
    'listing %s, %s: exactly `limit` requests pass, then 429 with exact headers and body, until the window ends',
    async (listing, _name, row) => {
      const app = appOf(listing);
      await expectLimitHolds(row, store, () => send(app, row));
      await store.advance(row.windowMs);
      await send(app, row).expect(200);
    },
  );

  it('counts answers that end in 404, 401 and 400, as the original service did', async () => {
    const app = appOf('B');
    const missing = await request(app).get('/v1/bots/999').expect(404);
    expect(missing.headers['x-ratelimit-remaining']).toBe('1');
    await request(app).get('/v1/bots/1').expect(200);
    await request(app).get('/v1/bots/1').expect(429);

    for (let i = 14; i >= 0; i--) {
      const unauthorized = await request(app).post('/v1/bots/1').send({ server_count: 1 }).expect(401);
      expect(unauthorized.headers['x-ratelimit-remaining']).toBe(String(i));
    }
    await request(app).post('/v1/bots/1').send({ server_count: 1 }).expect(429);

    for (let i = 0; i < 15; i++) {
      await request(app).post('/v1/bots/1').set('Authorization', 'token').send({ server_count: -1 }).expect(400);
    }
    await request(app).post('/v1/bots/1').set('Authorization', 'token').send({ server_count: 1 }).expect(429);
  });

  it('serves the limiter metrics at /metrics, unlimited, with exact counts', async () => {
    const app = appOf('B');
    await request(app).get('/v1/bots/1').expect(200);
    await request(app).get('/v1/bots/1').expect(200);
    await request(app).get('/v1/bots/1').expect(429);
    for (let i = 0; i < 3; i++) await request(app).get('/metrics').expect(200);
    const res = await request(app)
      .get('/metrics')
      .expect('Content-Type', /^text\/plain/);
    const counted = res.text.split('\n').filter((line) => line.includes('endpoint="GET /v1/bots/:id"'));
    expect(counted).toEqual(
      [
        ['allowed', 2],
        ['limited', 1],
        ['banned', 0],
        ['shadow_limited', 0],
        ['store_unavailable', 0],
      ].map(([outcome, n]) => `listing_limits_requests_total{endpoint="GET /v1/bots/:id",outcome="${outcome}"} ${n}`),
    );
  });

  it('counts path parameters as one endpoint, existing ids or not', async () => {
    const app = appOf('A');
    await request(app).get('/v1/users/1').expect(200);
    await request(app).get('/v1/users/999').expect(404);
    const res = await request(app).get('/v1/users/2').expect(429);
    expect(res.headers['x-ratelimit-bucket']).toBe('GET /v1/users/:id');
  });
});

describe('createExampleApp', () => {
  // GET /v1/bots/:id allows 2 a second: the window must not end between requests on a slow machine.
  beforeEach(useFakeWindows);
  afterEach(() => jest.useRealTimers());

  it('can be mounted inside another app, limits and log relative to the mount', async () => {
    const lines: string[] = [];
    const outer = express();
    outer.use('/api', createExampleApp({ listing: 'B', log: (line) => lines.push(line) }));
    const res = await request(outer).get('/api/v1/bots/1').expect(200);
    expect(res.body).toEqual(BOT_1);
    expect(res.headers['x-ratelimit-bucket']).toBe('GET /v1/bots/:id');
    await request(outer).get('/v1/bots/1').expect(404);
    expect(lines).toEqual(['[B] GET /api/v1/bots/1 -> 200 | GET /v1/bots/:id: 1 of 2 left']);
  });

  it('writes one access-log line per request: endpoint and remaining, refused, or not limited', async () => {
    const lines: string[] = [];
    const app = createExampleApp({ listing: 'B', log: (line) => lines.push(line) });
    await request(app).get('/v1/bots/1').expect(200);
    await request(app).get('/v1/bots/7?x=1').expect(200);
    await request(app).get('/v1/bots/1').expect(429);
    await request(app).post('/v1/bots/1').expect(401);
    await request(app).get('/v1/nothing').expect(404);
    expect(lines).toEqual([
      '[B] GET /v1/bots/1 -> 200 | GET /v1/bots/:id: 1 of 2 left',
      '[B] GET /v1/bots/7?x=1 -> 200 | GET /v1/bots/:id: 0 of 2 left',
      '[B] GET /v1/bots/1 -> 429 | GET /v1/bots/:id: refused, retry after 1s',
      '[B] POST /v1/bots/1 -> 401 | POST /v1/bots/:id: 14 of 15 left',
      '[B] GET /v1/nothing -> 404 | not limited',
    ]);
  });

  it.each([
    [undefined, 'createExampleApp: options must be an object such as { listing: "B" }.'],
    [{}, 'createExampleApp: options.listing must be "A" or "servers", "B" or "bots"; got undefined.'],
    [
      { listing: 'B ' },
      'createExampleApp: options.listing must be "A" or "servers", "B" or "bots"; got "B ". Did you mean `B` (bots)?',
    ],
    [
      { listing: 'bot' },
      'createExampleApp: options.listing must be "A" or "servers", "B" or "bots"; got "bot". Did you mean `bots` (listing B)?',
    ],
    [
      { listing: listings.B },
      expect.stringMatching(/^createExampleApp: options\.listing must be "A" or "servers", "B" or "bots"; got \[/),
    ],
    [{ listing: 'B', log: 'yes' }, 'createExampleApp: options.log must be a function that takes one line.'],
  ])('refuses options %p, naming the field', (options, message) => {
    expect(() => createExampleApp(options as never)).toThrow(expect.objectContaining({ name: 'TypeError', message }));
  });

  it('hands the store to listingLimits, which names a bad one', () => {
    expect(() => createExampleApp({ listing: 'A', store: 'memory' as never })).toThrow(
      'listingLimits: options.store must be a store: a function (counter) => rate-limiter-flexible limiter, such as memoryStore(); got "memory".',
    );
  });
});
