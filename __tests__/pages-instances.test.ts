// The pages of app instances in separate processes on one Redis: limiters by network, logins the server ends, and two
// operators by name in a real browser, each on an instance of their own.
import Redis from 'ioredis';
import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { compiledLib } from './helpers/compiled';
import { describeBrowser, launchChromium } from './helpers/browser';
import { cookiesOf, csrfOf, valid } from './helpers/pages';
import { describeRedisServer, RedisServer, scanKeys } from './helpers/redis';
import { type Instance, startInstance, stopInstances } from './helpers/store-processes';

const SECRET = 'a-secret-shared-by-both-instances-0001';
/** A bound for a hang, not a speed: the instances' store waits up to 10 s for Redis. */
const DEADLINE_MS = 15_000;

const ADMIN = 'admin-token-of-both-instances';

/** An instance of pages-instance.js; `authorize` as limitsAdmin takes it. */
const startPages = (lib: string, redisUrl: string, prefix: string, authorize: object = { token: ADMIN }) =>
  startInstance(lib, 'ioredis', redisUrl, prefix, { secret: SECRET, authorize }, 'pages-instance.js');

const tally = (answers: (number | string)[]) =>
  answers.reduce<Record<string, number>>((t, s) => ({ ...t, [s]: (t[s] ?? 0) + 1 }), {});

describeRedisServer('the pages of two instances in two processes, on one Redis', () => {
  let lib: string;
  let redis: RedisServer;
  let client: Redis;
  let pair: Instance[] = [];
  /** Instances a test starts besides the pair. */
  let more: Instance[] = [];
  let n = 0;

  beforeAll(async () => {
    // The instances load lib/ compiled to CommonJS.
    lib = compiledLib();
    redis = await RedisServer.start();
    client = new Redis(redis.url);
  }, 120_000);

  beforeEach(async () => {
    const prefix = `pages-${++n}`;
    pair = await Promise.all([0, 1].map(() => startPages(lib, redis.url, prefix)));
  });

  afterEach(async () => {
    await stopInstances([...pair, ...more]);
    expect([...pair, ...more].map((i) => i.stderr())).toEqual([...pair, ...more].map(() => ''));
    pair = [];
    more = [];
  });

  afterAll(async () => {
    client?.disconnect();
    await redis?.close();
  });

  /** A browser's form on instance 0: its CSRF token and cookies, good on both instances, which share the secret. */
  async function form(path: string): Promise<{ _csrf: string; cookie: string }> {
    const page = await request((pair[0] as Instance).url)
      .get(path)
      .expect(200);
    return { _csrf: csrfOf(page.text), cookie: Object.values(cookiesOf(page)).join('; ') };
  }

  it.each([
    ['addresses of one IPv6 /64', (i: number) => `2001:db8:5:5::${i.toString(16)}`, 'ip:2001:db8:5:5::/64'],
    [
      'one IPv4 address, plain and IPv4-mapped',
      (i: number) => (i % 2 ? '::ffff:' : '') + '203.0.113.9',
      'ip:203.0.113.9',
    ],
  ])(
    'of 30 simultaneous logins from %s over both instances, 10 are tried and 20 refused',
    async (_what, address, key) => {
      const { _csrf, cookie } = await form('/admin/limits/login');
      const statuses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          request((pair[i % 2] as Instance).url)
            .post('/admin/limits/login')
            .set('Cookie', cookie)
            .set('X-Forwarded-For', address(i + 1))
            .type('form')
            .send({ token: `guess-${i}`, _csrf })
            .timeout(DEADLINE_MS)
            .then((res) => res.status),
        ),
      );
      expect(tally(statuses)).toEqual({ 401: 10, 429: 20 });
      // Where Redis counted: one counter, of the network (the refused are told from what each instance remembers).
      const prefix = `pages-${n}:listing-limits admin POST /login:`;
      expect(await scanKeys(client, `${prefix}*`)).toEqual([`${prefix}${key}`]);
    },
    60_000,
  );

  it('of 12 simultaneous requests from one IPv6 /64 over both instances, 5 are tried and 3 kept pending', async () => {
    const { _csrf, cookie } = await form('/limits/request');
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        request((pair[i % 2] as Instance).url)
          .post('/limits/request')
          .set('Cookie', cookie)
          .set('X-Forwarded-For', `2001:db8:6:6:${i + 1}::1`)
          .type('form')
          .send({ ...valid, token: `Bot rotating-${i}`, _csrf })
          .timeout(DEADLINE_MS),
      ),
    );
    // The limiter of both lets 5 through; of those, the store keeps the 3 a network may have pending.
    const what = (res: request.Response) =>
      res.status === 303
        ? 'filed'
        : res.text.includes('Your network has as many requests pending')
          ? 'pending'
          : res.text.includes('Too many attempts from your address')
            ? 'limited'
            : String(res.status);
    expect(tally(answers.map(what))).toEqual({ filed: 3, pending: 2, limited: 7 });
    expect(await client.hlen(`pages-${n}:{runtime}:requests`)).toBe(3);
  }, 60_000);

  /** A login on an instance: its cookies (the login's among them) and the page's CSRF token. */
  async function logIn(instance: Instance, token = ADMIN): Promise<{ cookie: string; _csrf: string }> {
    const form = await request(instance.url).get('/admin/limits/login').expect(200);
    const login = await request(instance.url)
      .post('/admin/limits/login')
      .set('Cookie', Object.values(cookiesOf(form)).join('; '))
      .type('form')
      .send({ token, _csrf: csrfOf(form.text) })
      .expect(303);
    const cookies = { ...cookiesOf(form), ...cookiesOf(login) };
    const page = await request(instance.url)
      .get('/admin/limits/')
      .set('Cookie', Object.values(cookies).join('; '))
      .expect(200);
    return { cookie: Object.values({ ...cookies, ...cookiesOf(page) }).join('; '), _csrf: csrfOf(page.text) };
  }

  /** What an instance answers to the operator's page with a cookie: 200, or where it sends the browser. */
  const page = (instance: Instance, cookie: string) =>
    request(instance.url)
      .get('/admin/limits/')
      .set('Cookie', cookie)
      .timeout(DEADLINE_MS)
      .then((res) => (res.status === 200 ? 200 : `${res.status} ${res.headers.location}`));
  const OUT = '303 /admin/limits/login';

  it('a logout on one instance ends the login on the other at once: its cookie, replayed there, is refused', async () => {
    const [a, b] = pair as [Instance, Instance];
    const login = await logIn(a);
    const other = await logIn(b);
    expect(await page(b, login.cookie)).toBe(200);
    await request(a.url)
      .post('/admin/limits/logout')
      .set('Cookie', login.cookie)
      .type('form')
      .send({ _csrf: login._csrf })
      .expect(303);
    // The next request, with no wait: instance b reads what changed before it judges the login.
    expect([await page(b, login.cookie), await page(a, login.cookie), await page(b, other.cookie)]).toEqual([
      OUT,
      OUT,
      200,
    ]);
  }, 60_000);

  it('"Log out everywhere" on one instance ends every login on both; a login after it holds on both', async () => {
    const [a, b] = pair as [Instance, Instance];
    const [first, second] = [await logIn(a), await logIn(b)];
    await request(b.url)
      .post('/admin/limits/logout/everywhere')
      .set('Cookie', second.cookie)
      .type('form')
      .send({ _csrf: second._csrf })
      .expect(303);
    const answers = [first, second].flatMap((l) => [a, b].map((i) => page(i, l.cookie)));
    expect(await Promise.all(answers)).toEqual([OUT, OUT, OUT, OUT]);
    const third = await logIn(a);
    expect([await page(a, third.cookie), await page(b, third.cookie)]).toEqual([200, 200]);
  }, 60_000);

  it('an instance started with a new ADMIN_TOKEN refuses the logins of the old one, same secret and Redis', async () => {
    const [a] = pair as [Instance, Instance];
    const old = await logIn(a);
    const renewed = await startPages(lib, redis.url, `pages-${n}`, { token: `${ADMIN}-renewed` });
    more.push(renewed);
    expect([await page(renewed, old.cookie), await page(a, old.cookie)]).toEqual([OUT, 200]);
    const fresh = await logIn(renewed, `${ADMIN}-renewed`);
    expect([await page(renewed, fresh.cookie), await page(a, fresh.cookie)]).toEqual([200, OUT]);
  }, 60_000);

  describeBrowser('two operators by name, in Chromium', () => {
    const tokens = { alice: 'alice-token-of-the-instances', bob: 'bob-token-of-the-instances' };
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
    }, 60_000);
    afterAll(() => browser?.close());

    /** Logs in on `instance` with `token`, in a browser context of its own. */
    async function operator(instance: Instance, token: string): Promise<Page> {
      const page = await (await browser.newContext()).newPage();
      // Every question a form asks is answered yes.
      page.on('dialog', (dialog) => void dialog.accept());
      await page.goto(`${instance.url}/admin/limits/`);
      await page.fill('#admin-token', token);
      await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
      return page;
    }
    /** Clicks what submits a form, and waits for the page it leads to. */
    async function submit(page: Page, selector: string): Promise<void> {
      await Promise.all([page.waitForNavigation(), page.click(selector)]);
    }
    /** The audit trail as the page shows it: action, client and who, newest first. */
    const audit = (page: Page) =>
      page.evaluate<string[][]>(
        "[...document.querySelectorAll('#audit tbody tr')].map((tr) => " +
          '[1, 2, 3].map((i) => tr.children[i].textContent.trim()))',
      );

    it('each logs in with their own token on their own instance, acts, and the trail names each on both', async () => {
      const prefix = `pages-${n}-named`;
      const started = [0, 1].map(() => startPages(lib, redis.url, prefix, { tokens }));
      const [a, b] = (await Promise.all(started)) as [Instance, Instance];
      more.push(a, b);
      const alice = await operator(a, tokens.alice);
      const bob = await operator(b, tokens.bob);
      expect([await alice.textContent('.who'), await bob.textContent('.who')]).toEqual([
        'Operator: alice',
        'Operator: bob',
      ]);
      await alice.selectOption('#ban-by', 'ip');
      await alice.fill('#ban-value', '203.0.113.50');
      await submit(alice, 'form[action$="/bans/new"] button');
      expect(await alice.textContent('p.notice')).toBe('The client is banned.');
      // Bob, on the other instance, lifts Alice's ban and bans another address.
      await bob.reload();
      await submit(bob, 'form[action$="/bans/lift"]:has(input[value="ip:203.0.113.50"]) button');
      expect(await bob.textContent('p.notice')).toBe('The ban is lifted.');
      await bob.selectOption('#ban-by', 'ip');
      await bob.fill('#ban-value', '203.0.113.51');
      await submit(bob, 'form[action$="/bans/new"] button');
      const trail = [
        ['ban', 'ip:203.0.113.51', 'bob'],
        ['unban', 'ip:203.0.113.50', 'bob'],
        ['ban', 'ip:203.0.113.50', 'alice'],
      ];
      await alice.reload();
      expect([await audit(alice), await audit(bob)]).toEqual([trail, trail]);
      expect(await alice.textContent('#bans tbody tr td:nth-child(4)')).toBe('bob');
    }, 60_000);
  });
});
