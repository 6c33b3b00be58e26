// The contact page and the operator's page in a real browser (the system's Chromium), end to end over the example server.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Express } from 'express';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { createExampleApp } from '../example-server/app';
import type { ListingLimitsMiddleware } from '../lib';
import { tokenKey } from '../lib/limiter/keys';
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

/** Clicks what submits a form, and waits for the page it leads to. */
async function submit(page: Page, selector: string): Promise<Response> {
  const [response] = await Promise.all([page.waitForNavigation(), page.click(selector)]);
  if (!response) throw new Error(`no page after submitting ${selector}`);
  return response;
}

/** Whether the page fits a phone's width without scrolling sideways. */
const fitsWidth = (page: Page) => page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');

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
    api = await client.goto(`${served.url}/v1/bots/1`);
    expect(api?.status()).toBe(403);
    expect(JSON.parse(await client.innerText('body'))).toMatchObject({ success: false, code: 403 });
    expect((await client.goto(`${served.url}/limits/request`))?.status()).toBe(403);
    await operator.screenshot({ path: join(shots, 'admin-page.png'), fullPage: true });

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
    const limits = example.locals.limiter as ListingLimitsMiddleware;
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
    expect(await operator.textContent('#client-h')).toBe(`Client ${tokenKey(TOKEN)}`);
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
