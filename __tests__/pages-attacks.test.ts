// Attacks on the pages' edges: forged and replayed CSRF tokens, other origins, stale logins, rotated addresses, leaks.
import { createHmac } from 'node:crypto';
import { inspect } from 'node:util';
import type { ErrorRequestHandler, Express } from 'express';
import Redis from 'ioredis';
import request from 'supertest';
import { listings, memoryStore, redisStore } from '../lib';
import {
  ADMIN,
  contactForm,
  cookiesOf,
  csrfOf,
  flat,
  loggedIn,
  pagesAppPerTest,
  type PagesAppOptions,
  valid,
} from './helpers/pages';
import { describeRedis, describeRedisServer, RedisServer, redisForBlock } from './helpers/redis';

const pagesApp = pagesAppPerTest();
const SECRET = 'a-secret-of-at-least-32-characters-0001';
const FORGED = 'This form did not come from this page, or has expired.';
const ban = { by: 'ip', value: '203.0.113.9', duration: '3600' };
/** A request as `limits.requests.file()` takes it, for filling the store. */
const requestInput = {
  token: valid.token,
  ask: { multiplier: 10 },
  proof: { kind: 'bot' as const, servers: 120_000, shards: 120, link: 'https://example.com/bot' },
  contact: 'ops@example.com',
  reason: 'We serve a great many servers.',
};

/** The cookies of `cookies` as one request's `Cookie` header. */
const cookieHeader = (cookies: Record<string, string | undefined>) => Object.values(cookies).join('; ');

/** The errors that reach the app's error handler, which answers them 500. */
function errorsOf(app: Express): unknown[] {
  const seen: unknown[] = [];
  const handler: ErrorRequestHandler = (error, _req, res, _next) => {
    seen.push(error);
    res.status(500).send('error');
  };
  app.use(handler);
  return seen;
}

describe('CSRF tokens are bound to the session they were given in', () => {
  it('a token of the public login form, sent with its cookies and the operator’s login cookie, makes no ban', async () => {
    const { app, limits } = pagesApp();
    const operator = await loggedIn(app);
    const form = await request(app).get('/admin/limits/login').expect(200);
    const forged = await request(app)
      .post('/admin/limits/bans/new')
      .set(
        'Cookie',
        cookieHeader({ ...cookiesOf(form), 'listing-limits.admin': operator.cookies['listing-limits.admin'] }),
      )
      .type('form')
      .send({ ...ban, _csrf: csrfOf(form.text) });
    expect([forged.status, flat(forged.text).includes(FORGED)]).toEqual([403, true]);
    expect(await limits.bans()).toEqual([]);
  });

  it('the token of the login form is no good once logged in; the page’s token is', async () => {
    const { app, limits } = pagesApp();
    const agent = request.agent(app);
    const _csrf = csrfOf((await agent.get('/admin/limits/login').expect(200)).text);
    await agent.post('/admin/limits/login').type('form').send({ token: ADMIN, _csrf }).expect(303);
    await agent
      .post('/admin/limits/bans/new')
      .type('form')
      .send({ ...ban, _csrf })
      .expect(403);
    expect(await limits.bans()).toEqual([]);
    const page = await agent.get('/admin/limits/').expect(200);
    await agent
      .post('/admin/limits/bans/new')
      .type('form')
      .send({ ...ban, _csrf: csrfOf(page.text) })
      .expect(303);
    expect((await limits.bans()).map((b) => b.key)).toEqual(['ip:203.0.113.9']);
  });

  it('a token of another login, with its CSRF cookie, is no good with this login', async () => {
    const { app, limits } = pagesApp(undefined, { secret: SECRET });
    const [a, b] = [await loggedIn(app), await loggedIn(app)];
    const forged = await request(app)
      .post('/admin/limits/bans/new')
      .set(
        'Cookie',
        cookieHeader({ ...a.cookies, 'listing-limits.admin': b.cookies['listing-limits.admin'] as string }),
      )
      .type('form')
      .send({ ...ban, _csrf: csrfOf(a.page.text) });
    expect(forged.status).toBe(403);
    // ...and with its own cookies, it is.
    await request(app)
      .post('/admin/limits/bans/new')
      .set('Cookie', cookieHeader(a.cookies))
      .type('form')
      .send({ ...ban, _csrf: csrfOf(a.page.text) })
      .expect(303);
    expect((await limits.bans()).length).toBe(1);
  });

  it('the contact form takes the token of its own form session only', async () => {
    const { app, limits } = pagesApp(undefined, { secret: SECRET });
    const mine = await request(app).get('/limits/request').expect(200);
    const another = await request(app).get('/limits/request').expect(200);
    const login = await request(app).get('/admin/limits/login').expect(200);
    const post = (cookies: request.Response, form: request.Response) =>
      request(app)
        .post('/limits/request')
        .set('Cookie', cookieHeader(cookiesOf(cookies)))
        .type('form')
        .send({ ...valid, _csrf: csrfOf(form.text) });
    // Another browser's token with this browser's cookies; the cookies and token of the operator's login form.
    expect([(await post(mine, another)).status, (await post(login, login)).status]).toEqual([403, 403]);
    expect(await limits.requests.list()).toEqual([]);
    await post(mine, mine).expect(303);
  });
});

describe('a POST from another origin is refused before it is read or counted', () => {
  /** A browser on the operator's page (authorize lets it in): the page's token and cookies. */
  async function operatorPage(options?: PagesAppOptions) {
    const { app, limits } = pagesApp(() => true, options);
    const page = await request(app).get('/admin/limits/').expect(200);
    const post = (headers: Record<string, string>) =>
      request(app)
        .post('/admin/limits/bans/new')
        .set('Cookie', cookieHeader(cookiesOf(page)))
        .set(headers)
        .type('form')
        .send({ ...ban, _csrf: csrfOf(page.text) });
    return { limits, post };
  }

  it.each([
    [{ Origin: 'https://evil.example' }],
    [{ Origin: 'null' }],
    [{ Origin: 'http://pages.example:8080' }],
    [{ Origin: 'http://pages.example.evil.example' }],
    [{ 'Sec-Fetch-Site': 'cross-site' }],
    [{ 'Sec-Fetch-Site': 'same-site' }],
    [{ 'Sec-Fetch-Site': 'none' }],
    [{ Origin: 'http://pages.example', 'Sec-Fetch-Site': 'cross-site' }],
  ])('with the page’s token and cookies, %j is refused', async (headers) => {
    const { limits, post } = await operatorPage();
    const res = await post({ Host: 'pages.example', ...headers });
    expect([res.status, flat(res.text).includes(FORGED)]).toEqual([403, true]);
    expect(await limits.bans()).toEqual([]);
  });

  it.each([
    [{}],
    [{ Origin: 'http://pages.example' }],
    [{ 'Sec-Fetch-Site': 'same-origin' }],
    // What Chromium sends for a page's own form under `Referrer-Policy: no-referrer`.
    [{ Origin: 'null', 'Sec-Fetch-Site': 'same-origin' }],
  ])('with the page’s token and cookies, %j is taken', async (headers) => {
    const { limits, post } = await operatorPage();
    await post({ Host: 'pages.example', ...headers }).expect(303);
    expect((await limits.bans()).length).toBe(1);
  });

  it.each([
    ['https://pages.example', 303],
    ['http://pages.example', 403],
    ['https://evil.example', 403],
  ])('behind a proxy that passes on the host and HTTPS, Origin %s is answered %i', async (origin, status) => {
    const { limits, post } = await operatorPage({ setup: (app) => app.set('trust proxy', true) });
    const forwarded = { 'X-Forwarded-Host': 'pages.example', 'X-Forwarded-Proto': 'https' };
    await post({ ...forwarded, Origin: origin }).expect(status);
    expect((await limits.bans()).length).toBe(status === 303 ? 1 : 0);
  });

  it('refuses the contact form and the login from another site, and does not count them against the address', async () => {
    const { app, limits } = pagesApp();
    const file = await contactForm(app);
    for (let i = 0; i < 6; i++) await file(valid).set('Sec-Fetch-Site', 'cross-site').expect(403);
    expect(await limits.requests.list()).toEqual([]);
    await file(valid).expect(303);
    const agent = request.agent(app);
    const _csrf = csrfOf((await agent.get('/admin/limits/login').expect(200)).text);
    for (let i = 0; i < 5; i++) {
      await agent
        .post('/admin/limits/login')
        .set('Origin', 'https://evil.example')
        .type('form')
        .send({ token: `guess-${i}`, _csrf })
        .expect(403);
    }
    // The address's 3 logins a minute are all left for the operator.
    await agent.post('/admin/limits/login').type('form').send({ token: ADMIN, _csrf }).expect(303);
  });
});

describe('a login lasts sessionMs from the moment it is made', () => {
  /** A login cookie as the page would set it, signed with `secret`. */
  const signed = (value: string, secret = SECRET) => {
    const signature = createHmac('sha256', secret).update(value).digest('base64').replace(/=+$/, '');
    return `listing-limits.admin=${encodeURIComponent(`s:${value}.${signature}`)}`;
  };
  const id = 'AAAAAAAAAAAAAAAAAAAAAA';
  const HOUR = 3600_000;

  /** The part of a real login's cookie that binds it to the admin token and the logins' epoch. */
  const boundOf = (cookie: string | undefined) => /\.\d{13}\.([\w-]{22})\./.exec(decodeURIComponent(cookie ?? ''))?.[1];

  it.each([
    {
      what: 'issued a minute ago',
      cookie: (now: number, b: string) => signed(`${id}.${now - 60_000}.${b}`),
      status: 200,
    },
    {
      what: 'issued 8 hours ago, the default sessionMs',
      cookie: (now: number, b: string) => signed(`${id}.${now - 8 * HOUR}.${b}`),
      status: 303,
    },
    {
      what: 'issued 2 minutes ahead of this clock',
      cookie: (now: number, b: string) => signed(`${id}.${now + 120_000}.${b}`),
      status: 303,
    },
    {
      what: 'of the form of an expiry time and an id',
      cookie: (now: number, b: string) => signed(`${now + HOUR}.${id}.${b}`),
      status: 303,
    },
    { what: 'without what it is bound to', cookie: (now: number) => signed(`${id}.${now - 60_000}`), status: 303 },
    {
      what: 'bound to something else',
      cookie: (now: number) => signed(`${id}.${now - 60_000}.${'B'.repeat(22)}`),
      status: 303,
    },
    {
      what: 'signed with another secret',
      cookie: (now: number, b: string) => signed(`${id}.${now - 60_000}.${b}`, `${SECRET}-other`),
      status: 303,
    },
    {
      what: 'unsigned',
      cookie: (now: number, b: string) => `listing-limits.admin=${id}.${now - 60_000}.${b}`,
      status: 303,
    },
    { what: 'with a short id', cookie: (now: number, b: string) => signed(`AAAA.${now - 60_000}.${b}`), status: 303 },
  ])('a login cookie $what: $status', async ({ cookie, status }) => {
    const { app } = pagesApp(undefined, { secret: SECRET });
    // A login made on the page, for the epoch of the logins and what a login is bound to.
    const bound = boundOf((await loggedIn(app)).cookies['listing-limits.admin']) as string;
    expect(bound).toMatch(/^[\w-]{22}$/);
    await request(app).get('/admin/limits/').set('Cookie', cookie(Date.now(), bound)).expect(status);
  });

  it('ends when sessionMs has passed since it was made, by the clock (Date faked)', async () => {
    jest.useFakeTimers({
      // A whole second: the cookie's Expires, which the agent reads, has no milliseconds.
      now: Math.ceil(Date.now() / 1000) * 1000,
      // Only Date: timers and ticks run for real, for the HTTP under the test.
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    try {
      const { app } = pagesApp(undefined, { admin: { sessionMs: 60_000 } });
      const issued = Date.now();
      const { agent } = await loggedIn(app);
      jest.setSystemTime(issued + 59_999);
      await agent.get('/admin/limits/').expect(200);
      jest.setSystemTime(issued + 60_000);
      await agent.get('/admin/limits/').expect(303).expect('Location', '/admin/limits/login');
    } finally {
      jest.useRealTimers();
    }
  });

  it('ends when sessionMs has passed, in real time', async () => {
    const { app } = pagesApp(undefined, { admin: { sessionMs: 1000 } });
    const agent = request.agent(app);
    const _csrf = csrfOf((await agent.get('/admin/limits/login').expect(200)).text);
    const login = await agent.post('/admin/limits/login').type('form').send({ token: ADMIN, _csrf }).expect(303);
    const cookie = decodeURIComponent(cookiesOf(login)['listing-limits.admin'] as string);
    const issued = Number(/\.(\d{13})\./.exec(cookie)?.[1]);
    await new Promise((resolve) => setTimeout(resolve, issued + 1000 - Date.now() + 5));
    await agent.get('/admin/limits/').expect(303).expect('Location', '/admin/limits/login');
  });
});

describe('a login the server ended is refused, its cookie replayed or not', () => {
  /** The page with a login cookie: 200 while its login is in force, else the way to the login form. */
  const page = (app: Express, cookie: string | undefined) =>
    request(app)
      .get('/admin/limits/')
      .set('Cookie', cookie ?? '')
      .then((res) => (res.status === 200 ? 200 : `${res.status} ${res.headers.location}`));
  const OUT = '303 /admin/limits/login';

  it('a logout ends its login: a copy of its cookie kept before is refused, another login is not', async () => {
    const { app } = pagesApp();
    const [mine, other] = [await loggedIn(app), await loggedIn(app)];
    const kept = mine.cookies['listing-limits.admin'];
    await mine.agent
      .post('/admin/limits/logout')
      .type('form')
      .send({ _csrf: csrfOf(mine.page.text) })
      .expect(303);
    expect([await page(app, kept), await page(app, other.cookies['listing-limits.admin'])]).toEqual([OUT, 200]);
  });

  it('"Log out everywhere" ends every login made before it; a login after it holds', async () => {
    const { app } = pagesApp();
    const [a, b] = [await loggedIn(app), await loggedIn(app)];
    expect(flat(a.page.text)).toContain(
      '<form method="post" action="/admin/limits/logout/everywhere" data-confirm="End the login of every operator, on every instance?">',
    );
    await a.agent
      .post('/admin/limits/logout/everywhere')
      .type('form')
      .send({ _csrf: csrfOf(a.page.text) })
      .expect(303)
      .expect('Location', '/admin/limits/login');
    expect([
      await page(app, a.cookies['listing-limits.admin']),
      await page(app, b.cookies['listing-limits.admin']),
    ]).toEqual([OUT, OUT]);
    const c = await loggedIn(app);
    expect(await page(app, c.cookies['listing-limits.admin'])).toBe(200);
  });

  it('"Log out everywhere" needs the CSRF token of the login', async () => {
    const { app } = pagesApp();
    const a = await loggedIn(app);
    const form = await request(app).get('/admin/limits/login').expect(200);
    await a.agent
      .post('/admin/limits/logout/everywhere')
      .type('form')
      .send({ _csrf: csrfOf(form.text) })
      .expect(403);
    expect(await page(app, a.cookies['listing-limits.admin'])).toBe(200);
  });

  it('a new ADMIN_TOKEN ends the logins of the old one, with the same secret and store', async () => {
    const store = memoryStore();
    const before = pagesApp(undefined, { store, secret: SECRET });
    const cookie = (await loggedIn(before.app)).cookies['listing-limits.admin'];
    const after = pagesApp(undefined, { store, secret: SECRET, admin: { authorize: { token: `${ADMIN}-new` } } });
    expect([await page(before.app, cookie), await page(after.app, cookie)]).toEqual([200, OUT]);
  });
});

describe('the forms’ limiters count networks as the middleware does', () => {
  const behindProxy = (more: PagesAppOptions = {}) =>
    pagesApp(undefined, { ...more, setup: (app) => app.set('trust proxy', true) });

  it.each([
    ['one IPv6 /64', ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3', '2001:db8:1:2:0:0:0:4'], {}],
    [
      'one IPv4 address, plain and IPv4-mapped',
      ['203.0.113.9', '::ffff:203.0.113.9', '::ffff:cb00:7109', '203.0.113.9'],
      {},
    ],
    [
      'one /48, with ipv6Subnet: 48',
      ['2001:db8:1:1::1', '2001:db8:1:2::1', '2001:db8:1:3::1', '2001:db8:1:4::1'],
      { ipv6Subnet: 48 },
    ],
  ])('login attempts from %s share the 3 of the address', async (_what, addresses, limits) => {
    const { app } = behindProxy({ limits });
    const agent = request.agent(app);
    const _csrf = csrfOf((await agent.get('/admin/limits/login').expect(200)).text);
    const statuses: number[] = [];
    for (const [i, address] of addresses.entries()) {
      const res = await agent
        .post('/admin/limits/login')
        .set('X-Forwarded-For', address)
        .type('form')
        .send({ token: `guess-${i}`, _csrf });
      statuses.push(res.status);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
    // Another network has its own.
    await agent
      .post('/admin/limits/login')
      .set('X-Forwarded-For', '2001:db8:9::1')
      .type('form')
      .send({ token: ADMIN, _csrf })
      .expect(303);
  });

  it('filing from one IPv6 /64: 3 requests are kept pending, 2 more tried, then the address is limited', async () => {
    const { app, limits } = behindProxy();
    const file = await contactForm(app);
    const answers: string[] = [];
    for (let i = 1; i <= 6; i++) {
      const res = await file({ ...valid, token: `Bot rotating-${i}` }).set('X-Forwarded-For', `2001:db8:7:7::${i}`);
      const text = flat(res.text);
      answers.push(
        `${res.status}${text.includes('Your network has as many requests pending') ? ' pending' : ''}` +
          `${text.includes('Too many attempts from your address') ? ' limited' : ''}`,
      );
    }
    expect(answers).toEqual(['303', '303', '303', '429 pending', '429 pending', '429 limited']);
    expect((await limits.requests.list()).map((r) => r.network)).toEqual(Array(3).fill('ip:2001:db8:7:7::/64'));
  });
});

describe('the request store cannot be filled against legitimate requesters', () => {
  const behindProxy = () =>
    pagesApp(undefined, {
      contact: { submissions: { limit: 100, windowMs: 3_600_000 } },
      setup: (app) => app.set('trust proxy', true),
    });

  it('an address that is none (X-Forwarded-For: garbage) files without a network, under its token’s limit', async () => {
    const { app, limits } = behindProxy();
    const file = await contactForm(app);
    for (const status of [303, 303, 429]) await file(valid).set('X-Forwarded-For', 'not-an-address').expect(status);
    expect((await limits.requests.list()).map((r) => r.network)).toEqual([undefined, undefined]);
  });

  it('a token with 2 requests pending is told so (429), with nothing filed', async () => {
    const { app, limits } = behindProxy();
    const file = await contactForm(app);
    const statuses: number[] = [];
    for (let i = 1; i <= 3; i++) statuses.push((await file(valid).set('X-Forwarded-For', `10.${i}.0.1`)).status);
    expect(statuses).toEqual([303, 303, 429]);
    const res = await file(valid).set('X-Forwarded-For', '10.9.0.1');
    expect(flat(res.text)).toContain(
      '<p class="alert" role="alert">Your token has as many requests pending as it may. Wait for an operator’s ' +
        'decision (check it with the id you were given), or for a request to expire after 30 days.</p>',
    );
    expect((await limits.requests.counts()).pending).toBe(2);
  });

  it('a newcomer from a fresh network files into a full store; the flood of one /48 loses its oldest', async () => {
    const { app, limits } = behindProxy();
    for (let i = 0; i < 10_000; i++) {
      await limits.requests.file({
        ...requestInput,
        token: `Bot flood-${i}`,
        ip: `2001:db8:f00d:${i.toString(16)}::1`,
      });
    }
    const res = await (
      await contactForm(app)
    )({ ...valid, token: 'Bot newcomer-0001' }).set('X-Forwarded-For', '198.51.100.7');
    expect(res.status).toBe(303);
    const id = /id=([\w-]+)/.exec(res.headers.location as string)?.[1] as string;
    expect([(await limits.requests.get(id))?.network, await limits.requests.counts()]).toEqual([
      'ip:198.51.100.0/24',
      { pending: 10_000, decided: 0 },
    ]);
  }, 60_000);
});

describe('nothing secret leaves the pages', () => {
  const fields = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, 'x']));

  const TOO_LARGE = 'This form is too large: 16 KB and 200 fields at most.';
  it.each([
    { what: 'more than 200 fields', path: '/limits/request', body: { ...valid, ...fields(200) } },
    { what: 'more than 16 KB', path: '/limits/request', body: { ...valid, reason: 'x'.repeat(17_000) } },
    { what: 'more than 200 fields', path: '/admin/limits/login', body: { token: ADMIN, ...fields(200) } },
  ])('a form of $what to $path is a 413 page; the app’s error handler sees nothing', async ({ path, body }) => {
    const { app, limits } = pagesApp();
    const seen = errorsOf(app);
    const agent = request.agent(app);
    const _csrf = csrfOf((await agent.get(path).expect(200)).text);
    const res = await agent
      .post(path)
      .type('form')
      .send({ ...body, _csrf });
    expect([res.status, flat(res.text).includes(TOO_LARGE)]).toEqual([413, true]);
    expect(seen).toEqual([]);
    expect(await limits.requests.list()).toEqual([]);
  });

  it('a form in a charset the parser does not know is a 400 page; the app’s error handler sees nothing', async () => {
    const { app } = pagesApp();
    const seen = errorsOf(app);
    const res = await request(app)
      .post('/limits/request')
      .set('Content-Type', 'application/x-www-form-urlencoded; charset=klingon')
      .send(`token=${encodeURIComponent(valid.token)}`);
    expect([res.status, flat(res.text).includes('This form could not be read.')]).toEqual([400, true]);
    expect(seen).toEqual([]);
  });

  it.each([
    [
      'a multiplier of 1000',
      { multiplier: '1000' },
      'multiplier',
      'This value makes a limit of 30000; sliding windows keep every request of the window, up to 10000.',
    ],
    [
      'an endpoint’s limit of 20000',
      { ask: 'endpoints', limit_0: '20000' },
      'rows',
      'A limit you filled in must be at most 10000 with sliding windows, which keep every request of the window; got 20000.',
    ],
  ])('with sliding windows, %s is a 400 naming the field, never a 503', async (_what, change, name, message) => {
    const { app, limits } = pagesApp(undefined, { listing: 'B', limits: { window: 'sliding' } });
    const res = await (await contactForm(app))({ ...valid, ...change }).expect(400);
    expect(flat(res.text)).toContain(`<p class="error" id="error-${name}">${message}</p>`);
    expect(flat(res.text)).toContain('<strong>The request was not filed.</strong>');
    expect(await limits.requests.list()).toEqual([]);
  });

  it.each([
    ['1000', 'limits.requests.approve: grant.multiplier makes a limit of 30000'],
    ['abc', 'limits.requests.approve: grant.multiplier must be a positive number; got NaN.'],
    ['1e400', 'limits.requests.approve: grant.multiplier must be a positive number; got Infinity.'],
  ])('with sliding windows, approving ×%s is a 400 naming the field', async (multiplier, message) => {
    const { app, limits } = pagesApp(() => true, { listing: 'B', limits: { window: 'sliding' } });
    await (await contactForm(app))(valid).expect(303);
    const [filed] = await limits.requests.list();
    const agent = request.agent(app);
    const page = await agent.get('/admin/limits/').expect(200);
    const res = await agent
      .post('/admin/limits/requests/approve')
      .type('form')
      .send({ id: filed?.id, grant: 'multiplier', multiplier, expiry: '30', _csrf: csrfOf(page.text) });
    expect([res.status, flat(res.text).includes(message)]).toEqual([400, true]);
    expect((await limits.requests.list()).map((r) => r.status)).toEqual(['pending']);
  });

  it('the table B of the contract makes ×1000 too much for sliding windows', () => {
    expect(Math.max(...listings.B.map((row) => row.limit)) * 1000).toBe(30_000);
  });
});

describeRedisServer('a store that fails while a request is filed', () => {
  let redis: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    // A Redis that refuses every write: its error names the command and its arguments.
    redis = await RedisServer.start(['--maxmemory', '1', '--maxmemory-policy', 'noeviction']);
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await redis?.close();
  });

  it('answers 503 and tells onError its message, without the contact or the reason, and nothing reaches the app’s error handler', async () => {
    const told: unknown[] = [];
    const { app, limits } = pagesApp(undefined, {
      store: redisStore(client, { prefix: 'failing' }),
      limits: { onError: (error) => void told.push(error) },
      // The form's limiter counts in memory here: the filing itself is what fails.
      contact: { store: memoryStore() },
    });
    const seen = errorsOf(app);
    const contact = 'private-contact@example.com';
    const reason = 'A private reason, not for the logs.';
    const res = await (await contactForm(app))({ ...valid, contact, reason }).expect(503);
    expect(flat(res.text)).toContain('Requests cannot be filed or checked right now: nothing was filed.');
    expect(seen).toEqual([]);
    expect(told.length).toBe(1);
    const error = told[0] as Error & { code: string };
    expect(error.code).toBe('ERR_STORE_UNAVAILABLE');
    expect(error.message).toMatch(
      /^limitsRequestPage: options\.store failed \(OOM command not allowed when used memory > 'maxmemory'/,
    );
    const shown = `${inspect(error, { depth: 10, showHidden: true })} ${JSON.stringify(error)}`;
    for (const secret of [contact, reason, 'requester-token', 'private']) expect(shown).not.toContain(secret);
    expect(limits.requests.supported).toBe(true);
  });
});

describeRedis('logins in a Redis that loses its data', () => {
  const redis = redisForBlock();
  const keys = (prefix: string) => ['record', 'changes', 'ends'].map((k) => `${prefix}:{runtime}:${k}`);

  it.each([
    ['flushed', async () => async (prefix: string) => void (await redis.client.del(...keys(prefix)))],
    [
      'replaced by a copy from before "Log out everywhere" (a failover to a replica behind)',
      async (prefix: string) => {
        const copy = await Promise.all(keys(prefix).map((k) => redis.client.dumpBuffer(k)));
        return async () => {
          await redis.client.del(...keys(prefix));
          await Promise.all(keys(prefix).map((k, i) => (copy[i] ? redis.client.restore(k, 0, copy[i]) : undefined)));
        };
      },
    ],
  ])('a login ends when the state is %s', async (_what, before) => {
    const prefix = `logins-${process.pid}-${Math.random().toString(36).slice(2)}`;
    const { app } = pagesApp(undefined, { store: redisStore(redis.client, { prefix, timeoutMs: 5000 }) });
    const first = await loggedIn(app);
    const lose = await before(prefix);
    // Logged out everywhere: the copy taken before still has the epoch the first login was made in.
    await first.agent
      .post('/admin/limits/logout/everywhere')
      .type('form')
      .send({ _csrf: csrfOf(first.page.text) })
      .expect(303);
    const second = await loggedIn(app);
    await lose(prefix);
    const cookie = (l: typeof first) => l.cookies['listing-limits.admin'] as string;
    for (const login of [first, second]) {
      await request(app)
        .get('/admin/limits/')
        .set('Cookie', cookie(login))
        .expect(303)
        .expect('Location', '/admin/limits/login');
    }
    // A new login holds.
    const again = await loggedIn(app);
    await request(app).get('/admin/limits/').set('Cookie', cookie(again)).expect(200);
  });
});
