// The contact page and the operator's page over HTTP: every route's status, escaping, CSRF, logins and limits.
import express5 from 'express';
import request from 'supertest';
import { listingLimits, type ListingLimitsMiddleware, ListingLimitsError, redisStore } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { escapeHtml, limitsAdmin, limitsRequestPage } from '../lib/pages';
import { expressVersions } from './helpers/app';
import { ADMIN, contactForm, csrfOf, flat, loggedIn, pagesAppPerTest, rows, TOKEN, valid } from './helpers/pages';
import { describeRedis, redisForBlock, scanKeys } from './helpers/redis';

const CSP =
  "default-src 'none';script-src 'self';style-src 'self';img-src 'self' data:;form-action 'self';" +
  "frame-ancestors 'none';base-uri 'none';connect-src 'self'";

const pagesApp = pagesAppPerTest();
let made: ListingLimitsMiddleware[] = [];
afterEach(() => {
  for (const l of made) l.close();
  made = [];
});

describe('escapeHtml', () => {
  it.each([
    ['<script>alert("x")</script>', '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'],
    ["a & b's", 'a &amp; b&#39;s'],
    ['plain', 'plain'],
    ['&amp;', '&amp;amp;'],
  ])('%s', (text, escaped) => expect(escapeHtml(text)).toBe(escaped));
});

describe('the contact page', () => {
  it('serves the form with a strict CSP, and its static files', async () => {
    const { app } = pagesApp();
    const res = await request(app).get('/limits/request').expect(200);
    expect(res.headers['content-security-policy']).toBe(CSP);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(flat(res.text)).toContain('<form class="card" method="post" action="/limits/request/" novalidate>');
    expect(flat(res.text)).toContain(
      '<label for="limit_1">POST /v1/things/:id <span class="hint">(now 1 per 10 s)</span></label>',
    );
    expect(flat(res.text)).not.toMatch(/<script>|style=|on(click|submit|load)=/);
    await request(app)
      .get('/limits/request/assets/pages.css')
      .expect(200)
      .expect('Content-Type', 'text/css; charset=utf-8');
    await request(app)
      .get('/limits/request/assets/pages.js')
      .expect(200)
      .expect('Content-Type', 'text/javascript; charset=utf-8');
  });

  it('refuses a form with missing proof with each field’s message, keeps what was typed (escaped), never the token', async () => {
    const { app, limits } = pagesApp();
    const res = await (
      await contactForm(app)
    )({ ...valid, servers: '', shards: '', link: '', reason: '<script>alert(1)</script> "quoted"' }).expect(400);
    expect(flat(res.text)).toContain(
      '<p class="error" id="error-servers">Enter the number of servers your bot is in.</p>',
    );
    expect(flat(res.text)).toContain(
      '<p class="error" id="error-shards">Enter the number of shards your bot runs (1 if it is not sharded).</p>',
    );
    expect(flat(res.text)).toContain(
      '<p class="error" id="error-link">Enter a link (https://…) where the size of your service can be checked.</p>',
    );
    expect(flat(res.text)).toContain('aria-invalid="true" aria-describedby="error-servers"');
    expect(flat(res.text)).toContain('>&lt;script&gt;alert(1)&lt;/script&gt; &quot;quoted&quot;</textarea>');
    expect(flat(res.text)).toContain('name="contact" value="ops@example.com"');
    expect(flat(res.text)).not.toContain('requester-token');
    expect(flat(res.text)).not.toContain('<script>alert');
    expect(await limits.requests.list()).toEqual([]);
  });

  it.each([
    [{ token: '' }, 'token', 'Enter the Authorization token your client sends.'],
    [{ ask: '' }, 'ask', 'Choose what you ask for.'],
    [{ multiplier: '1' }, 'multiplier', 'Enter a multiplier above 1 and at most 1000, e.g. 10.'],
    [{ ask: 'endpoints' }, 'rows', 'Fill in the limit you want for at least one endpoint.'],
    [
      { ask: 'endpoints', limit_0: '2' },
      'rows',
      'Each limit you fill in must be a whole number above the current limit.',
    ],
    [{ kind: 'server' }, 'members', 'Enter the number of members of your server.'],
    [{ kind: '' }, 'kind', 'Say whether your service is a bot or a server.'],
    [
      { link: 'javascript:alert(1)' },
      'link',
      'Enter a link (https://…) where the size of your service can be checked.',
    ],
    [{ contact: 'nobody' }, 'contact', 'Enter an e-mail address where we can answer you.'],
    [{ reason: 'short' }, 'reason', 'Tell us why you need more, in 10 to 2000 characters.'],
  ])('refuses %j: the message of %s', async (change, name, message) => {
    const { app } = pagesApp();
    const res = await (await contactForm(app))({ ...valid, ...change }).expect(400);
    expect(flat(res.text)).toContain(`<p class="error" id="error-${name}">${escapeHtml(message)}</p>`);
  });

  it('files a request, shows its id, and shows its status only with its token', async () => {
    const { app, limits } = pagesApp();
    const res = await (await contactForm(app))({ ...valid, ask: 'endpoints', limit_0: '20' }).expect(303);
    const [filed] = await limits.requests.list();
    expect(filed?.ask).toEqual({ rows: [{ method: 'GET', path: '/v1/things', limit: 20, windowMs: 60_000 }] });
    expect(filed?.key).toBe(tokenKey(TOKEN));
    const id = filed?.id as string;
    expect(res.headers.location).toBe(`/limits/request/status?id=${id}&filed=1`);
    const shown = await request(app)
      .get(res.headers.location as string)
      .expect(200);
    expect(flat(shown.text)).toContain(`Its id is <code>${id}</code>`);
    const status = await request(app)
      .post('/limits/request/status')
      .type('form')
      .send({ id, token: TOKEN })
      .expect(200);
    expect(flat(status.text)).toContain('<strong>Pending.</strong> An operator has not decided yet.');
    expect(flat(status.text)).toContain('Asked: GET /v1/things: 20 per 60 s');
    expect(flat(status.text)).toContain('for the token ending in 9f3a.');
    const other = await request(app)
      .post('/limits/request/status')
      .type('form')
      .send({ id, token: 'Bot other' })
      .expect(404);
    expect(flat(other.text)).toContain('No request has this id for this token.');
    await request(app)
      .get('/limits/request/status?id=%3Cscript%3E')
      .expect(200)
      .expect((r) => {
        expect(flat(r.text)).toContain('name="id" value=""');
      });
  });

  it('refuses a submission without the CSRF token of its browser', async () => {
    const { app, limits } = pagesApp();
    const res = await request(app).post('/limits/request').type('form').send(valid).expect(403);
    expect(flat(res.text)).toContain('This form did not come from this page, or has expired.');
    expect(await limits.requests.list()).toEqual([]);
  });

  it('limits submissions per address with the package’s own middleware, and bodies by size', async () => {
    const { app } = pagesApp();
    for (let i = 0; i < 5; i++) await (await contactForm(app))({ token: 'x' }).expect(400);
    const res = await (await contactForm(app))(valid).expect(429);
    expect(flat(res.text)).toContain('Too many attempts from your address. Try again in 60 minutes.');
    await request(app)
      .post('/limits/request/status')
      .type('form')
      .send({ reason: 'x'.repeat(20_000) })
      .expect(413);
  });

  it.each([
    [() => limitsRequestPage({} as ListingLimitsMiddleware), 'limits'],
    [
      (l: ListingLimitsMiddleware) => limitsRequestPage(l, { submissions: { limit: 0, windowMs: 1000 } }),
      'options.submissions.limit',
    ],
    [(l: ListingLimitsMiddleware) => limitsRequestPage(l, { sumbissions: {} } as never), 'options.sumbissions'],
  ])('refuses bad options at start: %#', (make, name) => {
    const limits = listingLimits(rows);
    made.push(limits);
    expect(() => make(limits)).toThrow(ListingLimitsError);
    expect(() => make(limits)).toThrow(expect.objectContaining({ field: name }));
  });
});

describe('the operator page', () => {
  it('refuses to start without authorize, or with a short token or secret', () => {
    const limits = listingLimits(rows);
    made.push(limits);
    expect(() => limitsAdmin(limits, {} as never)).toThrow(
      expect.objectContaining({ field: 'options.authorize', code: 'ERR_INVALID_OPTION' }),
    );
    expect(() => limitsAdmin(limits, { authorize: { token: 'short' } })).toThrow(
      expect.objectContaining({ field: 'options.authorize.token' }),
    );
    expect(() => limitsAdmin(limits, { authorize: () => true, secret: 'short' })).toThrow(
      expect.objectContaining({ field: 'options.secret' }),
    );
  });

  it('sends a visitor without a login to the login form, and refuses its POSTs', async () => {
    const { app } = pagesApp();
    await request(app).get('/admin/limits').expect(303).expect('Location', '/admin/limits/login');
    const login = await request(app).get('/admin/limits/login').expect(200);
    expect(login.headers['content-security-policy']).toBe(CSP);
    expect(flat(login.text)).toContain('<label for="admin-token">Admin token</label>');
    await request(app).post('/admin/limits/bans/new').type('form').send({ by: 'ip', value: '1.2.3.4' }).expect(403);
  });

  it('logs in with the admin token into a signed, HttpOnly, SameSite=Strict cookie; a wrong token is refused, then limited', async () => {
    const { app } = pagesApp();
    const agent = request.agent(app);
    const form = await agent.get('/admin/limits/login').expect(200);
    const _csrf = csrfOf(form.text);
    const wrong = await agent.post('/admin/limits/login').type('form').send({ token: 'nope', _csrf }).expect(401);
    expect(flat(wrong.text)).toContain('<p class="alert" role="alert">Wrong admin token.</p>');
    const ok = await agent.post('/admin/limits/login').type('form').send({ token: ADMIN, _csrf }).expect(303);
    expect(ok.headers.location).toBe('/admin/limits/');
    const cookie = (ok.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('listing-limits.admin='));
    // A random session id and its issue time, signed.
    expect(cookie).toMatch(
      /^listing-limits\.admin=s%3A[\w-]{22}\.\d{13}\.[^;]+; Max-Age=28800; Path=\/admin\/limits; Expires=[^;]+; HttpOnly; SameSite=Strict$/,
    );
    const page = await agent.get('/admin/limits/').expect(200);
    expect(flat(page.text)).toContain('<h2 id="requests-h">Pending grant requests (0)</h2>');
    // The login form's token now is the login session's.
    const again = { _csrf: csrfOf((await agent.get('/admin/limits/login').expect(200)).text) };
    await agent
      .post('/admin/limits/login')
      .type('form')
      .send({ token: 'nope', ...again })
      .expect(401);
    const limited = await agent
      .post('/admin/limits/login')
      .type('form')
      .send({ token: ADMIN, ...again })
      .expect(429);
    expect(flat(limited.text)).toContain('Too many attempts from your address.');
  });

  it('refuses a login and every change without the CSRF token of the browser', async () => {
    const { app } = pagesApp();
    await request(app).post('/admin/limits/login').type('form').send({ token: ADMIN }).expect(403);
    const operator = pagesApp(() => true);
    const agent = request.agent(operator.app);
    await agent.get('/admin/limits/').expect(200);
    const refused = await agent
      .post('/admin/limits/bans/new')
      .type('form')
      .send({ by: 'ip', value: '1.2.3.4', duration: '3600' });
    expect(refused.status).toBe(403);
    expect(flat(refused.text)).toContain('This form did not come from this page, or has expired.');
    // A token of another browser does not fit this one's cookie.
    const other = await request(operator.app).get('/admin/limits/').expect(200);
    await agent
      .post('/admin/limits/bans/new')
      .type('form')
      .send({ by: 'ip', value: '1.2.3.4', duration: '3600', _csrf: csrfOf(other.text) })
      .expect(403);
    expect(await operator.limits.bans()).toEqual([]);
  });

  it('answers 403 to everyone authorize refuses, sync or async, and passes its errors on', async () => {
    for (const authorize of [() => false, async () => false]) {
      const { app } = pagesApp(authorize);
      await request(app).get('/admin/limits/').expect(403);
      await request(app).post('/admin/limits/bans/lift').type('form').send({ key: 'x' }).expect(403);
    }
    const { app } = pagesApp(() => {
      throw new Error('login service down');
    });
    await request(app).get('/admin/limits/').expect(500);
  });

  it('approves a request ×10, the token gets the extended limits, and its requester sees it approved', async () => {
    const { app, limits } = pagesApp(() => true);
    const agent = request.agent(app);
    await (await contactForm(app))({ ...valid, reason: 'Please <b>now</b>' }).expect(303);
    const page = await agent.get('/admin/limits/').expect(200);
    expect(flat(page.text)).toContain('<td>Please &lt;b&gt;now&lt;/b&gt;</td>');
    expect(flat(page.text)).toContain(
      'bot in 120000 servers, 120 shards; <a href="https://example.com/bot" rel="noopener noreferrer nofollow" target="_blank">',
    );
    const [filed] = await limits.requests.list();
    const id = filed?.id as string;
    const done = await agent
      .post('/admin/limits/requests/approve')
      .type('form')
      .send({ id, grant: 'multiplier', multiplier: '10', expiry: '30', _csrf: csrfOf(page.text) })
      .expect(303);
    expect(done.headers.location).toBe('/admin/limits/?done=approved');
    const api = await request(app).get('/v1/things').set('Authorization', TOKEN).expect(200);
    expect(api.headers['x-ratelimit-limit']).toBe('20');
    const status = await request(app)
      .post('/limits/request/status')
      .type('form')
      .send({ id, token: TOKEN })
      .expect(200);
    expect(flat(status.text)).toMatch(
      /<strong>Approved:<\/strong> every limit ×10, until \d{4}-\d\d-\d\d \d\d:\d\d UTC\./,
    );
    const after = await agent.get('/admin/limits/?done=approved').expect(200);
    expect(flat(after.text)).toContain(
      '<p class="notice" role="status">The request is approved and the grant given.</p>',
    );
    expect(flat(after.text)).toContain('<h2 id="grants-h">Active grants (1)</h2>');
    const again = await agent
      .post('/admin/limits/requests/approve')
      .type('form')
      .send({ id, grant: 'unlimited', expiry: 'never', _csrf: csrfOf(after.text) })
      .expect(400);
    expect(flat(again.text)).toContain('limits.requests.approve: id names a request already approved.');
  });

  it('declines with a reason the requester sees as text', async () => {
    const { app } = pagesApp(() => true);
    const agent = request.agent(app);
    await (await contactForm(app))(valid).expect(303);
    const page = await agent.get('/admin/limits/').expect(200);
    const id = /name="id" value="([\w-]+)"/.exec(page.text)?.[1] as string;
    await agent
      .post('/admin/limits/requests/decline')
      .type('form')
      .send({ id, reason: '<img src=x onerror=alert(1)> too small', _csrf: csrfOf(page.text) })
      .expect(303);
    const status = await request(app)
      .post('/limits/request/status')
      .type('form')
      .send({ id, token: TOKEN })
      .expect(200);
    expect(flat(status.text)).toContain('<p>&lt;img src=x onerror=alert(1)&gt; too small</p>');
  });

  it('bans a token (403 on the API and on other pages), lists it, and lifts it', async () => {
    const { app, limits } = pagesApp(() => true);
    const agent = request.agent(app);
    const page = await agent.get('/admin/limits/').expect(200);
    await agent
      .post('/admin/limits/bans/new')
      .type('form')
      .send({ by: 'token', value: TOKEN, reason: '<i>scraping</i>', duration: '86400', _csrf: csrfOf(page.text) })
      .expect(303)
      .expect('Location', '/admin/limits/?done=banned');
    await request(app).get('/v1/things').set('Authorization', TOKEN).expect(403);
    await request(app).get('/').set('Authorization', TOKEN).expect(403);
    const listed = await agent.get('/admin/limits/').expect(200);
    expect(flat(listed.text)).toContain('<td>token</td><td>&lt;i&gt;scraping&lt;/i&gt;</td><td>operator</td>');
    expect(flat(listed.text)).not.toContain('requester-token');
    await agent
      .post('/admin/limits/bans/lift')
      .type('form')
      .send({ key: tokenKey(TOKEN), _csrf: csrfOf(listed.text) })
      .expect(303)
      .expect('Location', '/admin/limits/?done=lifted');
    await request(app).get('/v1/things').set('Authorization', TOKEN).expect(200);
    expect(await limits.bans()).toEqual([]);
    const bad = await agent
      .post('/admin/limits/bans/new')
      .type('form')
      .send({ by: 'ip', value: 'not-an-ip', duration: '3600', _csrf: csrfOf(listed.text) })
      .expect(400);
    expect(flat(bad.text)).toContain('limits.ban: client.ip must be an IP address; got &quot;not-an-ip&quot;.');
  });

  it('revokes a grant and changes its expiry; shows the audit trail and the last hour', async () => {
    const { app, limits } = pagesApp(() => true);
    const agent = request.agent(app);
    await limits.grant({ token: TOKEN }, { multiplier: 2 }, { note: 'partner' });
    for (const status of [200, 200, 429])
      await request(app).get('/v1/things').set('Authorization', 'Bot noisy').expect(status);
    const page = await agent.get('/admin/limits/').expect(200);
    const things = '/admin/limits/?traffic=GET%20%2Fv1%2Fthings#traffic';
    expect(flat(page.text)).toContain(
      '<tr><td><a href="/admin/limits/#traffic" aria-current="true">All endpoints</a></td><td>2</td><td>1</td></tr>' +
        `<tr><td><a href="${things}">GET /v1/things</a></td><td>2</td><td>1</td></tr>`,
    );
    expect(flat(page.text)).toContain('<h3>Requests per minute: All endpoints</h3>');
    // The memory store's hour is this process's, and the page says so.
    expect(flat(page.text)).toContain(
      '<h2 id="traffic-h">The last hour in this process</h2><p class="hint">These are this process\'s requests: ' +
        'other instances are not shown.</p>',
    );
    expect(limits.traffic().instances).toBeUndefined();
    // One endpoint's minutes, on demand; a value that names no endpoint shows them all.
    const one = await agent.get('/admin/limits/?traffic=GET%20%2Fv1%2Fthings').expect(200);
    expect(flat(one.text)).toContain('<h3>Requests per minute: GET /v1/things</h3>');
    expect(flat(one.text)).toContain(`<a href="${things}" aria-current="true">GET /v1/things</a>`);
    for (const asked of ['__proto__', 'constructor', '<script>', 'GET /v1/nothing']) {
      const other = await agent.get('/admin/limits/').query({ traffic: asked }).expect(200);
      expect(flat(other.text)).toContain('<h3>Requests per minute: All endpoints</h3>');
    }
    const twice = await agent.get('/admin/limits/?traffic=a&traffic=b').expect(200);
    expect(flat(twice.text)).toContain('<h3>Requests per minute: All endpoints</h3>');
    // The grant by token shows the token's end, as its grant request would; so does the grant a new expiry replaces.
    const label = (text: string) =>
      flat(text).match(
        /<tr><td><a class="client" href="[^"]+" title="([^"]+)">token ending in 9f3a<\/a><\/td><td>every limit ×2/,
      )?.[1];
    expect(label(page.text)).toBe(tokenKey(TOKEN));
    const noisy = tokenKey('Bot noisy');
    expect(flat(page.text)).toContain(
      `<a class="key" href="/admin/limits/client?key=${encodeURIComponent(noisy)}" title="${noisy}">`,
    );
    expect(flat(page.text)).toContain('<td>grant</td>');
    expect(flat(page.text)).toContain('<svg xmlns="http://www.w3.org/2000/svg"');
    const key = tokenKey(TOKEN);
    await agent
      .post('/admin/limits/grants/expiry')
      .type('form')
      .send({ key, expiry: '7', _csrf: csrfOf(page.text) })
      .expect(303);
    const [grant] = await limits.grants();
    expect([grant?.note, grant?.tokenEnd]).toEqual(['partner', '9f3a']);
    expect(label((await agent.get('/admin/limits/').expect(200)).text)).toBe(tokenKey(TOKEN));
    expect((grant?.until?.getTime() ?? 0) - Date.now()).toBeGreaterThan(6 * 24 * 3600_000);
    await agent
      .post('/admin/limits/grants/expiry')
      .type('form')
      .send({ key, expiry: '12', _csrf: csrfOf(page.text) })
      .expect(400);
    await agent
      .post('/admin/limits/grants/revoke')
      .type('form')
      .send({ key, _csrf: csrfOf(page.text) })
      .expect(303)
      .expect('Location', '/admin/limits/?done=revoked');
    expect(await limits.grants()).toEqual([]);
    await agent
      .post('/admin/limits/grants/revoke')
      .type('form')
      .send({ key, _csrf: csrfOf(page.text) })
      .expect(303)
      .expect('Location', '/admin/limits/?done=none');
  });
});

describe('the other answers of each route', () => {
  it('logs out: the login cookie is cleared, and the page asks for a login again', async () => {
    const { app } = pagesApp();
    const { agent, page } = await loggedIn(app);
    await agent.post('/admin/limits/logout').type('form').send({}).expect(403);
    const out = await agent
      .post('/admin/limits/logout')
      .type('form')
      .send({ _csrf: csrfOf(page.text) })
      .expect(303)
      .expect('Location', '/admin/limits/login');
    expect((out.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('listing-limits.admin='))).toBe(
      'listing-limits.admin=; Path=/admin/limits; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Strict',
    );
    await agent.get('/admin/limits/').expect(303).expect('Location', '/admin/limits/login');
  });

  it('refuses a decline without a reason, and an unknown request, with a 400 naming the field', async () => {
    const { app } = pagesApp(() => true);
    const agent = request.agent(app);
    await (await contactForm(app))(valid).expect(303);
    const page = await agent.get('/admin/limits/').expect(200);
    const id = /name="id" value="([\w-]+)"/.exec(page.text)?.[1] as string;
    const _csrf = csrfOf(page.text);
    const empty = await agent.post('/admin/limits/requests/decline').type('form').send({ id, reason: ' ', _csrf });
    expect(empty.status).toBe(400);
    expect(flat(empty.text)).toContain(
      'limits.requests.decline: reason must be a non-empty string of at most 2000 characters; got &quot; &quot;.',
    );
    const unknown = await agent
      .post('/admin/limits/requests/approve')
      .type('form')
      .send({ id: 'nope', grant: 'unlimited', expiry: 'never', _csrf });
    expect(unknown.status).toBe(400);
    expect(flat(unknown.text)).toContain('limits.requests.approve: id is no request&#39;s id; got &quot;nope&quot;.');
  });

  it('limits status checks per address', async () => {
    const limits = listingLimits(rows);
    made.push(limits);
    const app = express5().use('/r', limitsRequestPage(limits, { checks: { limit: 2, windowMs: 60_000 } }));
    for (const status of [404, 404, 429]) {
      await request(app).post('/r/status').type('form').send({ id: 'x', token: 'y' }).expect(status);
    }
  });
});

describe.each(expressVersions)('with %s', (_name, express) => {
  it('files a request, logs in, and approves it', async () => {
    const { app, limits } = pagesApp(undefined, { express });
    await (await contactForm(app))(valid).expect(303);
    const { agent, page } = await loggedIn(app);
    const [filed] = await limits.requests.list();
    await agent
      .post('/admin/limits/requests/approve')
      .type('form')
      .send({ id: filed?.id, grant: 'asked', expiry: 'never', _csrf: csrfOf(page.text) })
      .expect(303);
    expect((await limits.grants()).map((g) => [g.key, g.grant, g.until])).toEqual([
      [tokenKey(TOKEN), { multiplier: 10 }, undefined],
    ]);
  });

  it.each(['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'])(
    'a notice names only an action of its own: ?done=%s shows none',
    async (done) => {
      const { app } = pagesApp(() => true, { express });
      for (const path of ['/admin/limits/', `/admin/limits/client?key=${encodeURIComponent(tokenKey(TOKEN))}&`]) {
        const res = await request(app)
          .get(`${path}${path.endsWith('&') ? '' : '?'}done=${done}`)
          .expect(200);
        expect(res.text).not.toContain('class="notice"');
        expect(res.text).not.toMatch(/function|native code|\[object/);
      }
      const shown = await request(app).get('/admin/limits/?done=lifted').expect(200);
      expect(flat(shown.text)).toContain('<p class="notice" role="status">The ban is lifted.</p>');
    },
  );
});

describeRedis('two instances sharing a Redis store', () => {
  const redis = redisForBlock();
  const prefix = `pages-${process.pid}`;
  afterEach(async () => {
    const keys = await scanKeys(redis.client, `${prefix}:*`);
    if (keys.length > 0) await redis.client.del(...keys);
  });

  it('a request filed on one is decided on the other, and the grant holds on both', async () => {
    const secret = 'a-secret-shared-by-both-instances-0001';
    const [a, b] = [0, 1].map(() =>
      pagesApp(() => true, { store: redisStore(redis.client, { prefix, timeoutMs: 5000 }), secret }),
    ) as [ReturnType<typeof pagesApp>, ReturnType<typeof pagesApp>];
    const filed = await (await contactForm(a.app))(valid).expect(303);
    const id = /id=([\w-]+)/.exec(filed.headers.location as string)?.[1] as string;
    const operator = request.agent(b.app);
    const page = await operator.get('/admin/limits/').expect(200);
    expect(flat(page.text)).toContain('<h2 id="requests-h">Pending grant requests (1)</h2>');
    // The CSRF token of one instance's form is good on the other, which shares the secret.
    const other = request.agent(a.app);
    await other.get('/admin/limits/').expect(200);
    await operator
      .post('/admin/limits/requests/approve')
      .type('form')
      .send({ id, grant: 'multiplier', multiplier: '10', expiry: '7', _csrf: csrfOf(page.text) })
      .expect(303);
    const status = await request(a.app).post('/limits/request/status').type('form').send({ id, token: TOKEN });
    expect(flat(status.text)).toContain('<strong>Approved:</strong> every limit ×10, until');
    // Instance a reads the grant from Redis within its refresh.
    for (let i = 0; ; i++) {
      const res = await request(a.app).get('/v1/things').set('Authorization', TOKEN);
      if (res.headers['x-ratelimit-limit'] === '20' || i === 40) {
        expect([res.status, res.headers['x-ratelimit-limit']]).toEqual([200, '20']);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const stored = await redis.client.hgetall(`${prefix}:{runtime}:requests`);
    expect(Object.keys(stored)).toEqual([id]);
    expect(JSON.stringify(stored)).not.toContain('requester-token');
  });
});
