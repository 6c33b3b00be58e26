// Operators by name on the operator's page: a token each, the name in every change, the logouts of one or of all.
import type { Express } from 'express';
import request from 'supertest';
import { type ChangeEvent, ListingLimitsError, memoryStore } from '../lib';
import { limitsAdmin } from '../lib/pages';
import { csrfOf, flat, loggedIn, pagesAppPerTest, TOKEN } from './helpers/pages';

const pagesApp = pagesAppPerTest();
const ALICE = 'alice-token-0123456789';
const BOB = 'bob-token-0123456789ab';
const tokens = { alice: ALICE, 'bob.smith@example.org': BOB };
const BOB_NAME = 'bob.smith@example.org';

/** The page's form `path` posted by a logged-in agent, with the CSRF token of its page. */
const post = (login: Awaited<ReturnType<typeof loggedIn>>, path: string, body: object) =>
  login.agent
    .post(`/admin/limits${path}`)
    .type('form')
    .send({ back: '', ...body, _csrf: csrfOf(login.page.text) });

/** Where the page sends an agent: 200, or the place it redirects to. */
const where = (login: Awaited<ReturnType<typeof loggedIn>>) =>
  login.agent.get('/admin/limits/').then((res) => (res.status === 200 ? 200 : `${res.status} ${res.headers.location}`));
const OUT = '303 /admin/limits/login';

describe('{ tokens }: each operator logs in with a token of their own', () => {
  it('names the operator on the page and in every change made from it: records, history, audit trail, onChange', async () => {
    const changes: ChangeEvent[] = [];
    const { app, limits } = pagesApp({ tokens }, { limits: { onChange: (event) => void changes.push(event) } });
    const alice = await loggedIn(app, ALICE);
    expect(flat(alice.page.text)).toContain('<p class="who">Operator: <strong>alice</strong></p>');
    await post(alice, '/bans/new', { by: 'ip', value: '203.0.113.7', duration: '3600', reason: 'scraping' }).expect(
      303,
    );
    expect((await limits.bans()).map((ban) => [ban.key, ban.by, ban.operator])).toEqual([
      ['ip:203.0.113.7', 'operator', 'alice'],
    ]);
    const filed = await limits.requests.file({
      token: TOKEN,
      ask: { multiplier: 10 },
      proof: { kind: 'server', members: 5000, link: 'https://example.com/server' },
      contact: 'ops@example.com',
      reason: 'We serve many people.',
    });
    const bob = await loggedIn(app, BOB);
    await post(bob, '/bans/lift', { key: 'ip:203.0.113.7' }).expect(303);
    await post(bob, '/requests/approve', { id: filed.id, grant: 'asked', expiry: '30' }).expect(303);
    await post(alice, '/grants/revoke', { key: filed.key }).expect(303);
    await post(bob, '/client/reset', { back: filed.key, endpoint: '' }).expect(303);
    const named = (e: ChangeEvent) => [e.action, e.key, e.operator];
    const expected = [
      ['reset', filed.key, BOB_NAME],
      ['revoke', filed.key, 'alice'],
      ['grant', filed.key, BOB_NAME],
      ['unban', 'ip:203.0.113.7', BOB_NAME],
      ['ban', 'ip:203.0.113.7', 'alice'],
    ];
    expect((await limits.history()).map(named)).toEqual(expected);
    expect(changes.map(named)).toEqual([...expected].reverse());
    const page = flat((await alice.agent.get('/admin/limits/').expect(200)).text);
    const audit = page.slice(page.indexOf('<section id="audit"'));
    expect([...audit.matchAll(/<td>(alice|bob[^<]*|operator)<\/td>/g)].map((m) => m[1])).toEqual([
      BOB_NAME,
      'alice',
      BOB_NAME,
      BOB_NAME,
      'alice',
    ]);
  });

  it('records who decided each request: the operators see it, its requester does not', async () => {
    const { app, limits } = pagesApp({ tokens });
    const input = (token: string) => ({
      token,
      ask: 'unlimited' as const,
      proof: { kind: 'server' as const, members: 5000, link: 'https://example.com/server' },
      contact: 'ops@example.com',
      reason: 'We serve many people.',
    });
    const [first, second] = [await limits.requests.file(input(TOKEN)), await limits.requests.file(input(`${TOKEN}-2`))];
    const bob = await loggedIn(app, BOB);
    await post(bob, '/requests/decline', { id: first.id, reason: 'Too small yet.' }).expect(303);
    await expect(limits.requests.decline(second.id, 'no', { by: 'x y' })).rejects.toMatchObject({
      code: 'ERR_INVALID_OPTION',
      field: 'options.by',
    });
    await limits.requests.approve(second.id, 'unlimited', { by: 'alice' });
    expect([
      (await limits.requests.get(first.id))?.decidedBy,
      (await limits.requests.get(second.id))?.decidedBy,
    ]).toEqual([BOB_NAME, 'alice']);
    const seen = await limits.requests.status(first.id, TOKEN);
    expect([seen?.status, seen?.decidedBy]).toEqual(['declined', undefined]);
    const page = flat((await bob.agent.get('/admin/limits/').expect(200)).text);
    expect(page).toContain('<td>declined: Too small yet.</td>');
    expect([...page.matchAll(/<\/td><td>(alice|bob[^<]*)<\/td><\/tr>/g)].map((m) => m[1]).slice(0, 2)).toEqual([
      'alice',
      BOB_NAME,
    ]);
  });

  it('refuses a token of no operator, and the admin token of `{ token }` once `{ tokens }` replaced it', async () => {
    const store = memoryStore();
    const secret = 'a-secret-of-at-least-32-characters!!';
    const single = pagesApp(undefined, { store, secret });
    const before = await loggedIn(single.app);
    const named = pagesApp({ tokens }, { store, secret });
    const form = await request.agent(named.app).get('/admin/limits/login').expect(200);
    const answer = await request(named.app)
      .post('/admin/limits/login')
      .set('Cookie', form.headers['set-cookie'] as unknown as string[])
      .type('form')
      .send({ token: 'nobody-token-0123456789', _csrf: csrfOf(form.text) })
      .expect(401);
    expect(flat(answer.text)).toContain('<p class="alert" role="alert">Wrong admin token.</p>');
    // The anonymous login of `{ token }`, on an instance of `{ tokens }`: no operator's.
    const cookie = Object.values(before.cookies).join('; ');
    const page = await request(named.app).get('/admin/limits/').set('Cookie', cookie);
    expect([page.status, page.headers.location]).toEqual([303, '/admin/limits/login']);
  });

  it("a new token of one operator, or none, ends that operator's logins only", async () => {
    const store = memoryStore();
    const secret = 'a-secret-of-at-least-32-characters!!';
    const first = pagesApp({ tokens }, { store, secret });
    const [alice, bob] = [await loggedIn(first.app, ALICE), await loggedIn(first.app, BOB)];
    const renewed = pagesApp({ tokens: { ...tokens, alice: `${ALICE}-renewed` } }, { store, secret });
    const replay = (login: typeof alice, app: Express) =>
      request(app)
        .get('/admin/limits/')
        .set('Cookie', Object.values(login.cookies).join('; '))
        .then((res) => res.status);
    expect([await replay(alice, renewed.app), await replay(bob, renewed.app)]).toEqual([303, 200]);
    // An operator taken out of `tokens` is logged out too.
    const without = pagesApp({ tokens: { alice: ALICE } }, { store, secret });
    expect([await replay(alice, without.app), await replay(bob, without.app)]).toEqual([200, 303]);
  });
});

describe('"Log out everywhere" ends the logins of one operator or of all, as chosen', () => {
  it('offers every operator by name, the one logged in chosen', async () => {
    const { app } = pagesApp({ tokens });
    const alice = await loggedIn(app, ALICE);
    expect(flat(alice.page.text)).toContain(
      '<select id="logout-whose" name="operator"><option value="">every operator\'s</option>' +
        '<option value="alice" selected>alice</option>' +
        `<option value="${BOB_NAME}">${BOB_NAME}</option></select>`,
    );
  });

  it("ends another operator's logins and keeps one's own, then one's own, then everyone's", async () => {
    const { app } = pagesApp({ tokens }, { admin: { logins: { limit: 10, windowMs: 60_000 } } });
    const [alice, bob, bob2] = [await loggedIn(app, ALICE), await loggedIn(app, BOB), await loggedIn(app, BOB)];
    const ended = await post(alice, '/logout/everywhere', { operator: BOB_NAME }).expect(303);
    expect(ended.headers.location).toBe('/admin/limits/?done=loggedout');
    expect([await where(alice), await where(bob), await where(bob2)]).toEqual([200, OUT, OUT]);
    const again = await loggedIn(app, BOB);
    const own = await post(again, '/logout/everywhere', { operator: BOB_NAME }).expect(303);
    expect(own.headers.location).toBe('/admin/limits/login');
    expect([await where(alice), await where(again)]).toEqual([200, OUT]);
    const third = await loggedIn(app, BOB);
    await post(third, '/logout/everywhere', { operator: '' }).expect(303);
    expect([await where(alice), await where(third)]).toEqual([OUT, OUT]);
  });

  it.each([
    ['mallory', '&quot;mallory&quot;.'],
    ['<script>x</script>', '&quot;&lt;script&gt;x&lt;/script&gt;&quot;.'],
    ['ALICE', '&quot;ALICE&quot;. Did you mean `alice`?'],
  ])('refuses the choice %j with a page that names the field, ending nothing', async (operator, got) => {
    const { app } = pagesApp({ tokens });
    const [alice, bob] = [await loggedIn(app, ALICE), await loggedIn(app, BOB)];
    const res = await post(alice, '/logout/everywhere', { operator }).expect(400);
    expect(flat(res.text)).toContain(
      '<p class="alert" role="alert">limitsAdmin: operator must be one of &quot;&quot;, &quot;alice&quot;, ' +
        `&quot;${BOB_NAME}&quot;; got ${got}</p>`,
    );
    expect(res.text).not.toContain('<script>x');
    expect([await where(alice), await where(bob)]).toEqual([200, 200]);
  });
});

describe('authorize answering a name', () => {
  it('records the name it answers, and refuses an answer that is no name, telling onError', async () => {
    const errors: unknown[] = [];
    const { app, limits } = pagesApp((req) => req.get('X-Operator') ?? false, {
      limits: { onError: (error) => void errors.push(error) },
    });
    const agent = request.agent(app);
    const page = await agent.get('/admin/limits/').set('X-Operator', 'carol').expect(200);
    expect(flat(page.text)).toContain('<p class="who">Operator: <strong>carol</strong></p>');
    await agent
      .post('/admin/limits/bans/new')
      .set('X-Operator', 'carol')
      .type('form')
      .send({ by: 'ip', value: '203.0.113.8', duration: '3600', back: '', _csrf: csrfOf(page.text) })
      .expect(303);
    expect((await limits.history()).map((e) => [e.action, e.operator])).toEqual([['ban', 'carol']]);
    const refused = await agent.get('/admin/limits/').set('X-Operator', '<img src=x onerror=alert(1)>').expect(403);
    expect(refused.text).not.toContain('<img');
    expect(errors).toEqual([expect.any(ListingLimitsError)]);
    expect(errors[0]).toMatchObject({
      code: 'ERR_INVALID_OPTION',
      field: 'the answer of options.authorize',
      message:
        "limitsAdmin: the answer of options.authorize must be an operator's name of 1 to 64 characters: letters, " +
        'digits and `_.@-`, starting with a letter or a digit; got "<img src=x onerror=alert(1)>".',
    });
  });
});

describe('the option { tokens } is checked when the page is made', () => {
  const limits = () => pagesApp().limits;
  it.each([
    [{ tokens: {} }, 'options.authorize.tokens', "must be an object of 1 to 100 operators' tokens by name"],
    [{ tokens: 'alice' }, 'options.authorize.tokens', "must be an object of 1 to 100 operators' tokens by name"],
    [{ tokens: { 'al ice': ALICE } }, 'options.authorize.tokens key', "must be an operator's name of 1 to 64"],
    [{ tokens: { alice: 'short' } }, 'options.authorize.tokens.alice', 'got a string of 5 characters.'],
    [{ tokens: { alice: ALICE, bob: ALICE } }, 'options.authorize.tokens.bob', 'is the token of alice'],
    [{ tokens, token: ALICE }, 'options.authorize', 'takes { token } or { tokens }, not both.'],
  ])('%j → a coded error naming %s', (authorize, field, message) => {
    const made = () => limitsAdmin(limits(), { authorize: authorize as never });
    expect(made).toThrow(ListingLimitsError);
    expect(made).toThrow(expect.objectContaining({ code: 'ERR_INVALID_OPTION', field }));
    expect(made).toThrow(message);
    // Never a token's value in the message.
    expect(made).not.toThrow(ALICE);
  });

  it('more than 100 operators → a coded error naming options.authorize.tokens', () => {
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`op${i}`, `token-of-operator-${i}`]));
    expect(() => limitsAdmin(limits(), { authorize: { tokens: many } })).toThrow(
      expect.objectContaining({ code: 'ERR_INVALID_OPTION', field: 'options.authorize.tokens' }),
    );
  });
});
