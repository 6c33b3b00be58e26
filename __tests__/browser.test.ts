// The contact page and the operator's page in a real browser (the system's Chromium), end to end over the example server.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Express } from 'express';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { createExampleApp } from '../example-server/app';
import type { ListingLimitsMiddleware, TrafficMinute, TrafficSummary } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import type { Traffic } from '../lib/limiter/observe/traffic';
import { pagesLinkOf } from '../lib/records/pages-link';
import { describeBrowser, launchChromium } from './helpers/browser';
import { type Served, serve } from './helpers/serve';

const ADMIN = 'admin-token-for-the-browser-test';
const TOKEN = 'Bot requester-token-b7e1';
const XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> We need more, please.';
/**
 * Where the screenshots go: the README's, under docs/, with `npm run screenshots`; else a temporary folder, so that
 * a test run leaves the working tree as it was (pixels differ from run to run: times, ids).
 */
const shots =
  process.env.UPDATE_SCREENSHOTS === '1' ? join(__dirname, '..', 'docs') : mkdtempSync(join(tmpdir(), 'screens-'));

/** The client of the hour before the test's own requests, refused now and then. */
const SEEDED_CLIENT = 'ip:203.0.113.7';

/**
 * An hour of traffic before the test's own requests (which it cannot wait an hour for), counted by the recorder of
 * `limits` as the request path counts, each minute at its time: so that the chart has an hour to show. Calls of a
 * few endpoints rise and fall, with a burst of refusals twenty minutes ago.
 */
function seedHour(limits: ListingLimitsMiddleware): void {
  const traffic = pagesLinkOf(limits)?.traffic as Traffic | undefined;
  if (!traffic) throw new Error('no traffic recorder on the example server');
  const now = Date.now();
  const client = { key: SEEDED_CLIENT };
  const count = (endpoint: string, outcome: 'allowed' | 'limited', n: number, at: number) => {
    for (let i = 0; i < n; i++) traffic.count(endpoint, outcome, client, at);
  };
  for (let ago = 59; ago >= 1; ago--) {
    const at = now - ago * 60_000;
    count('GET /v1/bots/:id', 'allowed', 24 + Math.round(10 * Math.sin(ago / 7)), at);
    count('GET /v1/bots', 'allowed', 6 + (ago % 5), at);
    count('GET /v1/users/:id/bots', 'allowed', ago % 3, at);
    count(
      'GET /v1/bots/:id',
      'limited',
      ago >= 18 && ago <= 22 ? 12 - 2 * Math.abs(20 - ago) : ago % 11 === 0 ? 2 : 0,
      at,
    );
  }
}

/** Clicks what submits a form, and waits for the page it leads to. */
async function submit(page: Page, selector: string): Promise<Response> {
  const [response] = await Promise.all([page.waitForNavigation(), page.click(selector)]);
  if (!response) throw new Error(`no page after submitting ${selector}`);
  return response;
}

/** Whether the page fits a phone's width without scrolling sideways. */
const fitsWidth = (page: Page) => page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');

/** The minutes the chart of the operator's page shows: its groups' data, as `traffic()` answers them. */
const chartOf = (page: Page) =>
  page.evaluate<{ at: string; allowed: number; refused: number }[]>(
    "[...document.querySelectorAll('#traffic svg g[data-at]')].map((g) => " +
      '({ at: g.dataset.at, allowed: Number(g.dataset.allowed), refused: Number(g.dataset.refused) }))',
  );
const asShown = (minutes: readonly TrafficMinute[]) =>
  minutes.map((m) => ({ at: m.at.toISOString(), allowed: m.allowed, refused: m.refused }));

/**
 * What the chart draws, in the browser: its width, its bars at least 1 pixel high, and the smallest height of its
 * texts (labels, times, legend), in CSS pixels.
 */
const drawn = (page: Page) =>
  page.evaluate<{ width: number; bars: number; smallestText: number }>(`(() => {
    const svg = document.querySelector('#traffic svg');
    const bars = [...svg.querySelectorAll('g[data-at] rect:not([fill="transparent"])')];
    const texts = [...svg.querySelectorAll('text')].map((t) => t.getBoundingClientRect().height);
    return {
      width: svg.getBoundingClientRect().width,
      bars: bars.filter((r) => r.getBoundingClientRect().height >= 0.9).length,
      smallestText: Math.min(...texts),
    };
  })()`);

/** The names of the page's visible form fields that have no label. */
const unlabelled = (page: Page) =>
  page.evaluate<string[]>(
    "[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]" +
      '.filter((field) => field.labels.length === 0).map((field) => field.name)',
  );

describeBrowser('the pages in Chromium, over the example server', () => {
  let browser: Browser;
  let example: Express;
  let served: Served;
  let evil: Served;
  const contexts: BrowserContext[] = [];
  const context = async (options: Parameters<Browser['newContext']>[0] = {}) => {
    const made = await browser.newContext({ viewport: { width: 1000, height: 900 }, ...options });
    contexts.push(made);
    return made;
  };

  beforeAll(async () => {
    browser = await launchChromium();
    example = createExampleApp({ listing: 'B', adminToken: ADMIN });
    served = await serve(example);
    // Another origin of the same site (another port), whose page posts a form to the operator's page by itself, with
    // the CSRF token of the public login form and that form's cookies, which it plants (cookies tell no ports apart).
    evil = await serve((_req, res) => {
      void fetch(`${served.url}/admin/limits/login`).then(async (login) => {
        const _csrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())?.[1] ?? '';
        res.setHeader('Set-Cookie', login.headers.getSetCookie());
        res.setHeader('Content-Type', 'text/html');
        res.end(`<form id="f" method="post" action="${served.url}/admin/limits/bans/new">
<input name="by" value="ip"><input name="value" value="203.0.113.9"><input name="duration" value="3600">
<input name="_csrf" value="${_csrf}"></form>
<script>document.getElementById('f').submit()</script>`);
      });
    });
    mkdirSync(shots, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await served?.close();
    await evil?.close();
  });

  it('files a request, is approved ×10, gets the limits; a ban refuses the token everywhere until lifted; the operator pages through the requests and finds the client by its token', async () => {
    const limits = example.locals.limiter as ListingLimitsMiddleware;
    seedHour(limits);
    const requester = await (await context()).newPage();
    await requester.goto(`${served.url}/limits/request`);
    await requester.fill('#token', TOKEN);
    await requester.check('input[name="ask"][value="multiplier"]');
    await requester.fill('#multiplier', '10');
    await requester.check('input[name="kind"][value="bot"]');
    // The server count's field is hidden until "A bot" is chosen, and the member count's stays hidden.
    expect(await requester.isVisible('#members')).toBe(false);
    await requester.fill('#link', 'https://example.com/our-bot');
    await requester.fill('#contact', 'ops@example.com');
    await requester.fill('#reason', XSS);

    // Missing proof: refused, each field's message next to it, what was typed kept (the token excepted).
    let answer = await submit(requester, 'button[type="submit"]');
    expect(answer.status()).toBe(400);
    expect(await requester.textContent('#error-servers')).toBe('Enter the number of servers your bot is in.');
    expect(await requester.textContent('#error-shards')).toBe(
      'Enter the number of shards your bot runs (1 if it is not sharded).',
    );
    expect(await requester.inputValue('#multiplier')).toBe('10');
    expect(await requester.inputValue('#reason')).toBe(XSS);
    expect(await requester.inputValue('#token')).toBe('');
    expect(await requester.evaluate('window.__xss')).toBeUndefined();

    await requester.screenshot({ path: join(shots, 'contact-page.png'), fullPage: true });
    await requester.fill('#token', TOKEN);
    await requester.fill('#servers', '250000');
    await requester.fill('#shards', '256');
    answer = await submit(requester, 'button[type="submit"]');
    expect(answer.status()).toBe(200);
    expect(requester.url()).toMatch(/\/limits\/request\/status\?id=[\w-]{12}&filed=1$/);
    const id = (await requester.textContent('.notice code')) as string;
    expect(id).toMatch(/^[\w-]{12}$/);

    // The client, with its token, on the API: the contract's limit of GET /v1/bots/:id.
    const client = await (await context({ extraHTTPHeaders: { Authorization: TOKEN } })).newPage();
    let api = await client.goto(`${served.url}/v1/bots/1`);
    expect([api?.status(), api?.headers()['x-ratelimit-limit']]).toEqual([200, '2']);

    // The operator logs in.
    const operator = await (await context()).newPage();
    await operator.goto(`${served.url}/admin/limits`);
    expect(operator.url()).toBe(`${served.url}/admin/limits/login`);
    await operator.fill('#admin-token', ADMIN);
    answer = await submit(operator, 'button[type="submit"]');
    expect([answer.status(), operator.url()]).toEqual([200, `${served.url}/admin/limits/`]);
    expect(await operator.textContent('#requests-h')).toBe('Pending grant requests (1)');
    // Script in the reason is shown as text, and never runs.
    expect(await operator.locator(`article:has(#request-${id}) tr:has(th:text("Reason")) td`).textContent()).toBe(XSS);
    expect(await operator.evaluate('window.__xss')).toBeUndefined();

    await operator.selectOption(`#grant-${id}`, 'multiplier');
    await operator.fill(`#multiplier-${id}`, '10');
    await operator.selectOption(`#expiry-${id}`, '30');
    answer = await submit(operator, `form:has(input[value="${id}"]) button:text("Approve")`);
    expect(answer.status()).toBe(200);
    expect(await operator.textContent('p.notice')).toBe('The request is approved and the grant given.');
    expect(await operator.textContent('#grants-h')).toBe('Active grants (1)');

    // The extended limits, in the headers of the API.
    api = await client.goto(`${served.url}/v1/bots/2`);
    expect([api?.status(), api?.headers()['x-ratelimit-limit']]).toEqual([200, '20']);

    // The requester's status page says approved.
    await requester.goto(`${served.url}/limits/request/status?id=${id}`);
    await requester.fill('#token', TOKEN);
    answer = await submit(requester, 'button[type="submit"]');
    expect(answer.status()).toBe(200);
    expect(await requester.textContent('[role="status"] p strong')).toBe('Approved:');
    expect(await requester.textContent('[role="status"] p')).toMatch(
      /^Approved: every limit ×10, until \d{4}-\d\d-\d\d \d\d:\d\d UTC\.$/,
    );

    // Some refusals for the chart of the last hour.
    const noisy = await (await context({ extraHTTPHeaders: { Authorization: 'Bot noisy-client-0001' } })).newPage();
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await noisy.goto(`${served.url}/v1/bots/1`))?.status() ?? 0);
    expect(statuses).toEqual([200, 200, 429, 429]);
    // ...and another request, pending, for the operator's page.
    await noisy.goto(`${served.url}/limits/request`);
    await noisy.fill('#token', 'Bot noisy-client-0001');
    await noisy.check('input[name="ask"][value="unlimited"]');
    await noisy.check('input[name="kind"][value="server"]');
    await noisy.fill('#members', '48000');
    await noisy.fill('#link', 'https://example.com/our-server');
    await noisy.fill('#contact', 'admin@example.org');
    await noisy.fill('#reason', 'Our moderation tools read every upvote.');
    expect((await submit(noisy, 'button[type="submit"]')).status()).toBe(200);

    // The operator bans the token: 403 on the API and on a page that is not of the API.
    await operator.selectOption('#ban-by', 'token');
    await operator.fill('#ban-value', TOKEN);
    await operator.fill('#ban-reason', 'scraping');
    await operator.selectOption('#ban-duration', '86400');
    operator.once('dialog', (dialog) => void dialog.accept());
    answer = await submit(operator, 'form[action$="/bans/new"] button');
    expect(await operator.textContent('p.notice')).toBe('The client is banned.');
    expect(await operator.textContent('#bans-h')).toBe('Active bans (1)');
    expect(await operator.textContent('#requests-h')).toBe('Pending grant requests (1)');
    expect(await operator.content()).not.toContain('requester-token');
    expect(await operator.content()).not.toContain('noisy-client');
    // Each client reads as its grant request shows it: the granted and banned token, and the one whose request waits.
    const firstCells = (list: string) => operator.locator(`${list} tbody td:first-child`).allInnerTexts();
    expect([await firstCells('#grants'), await firstCells('#bans')]).toEqual([
      ['token ending in b7e1'],
      ['token ending in b7e1'],
    ]);
    expect(await operator.locator('#requests article tr:has(th:text-is("Client")) td').innerText()).toBe(
      'token ending in 0001',
    );
    expect(await operator.locator('#audit tbody td:nth-child(3)').allInnerTexts()).toEqual([
      'token ending in b7e1',
      'token ending in b7e1',
    ]);
    api = await client.goto(`${served.url}/v1/bots/1`);
    expect(api?.status()).toBe(403);
    expect(JSON.parse(await client.innerText('body'))).toMatchObject({ success: false, code: 403 });
    expect((await client.goto(`${served.url}/limits/request`))?.status()).toBe(403);

    // The last hour, as a chart: its minutes are those limits.traffic() answers, of every endpoint together, and of one
    // on demand. traffic() is read before and after each load of the page; when a minute turns in between, the page
    // is loaded again.
    const chartAgainst = async (path: string, of: (t: TrafficSummary) => readonly TrafficMinute[]) => {
      for (let load = 1; ; load++) {
        const before = asShown(of(limits.traffic()));
        await operator.goto(path);
        const [shown, after] = [await chartOf(operator), asShown(of(limits.traffic()))];
        if (before[0]?.at === after[0]?.at || load === 3) return { shown, expected: after };
      }
    };
    const barsOf = (minutes: readonly { allowed: number; refused: number }[]) =>
      minutes.filter((m) => m.allowed > 0).length + minutes.filter((m) => m.refused > 0).length;
    let chart = await chartAgainst(`${served.url}/admin/limits/`, (t) => t.minutes);
    expect(chart.shown).toEqual(chart.expected);
    expect(chart.shown).toHaveLength(60);
    expect(await operator.textContent('#traffic h3')).toBe('Requests per minute: All endpoints');
    // Drawn: the width of its section, a bar for every count, every text at least 12 pixels high.
    const all = await drawn(operator);
    expect(all.width).toBeGreaterThan(850);
    expect(all.bars).toBe(barsOf(chart.expected));
    expect(all.bars).toBeGreaterThan(60);
    expect(all.smallestText).toBeGreaterThanOrEqual(12);
    // The refused clients, by their labels: the seeded address, and the two tokens by their requests' ends.
    const refused = limits.traffic().refused.map((r) => r.key);
    expect(refused.sort()).toEqual([SEEDED_CLIENT, tokenKey(TOKEN), tokenKey('Bot noisy-client-0001')].sort());
    expect(
      (await operator.locator('#traffic .table').nth(1).locator('tbody td:first-child').allInnerTexts()).sort(),
    ).toEqual([SEEDED_CLIENT, 'token ending in 0001', 'token ending in b7e1'].sort());
    await operator.screenshot({ path: join(shots, 'admin-page.png'), fullPage: true });
    await submit(operator, '#traffic a:text-is("GET /v1/bots/:id")');
    expect(operator.url()).toBe(`${served.url}/admin/limits/?traffic=GET%20%2Fv1%2Fbots%2F%3Aid#traffic`);
    chart = await chartAgainst(
      operator.url(),
      (t) => t.endpoints.find((e) => e.endpoint === 'GET /v1/bots/:id')?.minutes ?? [],
    );
    expect(chart.shown).toEqual(chart.expected);
    expect(await operator.textContent('#traffic h3')).toBe('Requests per minute: GET /v1/bots/:id');
    expect(await operator.textContent('#traffic a[aria-current]')).toBe('GET /v1/bots/:id');
    expect((await drawn(operator)).bars).toBe(barsOf(chart.expected));
    await operator.goto(`${served.url}/admin/limits/`);

    // Lifting the ban restores it.
    answer = await submit(operator, `form[action$="/bans/lift"]:has(input[value="${tokenKey(TOKEN)}"]) button`);
    expect(await operator.textContent('p.notice')).toBe('The ban is lifted.');
    expect((await client.goto(`${served.url}/v1/bots/3`))?.status()).toBe(200);
    expect((await client.goto(`${served.url}/limits/request`))?.status()).toBe(200);

    // Both pages fit a phone's width.
    await requester.setViewportSize({ width: 375, height: 800 });
    await requester.goto(`${served.url}/limits/request`);
    await operator.setViewportSize({ width: 375, height: 800 });
    await operator.goto(`${served.url}/admin/limits/`);
    expect([await fitsWidth(requester), await fitsWidth(operator)]).toEqual([true, true]);
    // Without script, before any choice, the contact page shows the choices and not their fields: Send is on the
    // first screen. A choice shows its fields, by the style sheet alone.
    const plain = await (await context({ javaScriptEnabled: false })).newPage();
    await plain.goto(`${served.url}/limits/request`);
    const send = await plain.locator('button[type="submit"]').boundingBox();
    expect(send && send.y + send.height).toBeLessThanOrEqual(900);
    const shown = (ids: string[]) => Promise.all(ids.map((id) => plain.isVisible(`#${id}`)));
    const fields = ['multiplier', 'limit_0', 'limit_7', 'servers', 'shards', 'members', 'link'];
    expect(await shown(fields)).toEqual([false, false, false, false, false, false, true]);
    await plain.check('input[name="ask"][value="endpoints"]');
    await plain.check('input[name="kind"][value="server"]');
    expect(await shown(fields)).toEqual([false, true, true, false, false, true, true]);
    await plain.check('input[name="ask"][value="multiplier"]');
    await plain.check('input[name="kind"][value="bot"]');
    expect(await shown(fields)).toEqual([true, false, false, true, true, false, true]);
    // Every input has its label, and the keyboard reaches the form first.
    expect([await unlabelled(requester), await unlabelled(operator)]).toEqual([[], []]);
    await requester.keyboard.press('Tab');
    expect(await requester.evaluate('document.activeElement.id')).toBe('token');

    // A form posted by another origin carries the operator's login cookie, and a CSRF token with its planted cookies,
    // but of the login form: refused, as the browser says it comes from another origin (and the token is no login's).
    await operator.setViewportSize({ width: 1000, height: 900 });
    const [forged] = await Promise.all([
      operator.waitForResponse((r) => r.url() === `${served.url}/admin/limits/bans/new`),
      operator.goto(evil.url),
    ]);
    expect(forged.status()).toBe(403);
    await operator.waitForLoadState();
    expect(await operator.textContent('[role="alert"]')).toContain('This form did not come from this page');
    await operator.goto(`${served.url}/admin/limits/`);
    expect(await operator.textContent('#bans-h')).toBe('Active bans (0)');

    // More pending requests than a page shows: the page shows 50 of them, and the next page the rest.
    for (let i = 0; i < 55; i++) {
      await limits.requests.file({
        token: `Bot queued-${i}`,
        ask: { multiplier: 2 },
        proof: { kind: 'server', members: 1000 + i, link: 'https://example.com/queued' },
        contact: 'queue@example.com',
        reason: `Queued request number ${i}.`,
        ip: `2001:db8:${i.toString(16)}::1`,
      });
    }
    await operator.goto(`${served.url}/admin/limits/`);
    expect(await operator.textContent('#requests-h')).toBe('Pending grant requests (56)');
    expect(await operator.locator('#requests article.card').count()).toBe(50);
    expect(await operator.textContent('#requests .pager')).toBe('Page 1 of 2 (56 in all) · Next →');
    await submit(operator, '#requests .pager a:text("Next →")');
    expect(operator.url()).toBe(`${served.url}/admin/limits/?requests=2#requests`);
    expect(await operator.locator('#requests article.card').count()).toBe(6);
    expect(await operator.textContent('#requests .pager')).toBe('Page 2 of 2 (56 in all) · ← Previous');

    // The operator finds the client by its token: its page, whose address carries only the token's hash.
    await operator.selectOption('#search-by', 'token');
    await operator.fill('#search-value', TOKEN);
    await submit(operator, 'form[role="search"] button');
    expect(operator.url()).toBe(`${served.url}/admin/limits/client?key=${encodeURIComponent(tokenKey(TOKEN))}`);
    expect(await operator.textContent('#client-h')).toBe('Client: token ending in b7e1');
    expect(await operator.textContent('#client code')).toBe(tokenKey(TOKEN));
    const bots = operator.locator('#client tr:has(td:text-is("GET /v1/bots/:id"))');
    expect(await bots.locator('td').allInnerTexts()).toEqual([
      'GET /v1/bots/:id',
      'GET /v1/bots/:id (x10)',
      '1 s',
      expect.stringMatching(/^[0-9]+$/),
      expect.stringMatching(/^[0-9]+ of 20$/),
      expect.any(String),
      'Reset',
    ]);
    expect(await operator.textContent('#grants tbody td:nth-child(2)')).toBe('every limit ×10');
    expect(await operator.textContent('#requests-h')).toBe('Grant requests (0 pending)');
    expect(await operator.locator('#requests tbody tr').count()).toBe(1);
    expect(await operator.locator('#audit tbody tr').count()).toBe(3);
    expect(await operator.content()).not.toContain('requester-token');
    await operator.screenshot({ path: join(shots, 'client-page.png'), fullPage: true });
    operator.once('dialog', (dialog) => void dialog.accept());
    await submit(operator, 'form[action$="/client/reset"][data-confirm] button');
    expect(await operator.textContent('p.notice')).toBe('The client’s counters are cleared.');
    expect(await bots.locator('td:nth-child(4)').textContent()).toBe('0');
    // The reset is the newest of the client's changes: of every endpoint, by the operator (one token: no name).
    expect(await operator.locator('#audit tbody tr').count()).toBe(4);
    expect((await operator.locator('#audit tbody tr:first-child td').allInnerTexts()).slice(1)).toEqual([
      'reset',
      'token ending in b7e1',
      'operator',
      'counters of every endpoint',
    ]);
    // The client's page fits a phone's width, and labels every input.
    await operator.setViewportSize({ width: 375, height: 800 });
    expect([await fitsWidth(operator), await unlabelled(operator)]).toEqual([true, []]);
    await operator.setViewportSize({ width: 1000, height: 900 });

    // A wrong admin token is refused, and after 10 attempts from the address (the operator's one included), limited.
    const stranger = await (await context()).newPage();
    const tries: number[] = [];
    for (let i = 0; i < 10; i++) {
      await stranger.goto(`${served.url}/admin/limits/login`);
      await stranger.fill('#admin-token', `wrong-token-${i}`);
      tries.push((await submit(stranger, 'button[type="submit"]')).status());
    }
    expect(tries).toEqual([401, 401, 401, 401, 401, 401, 401, 401, 401, 429]);
    expect((await stranger.textContent('[role="alert"]'))?.trim()).toBe(
      'Too many attempts from your address. Try again in 15 minutes.',
    );
  }, 120_000);
});
