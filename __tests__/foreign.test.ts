// Entries of the runtime state in Redis that are not records of this version: skipped, told once, listed, removable.
import express5 from 'express';
import request from 'supertest';
import { type EndpointRow, listingLimits, type ListingLimitsMiddleware, redisStore, RuntimeStateError } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { limitsAdmin } from '../lib/pages';
import { describeRedis, redisForBlock } from './helpers/redis';

const rows: readonly EndpointRow[] = [{ method: 'GET', path: '/v1/things', limit: 2, windowMs: 60_000 }];
const TOKEN = 'Bot foreign';
const KEY = tokenKey(TOKEN);
const NOW = Date.now();
const ban = (fields: Record<string, unknown>) =>
  JSON.stringify({
    seq: 1,
    key: KEY,
    kind: 'token',
    reason: 'abuse',
    since: NOW,
    until: NOW + 600_000,
    by: 'operator',
    ...fields,
  });
const grant = (fields: Record<string, unknown>) =>
  JSON.stringify({ seq: 1, key: KEY, grant: 'unlimited', since: NOW, until: null, note: null, ...fields });

/** Entries of the records that another writer left, each naming the client TOKEN, and why each is skipped. */
const records: { name: string; field: string; text: string; problem: string }[] = [
  { name: 'not JSON', field: `ban:${KEY}`, text: 'banned!', problem: 'is not JSON' },
  { name: 'not an object', field: `ban:${KEY}`, text: '[1,2]', problem: 'is not a JSON object; got [1,2]' },
  {
    name: 'an end beyond any date (1e400)',
    field: `ban:${KEY}`,
    text: ban({ until: Infinity }).replace('null', '1e400'),
    problem: '"until" must be a time in epoch ms; got Infinity',
  },
  {
    name: 'an end that is not a time',
    field: `ban:${KEY}`,
    text: ban({ until: 'soon' }),
    problem: '"until" must be a time in epoch ms; got "soon"',
  },
  {
    name: 'a ban of another client',
    field: `ban:${KEY}`,
    text: ban({ key: 't:someone-else' }),
    problem: 'is the ban of "t:someone-else", not of ' + JSON.stringify(KEY),
  },
  {
    name: 'a kind of client that does not exist',
    field: `ban:${KEY}`,
    text: ban({ kind: 'robot' }),
    problem: `"kind" must be 'token', 'ip' or 'custom'; got "robot"`,
  },
  {
    name: "a token's end longer than 4 characters (a token kept whole)",
    field: `ban:${KEY}`,
    text: ban({ tokenEnd: 'Bot foreign' }),
    problem: '"tokenEnd" must be up to 4 characters; got "Bot foreign"',
  },
  {
    name: "an operator's name that is markup",
    field: `ban:${KEY}`,
    text: ban({ operator: '<script>x</script>' }),
    problem: `"operator" must be an operator's name; got "<script>x</script>"`,
  },
  {
    name: "a grant's operator that is no string",
    field: `grant:${KEY}`,
    text: grant({ operator: ['alice'] }),
    problem: `"operator" must be an operator's name; got ["alice"]`,
  },
  {
    name: "a grant's token end that is no string",
    field: `grant:${KEY}`,
    text: grant({ tokenEnd: 1234 }),
    problem: '"tokenEnd" must be up to 4 characters; got 1234',
  },
  {
    name: 'a grant that is a number',
    field: `grant:${KEY}`,
    text: grant({ grant: 5 }),
    problem: "is not a grant of this table: grant must be 'unlimited', { multiplier } or { rows }; got 5.",
  },
  {
    name: 'a grant of rows another table has',
    field: `grant:${KEY}`,
    text: grant({ grant: { rows: [{ method: 'GET', path: '/v2/other', limit: 50, windowMs: 1000 }] } }),
    problem: 'is not a grant of this table: grant.rows[0] (GET /v2/other) replaces no row of the table.',
  },
  {
    name: 'a grant whose end is a word',
    field: `grant:${KEY}`,
    text: grant({ until: 'never' }),
    problem: '"until" must be a time in epoch ms or null; got "never"',
  },
  {
    name: 'a lost record of no known kind',
    field: `lost:quota:${KEY}`,
    text: JSON.stringify({ field: `quota:${KEY}`, record: {}, lostAt: NOW }),
    problem: `keeps a record of no known kind: "quota:${KEY}"`,
  },
  {
    name: 'a kind this version does not know',
    field: `quota:${KEY}`,
    text: '{"epoch":3}',
    problem: 'is of a kind this version does not know ("quota")',
  },
];

/** Entries of the history that are not changes. */
const events = [
  { name: 'not JSON', text: '{"action":', problem: 'is not JSON' },
  {
    name: 'a time that is a word',
    text: JSON.stringify({ action: 'ban', key: KEY, kind: 'token', by: 'operator', at: 'soon' }),
    problem: '"at" must be a time in epoch ms; got "soon"',
  },
  {
    // As a version before resets were recorded sees a reset: skipped, as here.
    name: 'an action that does not exist',
    text: JSON.stringify({ action: 'explode', key: KEY, kind: 'token', by: 'operator', at: NOW }),
    problem: '"action" must be ban, unban, grant, revoke, reset; got "explode"',
  },
  {
    name: 'a reset of an endpoint that is a number',
    text: JSON.stringify({ action: 'reset', key: KEY, kind: 'token', by: 'operator', at: NOW, endpoint: 42 }),
    problem: '"endpoint" must be a string of at most 500 characters; got 42',
  },
  {
    name: "an operator's name with a line break",
    text: JSON.stringify({ action: 'ban', key: KEY, kind: 'token', by: 'operator', at: NOW, operator: 'eve\nroot' }),
    problem: `"operator" must be an operator's name; got "eve\\nroot"`,
  },
  {
    name: 'a grant that is a number',
    text: JSON.stringify({ action: 'grant', key: KEY, kind: 'token', by: 'operator', at: NOW, grant: 5 }),
    problem: '"grant" must be a grant; got 5',
  },
];

const csrfOf = (text: string) => /name="_csrf" value="([^"]+)"/.exec(text)?.[1] as string;
const escaped = (text: string) =>
  text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');

describeRedis('foreign entries of the runtime state in Redis', () => {
  const redis = redisForBlock();
  let made = 0;
  let limits: ListingLimitsMiddleware[] = [];
  afterEach(() => {
    for (const l of limits) l.close();
    limits = [];
  });

  /**
   * An app on a fresh prefix whose state another writer began (an epoch of its own), with the operator's page open to
   * all; what onError is told.
   */
  async function app() {
    const prefix = `foreign-${process.pid}-${++made}`;
    await redis.client.hset(`${prefix}:{runtime}:record`, '#epoch', 'other-writer');
    const errors: unknown[] = [];
    const store = redisStore(redis.client, { prefix, timeoutMs: 5000, onFailure: 'closed' });
    const l = listingLimits(rows, { store, onError: (error) => void errors.push(error) });
    limits.push(l);
    const server = express5();
    server.use('/admin', limitsAdmin(l, { authorize: () => true }));
    server.use(l);
    server.get('/v1/things', (_req, res) => {
      res.json({ ok: true });
    });
    server.get('/outside', (_req, res) => {
      res.json({ ok: true });
    });
    return { server, l, errors, record: `${prefix}:{runtime}:record`, history: `${prefix}:{runtime}:history` };
  }

  /** Writes a field as a writer using the state's change log would, atomically: the field, the next number, the change. */
  async function writeChanged(record: string, field: string, text: string): Promise<void> {
    const script = `local seq = redis.call('hincrby', KEYS[1], '#seq', 1)
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
redis.call('zadd', KEYS[2], seq, ARGV[1])`;
    await redis.client.eval(script, 2, record, record.replace(/:record$/, ':changes'), field, text);
  }

  /** The page's section of foreign entries lists each entry with its text and problem; removing one answers 303. */
  async function removeOnPage(server: Awaited<ReturnType<typeof app>>['server'], id: string, shown: string[]) {
    const agent = request.agent(server);
    const page = await agent.get('/admin/').expect(200);
    for (const text of shown) expect(page.text).toContain(escaped(text));
    const removed = await agent
      .post('/admin/foreign/remove')
      .type('form')
      .send({ id, _csrf: csrfOf(page.text) })
      .expect(303);
    expect(removed.headers.location).toBe('/admin/?done=removed');
  }

  it.each(records)(
    'a record that is $name: skipped on the request path, told once, listed and removed on the page',
    async ({ field, text, problem }) => {
      const { server, l, errors, record } = await app();
      await l.foreign(); // read once, empty
      await writeChanged(record, field, text);
      const foreign = await l.foreign();
      expect(foreign).toEqual([{ id: `record ${field}`, place: 'record', field, text, problem }]);

      // The client it names is counted as any other, at the table's limit, and never answered 5xx.
      for (const expected of [200, 200, 429]) {
        const res = await request(server).get('/v1/things').set('Authorization', TOKEN);
        expect([res.status, res.headers['x-ratelimit-limit']]).toEqual([expected, '2']);
      }
      await request(server).get('/outside').set('Authorization', TOKEN).expect(200);
      expect(await l.bans()).toEqual([]);
      expect(await l.grants()).toEqual([]);
      expect(await l.lost()).toEqual([]);
      expect(errors).toEqual([
        new RuntimeStateError(
          'ERR_FOREIGN_ENTRY',
          `the store's runtime state has a foreign entry, skipped: record ${field} ${problem}.`,
        ),
      ]);
      expect((errors[0] as RuntimeStateError).entry).toBe(`record ${field}`);

      await removeOnPage(server, `record ${field}`, [text, problem]);
      expect(await redis.client.hget(record, field)).toBeNull();
      expect(await l.foreign()).toEqual([]);
      const after = await request(server).get('/admin/').expect(200);
      expect(after.text).not.toContain('foreign entries (');
      expect(errors).toHaveLength(1);
    },
  );

  it('a foreign record written before the instance starts is found by its first read of the whole state', async () => {
    const { field, text, problem } = records[2] as (typeof records)[number];
    const prefix = `foreign-${process.pid}-${++made}`;
    await redis.client.hset(`${prefix}:{runtime}:record`, field, text);
    const errors: unknown[] = [];
    const l = listingLimits(rows, { store: redisStore(redis.client, { prefix }), onError: (e) => void errors.push(e) });
    limits.push(l);
    expect(await l.foreign()).toEqual([{ id: `record ${field}`, place: 'record', field, text, problem }]);
    expect(errors.map((e) => (e as RuntimeStateError).code)).toEqual(['ERR_FOREIGN_ENTRY']);
  });

  it.each(events)(
    'a history entry that is $name: skipped by history(), told once, listed and removed on the page',
    async ({ text, problem }) => {
      const { server, l, errors, history } = await app();
      await l.ban({ token: TOKEN }, { duration: 60_000, reason: 'spam' });
      await redis.client.lpush(history, text);
      // The page shows the audit trail (history()) and the foreign entries: it answers 200, with both.
      const page = await request(server).get('/admin/').expect(200);
      expect(page.text).toContain(escaped(problem));
      expect((await l.history()).map((e) => [e.action, e.key, e.reason])).toEqual([['ban', KEY, 'spam']]);
      expect(await l.history()).toHaveLength(1);
      const id = (await l.foreign())[0]?.id as string;
      expect(await l.foreign()).toEqual([{ id, place: 'history', field: undefined, text, problem }]);
      expect(errors).toEqual([
        new RuntimeStateError(
          'ERR_FOREIGN_ENTRY',
          `the store's runtime state has a foreign entry, skipped: history ${problem}.`,
        ),
      ]);

      await removeOnPage(server, id, [text]);
      expect(await redis.client.lrange(history, 0, -1)).toHaveLength(1);
      expect(await l.foreign()).toEqual([]);
      expect((await l.history()).map((e) => e.action)).toEqual(['ban']);
    },
  );

  it('a foreign entry of 100 KB is shown cut to 200 characters, and removed as it was read', async () => {
    const { l, record } = await app();
    const text = `{"huge":"${'x'.repeat(100_000)}"}`;
    await writeChanged(record, `ban:${KEY}`, text);
    const [entry] = await l.foreign();
    expect(entry?.text).toBe(`${text.slice(0, 200)}…`);
    await expect(l.removeForeign(entry?.id as string)).resolves.toBe(true);
    expect(await redis.client.hget(record, `ban:${KEY}`)).toBeNull();
  });

  it("the state's own fields, named among the changes, are never taken for records", async () => {
    const { l, record, errors } = await app();
    await l.ban({ token: TOKEN }, { duration: 60_000 });
    await writeChanged(record, '#seq', 'ignored');
    expect(await l.foreign()).toEqual([]);
    expect((await l.bans()).map((b) => b.key)).toEqual([KEY]);
    expect(errors).toEqual([]);
  });

  it('removing an entry that changed since it was listed removes nothing', async () => {
    const { l, record } = await app();
    const { field, text } = records[0] as (typeof records)[number];
    await writeChanged(record, field, text);
    const [entry] = await l.foreign();
    await redis.client.hset(record, field, 'changed meanwhile');
    await expect(l.removeForeign(entry?.id as string)).resolves.toBe(false);
    expect(await redis.client.hget(record, field)).toBe('changed meanwhile');
    await expect(l.removeForeign('record nothing:here')).resolves.toBe(false);
    await expect(l.removeForeign('history nothing')).resolves.toBe(false);
  });
});
