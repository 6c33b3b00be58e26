// The Redis store losing its runtime state: what each instance does with what it knew, and the operator's lost records.
import express5 from 'express';
import type Redis from 'ioredis';
import request from 'supertest';
import { type EndpointRow, listingLimits, type ListingLimitsMiddleware, redisStore, RuntimeStateError } from '../lib';
import { tokenKey } from '../lib/contract/keys';
import { limitsAdmin } from '../lib/pages';
import { createServer, type Server, type Socket, connect } from 'node:net';
import { describeRedis, describeRedisServer, ioredisClient, redisForBlock, RedisServer } from './helpers/redis';

const rows: readonly EndpointRow[] = [{ method: 'GET', path: '/v1/things', limit: 2, windowMs: 60_000 }];
const ban = { after: 1, within: 60_000, duration: 600_000 };
const csrfOf = (text: string) => /name="_csrf" value="([^"]+)"/.exec(text)?.[1] as string;

/** Retries `check` until it passes, for up to 10 s: a bound for a hang, not a speed the machine must keep. */
async function eventually(check: () => Promise<void>): Promise<void> {
  const end = performance.now() + 10_000;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (performance.now() > end) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

describeRedis('the Redis store loses its runtime state', () => {
  const redis = redisForBlock();
  let clients: Redis[] = [];
  let made: ListingLimitsMiddleware[] = [];
  let prefixes = 0;
  afterEach(() => {
    for (const l of made) l.close();
    for (const client of clients) client.disconnect();
    made = [];
    clients = [];
  });

  /** Two instances on one prefix, each with a Redis client of its own and the operator's page; what onError is told. */
  async function pair() {
    const prefix = `lost-${process.pid}-${++prefixes}`;
    const [a, b] = await Promise.all(
      [0, 1].map(async () => {
        const client = await ioredisClient(redis.url);
        clients.push(client);
        const errors: RuntimeStateError[] = [];
        const store = redisStore(client, { prefix, timeoutMs: 5000, onFailure: 'closed' });
        const l = listingLimits(rows, { store, ban, onError: (error) => void errors.push(error as RuntimeStateError) });
        made.push(l);
        const app = express5();
        app.use('/admin', limitsAdmin(l, { authorize: () => true }));
        app.use(l);
        app.get('/v1/things', (_req, res) => {
          res.json({ ok: true });
        });
        app.get('/outside', (_req, res) => {
          res.json({ ok: true });
        });
        return { app, l, errors, prefix };
      }),
    );
    return [a, b] as [NonNullable<typeof a>, NonNullable<typeof b>];
  }

  it("keeps the operators' bans and grants it lost as lost records, applied by none until restored", async () => {
    const [a, b] = await pair();
    const [partner, abuser, cheater] = ['Bot partner', 'Bot abuser', 'Bot cheater'];
    await a.l.grant({ token: partner }, { multiplier: 10 }, { note: 'ticket 7' });
    await a.l.ban({ token: abuser }, { duration: 600_000, reason: 'scraping' });
    for (const status of [200, 200, 429, 403]) {
      await request(a.app).get('/v1/things').set('Authorization', cheater).expect(status);
    }
    await eventually(async () => expect((await b.l.bans()).length).toBe(2));
    await request(b.app).get('/outside').set('Authorization', abuser).expect(403);

    await redis.client.flushall();
    const message =
      "the store's runtime state was lost (a restart, a flush or a failover): 2 ban(s) and grant(s) " +
      'of operators are kept as lost records, to restore or dismiss; 1 ban(s) by rule are gone.';
    for (const instance of [a, b]) {
      await eventually(async () => expect(instance.errors).toEqual([new RuntimeStateError('ERR_STATE_LOST', message)]));
    }
    await eventually(async () => expect((await b.l.lost()).length).toBe(2));
    const lost = await b.l.lost();
    expect(
      lost.map(({ id, kind, key, ban, grant }) => [id, kind, key, ban?.reason, grant?.grant, grant?.note]),
    ).toEqual(
      expect.arrayContaining([
        [`grant:${tokenKey(partner)}`, 'grant', tokenKey(partner), undefined, { multiplier: 10 }, 'ticket 7'],
        [`ban:${tokenKey(abuser)}`, 'ban', tokenKey(abuser), 'scraping', undefined, undefined],
      ]),
    );
    expect(await a.l.lost()).toEqual(lost);
    for (const instance of [a, b]) {
      expect([await instance.l.bans(), await instance.l.grants()]).toEqual([[], []]);
      await request(instance.app).get('/outside').set('Authorization', abuser).expect(200);
      // The table's counter, which both share (limit 2): one request on each.
      const res = await request(instance.app).get('/v1/things').set('Authorization', partner).expect(200);
      expect(res.headers['x-ratelimit-limit']).toBe('2');
    }

    // On the page: each lost record, restored or dismissed.
    const agent = request.agent(b.app);
    const page = await agent.get('/admin/').expect(200);
    expect(page.text).toContain('lost records (2)');
    expect(page.text).toContain('ban (scraping) until');
    expect(page.text).toContain('grant: every limit ×10, until revoked');
    const post = (path: string, id: string) =>
      agent
        .post(path)
        .type('form')
        .send({ id, _csrf: csrfOf(page.text) })
        .expect(303);
    expect((await post('/admin/lost/restore', `grant:${tokenKey(partner)}`)).headers.location).toBe(
      '/admin/?done=restored',
    );
    expect((await post('/admin/lost/dismiss', `ban:${tokenKey(abuser)}`)).headers.location).toBe(
      '/admin/?done=removed',
    );
    expect((await post('/admin/lost/dismiss', `ban:${tokenKey(abuser)}`)).headers.location).toBe('/admin/?done=none');
    expect(await b.l.lost()).toEqual([]);
    expect((await a.l.grants()).map((g) => [g.key, g.grant, g.note])).toEqual([
      [tokenKey(partner), { multiplier: 10 }, 'ticket 7'],
    ]);
    const granted = await request(a.app).get('/v1/things').set('Authorization', partner).expect(200);
    expect(granted.headers['x-ratelimit-limit']).toBe('20');
    await request(a.app).get('/outside').set('Authorization', abuser).expect(200);
    expect((await a.l.history()).map((e) => [e.action, e.key])).toEqual([['grant', tokenKey(partner)]]);
  });

  it('a copy of the state that is behind it (a failover) brings back no ban lifted since', async () => {
    const [a, b] = await pair();
    const record = `${a.prefix}:{runtime}:record`;
    await a.l.ban({ token: 'Bot lifted' }, { duration: 600_000 });
    await a.l.ban({ token: 'Bot kept' }, { duration: 600_000 });
    const copy = await redis.client.hgetall(record);
    expect(await b.l.unban({ token: 'Bot lifted' })).toBe(true);
    await eventually(async () => expect((await a.l.bans()).map((x) => x.key)).toEqual([tokenKey('Bot kept')]));

    // The copy, as a replica that had not received the unban takes over.
    await redis.client.multi().del(record).hset(record, copy).exec();
    const message =
      "the store's runtime state was replaced by a copy that is behind it (a failover): 1 record(s) lifted before " +
      'came back with it and are removed again.';
    // The first instance to read the copy removes the ban again and says so; one that reads it after that finds
    // nothing lifted to remove and nothing lost, and says nothing.
    await eventually(async () => expect(a.errors.length + b.errors.length).toBeGreaterThan(0));
    expect(new Set([...a.errors, ...b.errors].map((e) => [e.code, e.message].join(' ')))).toEqual(
      new Set([`ERR_STATE_LOST listing-limits: ${message}`]),
    );
    for (const instance of [a, b]) {
      await eventually(async () => expect((await instance.l.bans()).map((x) => x.key)).toEqual([tokenKey('Bot kept')]));
      await request(instance.app).get('/outside').set('Authorization', 'Bot lifted').expect(200);
      await request(instance.app).get('/outside').set('Authorization', 'Bot kept').expect(403);
    }
    expect(await redis.client.hget(record, `ban:${tokenKey('Bot lifted')}`)).toBeNull();
  });
});

/**
 * A TCP proxy on a port of its own to a Redis that `switchTo()` changes, dropping every connection: what a failover
 * behind one address (Sentinel's, a DNS name) does to the clients.
 */
async function proxy(to: number): Promise<{ port: number; switchTo(port: number): void; close(): Promise<void> }> {
  let target = to;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    const upstream = connect(target, '127.0.0.1');
    for (const s of [socket, upstream]) {
      sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        socket.destroy();
        upstream.destroy();
        sockets.delete(s);
      });
    }
    socket.pipe(upstream).pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    switchTo(port) {
      target = port;
      for (const socket of sockets) socket.destroy();
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describeRedisServer('a replica promoted while it was behind, written to before an instance reads it', () => {
  it('its first change marks it a copy: the instance that knew more finds what it lacks lost, and keeps what was written on it since', async () => {
    const master = await RedisServer.start();
    const replica = await RedisServer.start(['--replicaof', '127.0.0.1', String(master.port)]);
    const front = await proxy(master.port);
    const clients: Redis[] = [];
    const made: ListingLimitsMiddleware[] = [];
    try {
      const open = async (port: number) => {
        const client = await ioredisClient(`redis://127.0.0.1:${port}`);
        clients.push(client);
        return client;
      };
      const [onMaster, onReplica] = [await open(master.port), await open(replica.port)];
      await until(async () => String(await onReplica.info('replication')).includes('master_link_status:up'));
      const errors: RuntimeStateError[] = [];
      const limits = (client: Redis, onError?: (error: RuntimeStateError) => void) => {
        const l = listingLimits(rows, {
          store: redisStore(client, { prefix: 'promoted', timeoutMs: 5000 }),
          onError: onError && ((error) => onError(error as RuntimeStateError)),
        });
        made.push(l);
        return l;
      };
      // A follows the state through the address that the failover moves.
      const a = limits(await open(front.port), (error) => errors.push(error));
      expect(await a.ban({ token: 'Bot kept' }, { duration: 600_000 })).toBe(true);
      expect(await onMaster.wait(1, 5000)).toBe(1);
      // The replica loses its link, and cannot make it again: the next ban is on the master alone, and A knows it.
      await onReplica.config('SET', 'masterauth', 'not-the-password');
      await onMaster.call('CLIENT', 'KILL', 'TYPE', 'replica');
      await until(async () => String(await onReplica.info('replication')).includes('master_link_status:down'));
      expect(await a.ban({ token: 'Bot behind' }, { duration: 600_000 })).toBe(true);
      await a.bans();

      // Promoted, and written to first by another instance: its sequence number is A's again, on another history.
      await onReplica.replicaof('NO', 'ONE');
      const b = limits(onReplica);
      expect(await b.ban({ token: 'Bot after' }, { duration: 600_000 })).toBe(true);
      expect(await onReplica.hget('promoted:{runtime}:record', '#copy')).not.toBeNull();

      front.switchTo(replica.port);
      await until(async () => errors.length > 0);
      await until(async () => (await a.lost()).length === 1);
      expect((await a.lost()).map((l) => l.id)).toEqual([`ban:${tokenKey('Bot behind')}`]);
      expect(errors.map((e) => e.code)).toEqual(['ERR_STATE_LOST']);
      // What was written on the promoted replica since holds: it was never lifted, whatever its number.
      const keys = async (l: ListingLimitsMiddleware) => (await l.bans()).map((ban) => ban.key).sort();
      const expected = [tokenKey('Bot after'), tokenKey('Bot kept')].sort();
      await until(async () => JSON.stringify(await keys(a)) === JSON.stringify(expected));
      expect([await keys(a), await keys(b)]).toEqual([expected, expected]);
    } finally {
      for (const l of made) l.close();
      for (const client of clients) client.disconnect();
      await front.close();
      await Promise.all([master.close(), replica.close()]);
    }
  });
});

/** Waits until `condition()` holds, asking every 25 ms, for up to 10 s: a bound for a hang. */
async function until(condition: () => Promise<boolean>): Promise<void> {
  const end = performance.now() + 10_000;
  while (!(await condition())) {
    if (performance.now() > end) throw new Error('never held');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
