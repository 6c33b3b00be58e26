// The operator's page whatever the store holds: a page of each list, a client's page found by token, address or key.
import request from 'supertest';
import { type GrantRequestInput, memoryStore, redisStore, type Store } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import type { GrantRequestStore } from '../lib/stores/grant-request-store';
import { csrfOf, flat, pagesAppPerTest, TOKEN } from './helpers/pages';
import { describeRedis, redisForBlock } from './helpers/redis';

const pagesApp = pagesAppPerTest();
const ONE_MIB = 1024 * 1024;

/** A request with every text as long as it may be, of the characters that escape longest (`&` is `&amp;`). */
const longest = (i: number): GrantRequestInput => ({
  token: `Bot flood-${i}-${'&'.repeat(40)}`,
  ask: { multiplier: 10 },
  proof: { kind: 'server', members: 1e12, link: `https://example.com/${'&'.repeat(480)}` },
  contact: `${'&'.repeat(180)}@example.com`,
  reason: '&'.repeat(2000),
  ip: `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`,
});

/** Counts the requests the store answers, to show a load reads a page of them, not the store. */
function counted(store: Store): { store: Store; read: () => number } {
  const records = store.state?.requests as GrantRequestStore;
  let read = 0;
  const page = records.page.bind(records);
  records.page = async (...args) => {
    const answer = await page(...args);
    read += answer.values.length;
    return answer;
  };
  return { store, read: () => read };
}

function suite(makeStore: () => Store) {
  it('with 10,000 pending requests, 1,000 bans, 1,000 grants, 60 lost records and 60 foreign entries, all of the longest texts, a load is under 1 MiB and reads one page', async () => {
    const { store, read } = counted(makeStore());
    const { app, limits } = pagesApp(() => true, { store, limits: { onError: () => {} } });
    for (let i = 0; i < 10_000; i++) await limits.requests.file(longest(i));
    const reason = '&'.repeat(500);
    for (let i = 0; i < 1000; i++) {
      await limits.ban({ token: `Bot banned-${i}` }, { duration: 3_600_000, reason });
      await limits.grant({ token: `Bot granted-${i}` }, { multiplier: 2 }, { note: reason });
    }
    // Records the store lost and entries of its state no instance applies, 60 of each, as long as they may be.
    const state = store.state as NonNullable<Store['state']>;
    const now = Date.now();
    for (let i = 0; i < 60; i++) {
      const key = tokenKey(`Bot lost-${i}`);
      const record = { key, kind: 'token', reason, since: now, until: now + 3_600_000, by: 'operator' };
      const lost = JSON.stringify({ field: `ban:${key}`, record, lostAt: now });
      const junk = JSON.stringify({ junk: '&'.repeat(1000) });
      await state.change({
        records: [
          { field: `lost:ban:${key}`, value: lost, endsAt: null, when: 'always', event: undefined, now },
          { field: `ban:junk-${i}`, value: junk, endsAt: null, when: 'always', event: undefined, now },
        ],
      });
    }
    const before = read();
    const page = await request(app).get('/admin/limits/').expect(200);
    expect(read() - before).toBe(50);
    const size = Buffer.byteLength(page.text);
    expect([size < ONE_MIB, size]).toEqual([true, size]);
    const text = flat(page.text);
    expect(text).toContain('<h2 id="requests-h">Pending grant requests (10000)</h2>');
    expect(text).toContain('<h2 id="bans-h">Active bans (1000)</h2>');
    expect(text).toContain(
      '<p class="pager">Page 1 of 200 (10000 in all) · <a href="/admin/limits/?requests=2#requests">Next →</a></p>',
    );
    expect(text.match(/<article class="card"/g)?.length).toBe(50);
    // The last page, and a page past it (the last one's rows are shown).
    const last = flat((await request(app).get('/admin/limits/?requests=200').expect(200)).text);
    expect(last).toContain(
      '<p class="pager">Page 200 of 200 (10000 in all) · <a href="/admin/limits/?requests=199#requests">← Previous</a></p>',
    );
    expect(last.match(/<article class="card"/g)?.length).toBe(50);
    const bans = flat((await request(app).get('/admin/limits/?bans=20').expect(200)).text);
    expect(bans.match(/action="\/admin\/limits\/bans\/lift"/g)?.length).toBe(50);
  }, 180_000);

  it('shows the pending requests 50 a page, in the order they were filed', async () => {
    const { app, limits } = pagesApp(() => true, { store: makeStore() });
    const ids: string[] = [];
    for (let i = 0; i < 51; i++) ids.push((await limits.requests.file({ ...longest(i), reason: 'r'.repeat(20) })).id);
    const cards = (text: string) =>
      [...text.matchAll(/<article class="card" aria-labelledby="request-([\w-]+)"/g)].map((m) => m[1]);
    const first = await request(app).get('/admin/limits/').expect(200);
    expect(cards(first.text)).toEqual(ids.slice(0, 50));
    const second = await request(app).get('/admin/limits/?requests=2').expect(200);
    expect(cards(second.text)).toEqual([ids[50]]);
    for (const odd of ['0', '-1', 'x', '9999999']) await request(app).get(`/admin/limits/?requests=${odd}`).expect(200);
  });
}

describe('memory store', () => suite(() => memoryStore()));

describeRedis('redis store', () => {
  const redis = redisForBlock();
  let n = 0;
  suite(() => redisStore(redis.client, { prefix: `operator-${process.pid}-${++n}`, timeoutMs: 5000 }));
});

describe("a client's page", () => {
  /** The operator's page (authorize lets everyone in) with a client that has counters, a ban, a grant, requests. */
  async function withClient() {
    const { app, limits } = pagesApp(() => true, { setup: (a) => a.set('trust proxy', true) });
    const agent = request.agent(app);
    const page = await agent.get('/admin/limits/').expect(200);
    const _csrf = csrfOf(page.text);
    for (const status of [200, 200, 429])
      await request(app).get('/v1/things').set('Authorization', TOKEN).expect(status);
    const filed = await limits.requests.file({ ...longest(0), token: TOKEN, ip: '203.0.113.9', reason: 'We need it.' });
    await limits.grant({ token: TOKEN }, { multiplier: 3 }, { note: 'partner' });
    await limits.ban({ token: TOKEN }, { duration: 3_600_000, reason: 'a test' });
    return { app, limits, agent, _csrf, filed };
  }

  it.each([
    ['token', TOKEN, tokenKey(TOKEN)],
    ['ip', '::ffff:203.0.113.9', 'ip:203.0.113.9'],
    ['key', tokenKey(TOKEN), tokenKey(TOKEN)],
  ])('is found by %s (hashed before the lookup), never with a token in its address', async (by, value, key) => {
    const { agent, _csrf } = await withClient();
    const found = await agent.post('/admin/limits/search').type('form').send({ by, value, _csrf }).expect(303);
    expect(found.headers.location).toBe(`/admin/limits/client?key=${encodeURIComponent(key)}`);
    expect(found.headers.location).not.toContain('requester');
  });

  it('shows its counters, refusals, ban, grant, requests and changes on one page', async () => {
    const { agent, filed } = await withClient();
    const page = await agent.get(`/admin/limits/client?key=${encodeURIComponent(tokenKey(TOKEN))}`).expect(200);
    const text = flat(page.text);
    // The client as its request shows it, on every row; its key once.
    expect(text).toContain(
      `<h2 id="client-h">Client: token ending in 9f3a</h2><p>Key <code>${tokenKey(TOKEN)}</code></p>`,
    );
    const link = `<a class="client" href="/admin/limits/client?key=${encodeURIComponent(tokenKey(TOKEN))}" title="${tokenKey(TOKEN)}">token ending in 9f3a</a>`;
    // The ban's row, the grant's, the request's card, and the two changes.
    expect(text.split(link).length - 1).toBe(5);
    expect(text).toContain('<p>Refused 1 time in the last hour on this instance.</p>');
    // Granted ×3 now: its counters are those of the grant, which no request has used yet.
    expect(text).toContain(
      '<td>GET /v1/things</td><td>GET /v1/things (x3)</td><td>60 s</td><td>0</td><td>6 of 6</td><td></td>',
    );
    expect(text).toContain('<h2 id="bans-h">Bans in force (1)</h2>');
    expect(text).toContain('<td>token</td><td>a test</td><td>operator</td>');
    expect(text).toContain('<td>every limit ×3</td>');
    expect(text).toContain(`<article class="card" aria-labelledby="request-${filed.id}">`);
    expect(text).toContain('<h2 id="requests-h">Grant requests (1 pending)</h2>');
    expect(text).toContain('<td>ban</td>');
    expect(text).not.toContain('requester-token');
  });

  it('resets its counters, bans it by key, and comes back to its page', async () => {
    const { app, limits, agent } = await withClient();
    await limits.revoke({ token: TOKEN });
    await limits.unban({ token: TOKEN });
    expect(await limits.bans()).toEqual([]);
    const key = tokenKey(TOKEN);
    const path = `/admin/limits/client?key=${encodeURIComponent(key)}`;
    const page = await agent.get(path).expect(200);
    expect(flat(page.text)).toContain(
      '<td>GET /v1/things</td><td>GET /v1/things</td><td>60 s</td><td>2</td><td>0 of 2</td>',
    );
    const _csrf = csrfOf(page.text);
    await agent
      .post('/admin/limits/client/reset')
      .type('form')
      .send({ back: key, endpoint: 'GET /v1/things', _csrf })
      .expect(303)
      .expect('Location', `${path}&done=reset`);
    expect((await limits.usage({ token: TOKEN }))[0]?.used).toBe(0);
    // The newest of the client's changes: the reset, by the page's operator (one admin token: no name).
    const changes = flat((await agent.get(`${path}&done=reset`).expect(200)).text).split('<section id="audit"')[1];
    const client = `<a class="client" href="${path}" title="${key}">token ending in 9f3a</a>`;
    expect(/<tbody><tr><td>[^<]+<\/td>(.*?)<\/tr>/.exec(changes ?? '')?.[1]).toBe(
      `<td>reset</td><td>${client}</td><td>operator</td><td>counters of GET /v1/things</td>`,
    );
    await request(app).get('/v1/things').set('Authorization', TOKEN).expect(200);
    await agent
      .post('/admin/limits/bans/new')
      .type('form')
      .send({ back: key, by: 'key', value: key, duration: '3600', _csrf })
      .expect(303)
      .expect('Location', `${path}&done=banned`);
    await request(app).get('/v1/things').set('Authorization', TOKEN).expect(403);
    // Banned by its key alone, it keeps what its grant request shows of its token.
    expect(await limits.grants()).toEqual([]);
    expect((await limits.bans()).map((b) => [b.key, b.tokenEnd])).toEqual([[key, '9f3a']]);
    const done = await agent.get(`${path}&done=banned`).expect(200);
    expect(flat(done.text)).toContain('<p class="notice" role="status">The client is banned.</p>');
  });

  it.each([
    ['/admin/limits/client', 'limitsAdmin: client.key must be a non-empty string; got &quot;&quot;.'],
    [`/admin/limits/client?key=${'k'.repeat(501)}`, 'limitsAdmin: client.key must be at most 500 characters; got 501.'],
  ])('%s is a 400 naming the field', async (path, message) => {
    const { agent } = await withClient();
    const res = await agent.get(path).expect(400);
    expect(flat(res.text)).toContain(message);
  });

  it('a search for an address that is none is a 400 naming the field', async () => {
    const { agent, _csrf } = await withClient();
    const res = await agent
      .post('/admin/limits/search')
      .type('form')
      .send({ by: 'ip', value: 'nope', _csrf })
      .expect(400);
    expect(flat(res.text)).toContain('limitsAdmin: client.ip must be an IP address; got &quot;nope&quot;.');
  });

  it('is behind authorize, and its forms need the CSRF token', async () => {
    const { app } = pagesApp(() => false);
    await request(app)
      .get(`/admin/limits/client?key=${encodeURIComponent(tokenKey(TOKEN))}`)
      .expect(403);
    const { app: open, limits } = pagesApp(() => true);
    await request(open).get('/v1/things').set('Authorization', TOKEN).expect(200);
    await request(open).post('/admin/limits/search').type('form').send({ by: 'token', value: TOKEN }).expect(403);
    const back = tokenKey(TOKEN);
    await request(open).post('/admin/limits/client/reset').type('form').send({ back }).expect(403);
    expect((await limits.usage({ token: TOKEN }))[0]?.used).toBe(1);
  });
});
