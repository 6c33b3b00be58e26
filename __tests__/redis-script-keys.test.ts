// Every Lua script of the Redis store names each key it touches in KEYS, as Redis Cluster and Dragonfly require: each
// command a script runs, seen under MONITOR, against the keys its call declared.
import { createHash } from 'node:crypto';
import type Redis from 'ioredis';
import request from 'supertest';
import { listingLimits, redisStore } from '../lib';
import { REQUEST_KEYS, SCRIPTS } from '../lib/stores/redis/scripts';
import { createApp } from './helpers/app';
import { describeRedisServer, glideClient, ioredisClient, RedisServer } from './helpers/redis';
import { withClients } from './helpers/redis-env';

const scripts: Record<string, string> = SCRIPTS;
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex');
const names = new Map(Object.entries(scripts).map(([name, lua]) => [sha1(lua), name]));

/**
 * Runs of each script with keys and arguments chosen to take each of its branches: counted or not, a key without an
 * expiry, requests left in a sliding window, refused and allowed limits, records ending and trimmed changes, a
 * request hash that is full, and so on. `setup` commands run before.
 */
// The keys the runtime state passes to the grant requests' scripts, as it passes them.
const requestKeys = REQUEST_KEYS.map((name) => `q:{r}:${name}`);
// The keys the runtime state passes to its change script, as it passes them.
const stateKeys = ['s:{r}:record', 's:{r}:changes', 's:{r}:ends', 's:{r}:history'];
// The traffic's keys: the instances, then two minutes' hash and refused clients.
const trafficKeys = ['t:{t}:instances', 't:{t}:traffic:1', 't:{t}:refused:1', 't:{t}:traffic:2', 't:{t}:refused:2'];

const runs: { script: string; setup?: string[][]; keys: string[]; args: string[] }[] = [
  { script: 'heal', setup: [['INCR', 'e:1']], keys: ['e:1'], args: ['60000'] },
  { script: 'heal', keys: ['e:1'], args: ['60000'] },
  { script: 'hit', keys: ['h:1'], args: ['60000'] },
  { script: 'hit', keys: ['h:1'], args: ['60000'] },
  { script: 'hit', setup: [['SET', 'h:2', '3']], keys: ['h:2'], args: ['60000'] },
  { script: 'hit', setup: [['SET', 'h:3', 'many']], keys: ['h:3'], args: ['60000'] },
  { script: 'limits', keys: ['l:{a}:f1', 'l:{a}:f2'], args: ['f', '1', '1000', '5', '60000'] },
  { script: 'limits', keys: ['l:{a}:f1', 'l:{a}:f2'], args: ['f', '1', '1000', '5', '60000'] },
  {
    script: 'limits',
    setup: [['RPUSH', 'l:{b}:s1', '1', '2']],
    keys: ['l:{b}:s1', 'l:{b}:s2'],
    args: ['s', '1', '1000', '5', '60000'],
  },
  { script: 'limits', keys: ['l:{b}:s1', 'l:{b}:s2'], args: ['s', '1', '1000', '5', '60000'] },
  // Keys holding what no instance writes there, and a count left without an expiry.
  {
    script: 'limits',
    setup: [
      ['SET', 'l:{c}:s1', 'many'],
      ['RPUSH', 'l:{c}:s2', 'then'],
    ],
    keys: ['l:{c}:s1', 'l:{c}:s2'],
    args: ['s', '1', '1000', '5', '60000'],
  },
  {
    script: 'limits',
    setup: [
      ['RPUSH', 'l:{d}:f1', '1'],
      ['SET', 'l:{d}:f2', '2'],
    ],
    keys: ['l:{d}:f1', 'l:{d}:f2'],
    args: ['f', '1', '1000', '5', '60000'],
  },
  ...[
    // field, value, endsAt, when, expected, event, now, epoch, history length, changes kept, ended per change
    ['ban:a', '{"x":1}', '1000', 'always', '', 'e1', '0', 'epoch', '10', '100', '10'],
    ['ban:b', '{"x":2}', '', 'always', '', '', '0', 'epoch', '10', '100', '10'],
    ['ban:c', '{"x":3}', '9000', 'absent', '', 'e3', '5000', 'epoch', '1', '1', '10'],
    ['ban:b', '{"x":4}', '', 'sha1', 'not-it', 'e4', '5000', 'epoch', '10', '100', '10'],
    ['ban:b', '{"x":5}', '', 'sha1', sha1('{"seq":2,"x":2}'), 'e5', '5000', 'epoch', '10', '100', '10'],
    ['ban:c', '', '', 'always', '', 'e6', '5000', 'epoch', '10', '100', '10'],
    ['ban:c', '', '', 'always', '', 'e7', '5000', 'epoch', '10', '100', '10'],
  ].map(([field, value, endsAt, when, expected, event, now, epoch, history, kept, ended]) => ({
    script: 'change',
    keys: stateKeys,
    // No latest time; the shared arguments; one change.
    args: ['', now, epoch, history, kept, ended, '1', field, value, endsAt, when, expected, event] as string[],
  })),
  // Two changes in one step, and a change that comes after its latest time (refused, after reading Redis' clock).
  {
    script: 'change',
    keys: stateKeys,
    args: ['', '5000', 'epoch', '10', '100', '10', '2', 'ban:d', '{"x":6}', '', 'always', '', 'e8'].concat([
      'ban:a',
      '',
      '',
      'always',
      '',
      'e9',
    ]),
  },
  {
    script: 'change',
    keys: stateKeys,
    args: ['1', '5000', 'epoch', '10', '100', '10', '1', 'ban:e', '{"x":7}', '', 'always', '', 'e10'],
  },
  { script: 'removeHistory', keys: ['s:{r}:history'], args: ['', 'e8'] },
  { script: 'removeHistory', keys: ['s:{r}:history'], args: ['1', 'e9'] },
  { script: 'clock', keys: ['s:{r}:record'], args: [] },
  { script: 'peek', keys: ['l:{a}:f1', 'l:{a}:f2'], args: ['f', '1', '1000', '5', '60000'] },
  { script: 'peek', setup: [['SET', 'l:{a}:f3', '2']], keys: ['l:{a}:f3'], args: ['f', '1', '1000'] },
  { script: 'peek', setup: [['SET', 'l:{a}:f4', 'many']], keys: ['l:{a}:f4'], args: ['f', '1', '1000'] },
  {
    script: 'peek',
    setup: [['RPUSH', 'l:{b}:s3', '1', String(Date.now() + 60_000)]],
    keys: ['l:{b}:s3'],
    args: ['s', '1', '1000'],
  },
  { script: 'forget', keys: ['l:{a}:f1', 'l:{b}:s1'], args: [] },
  ...[
    // file: id, value, client key, network, group, end, now, pending per key, per network, most kept, ended per call
    ['file', 'r1', '{"a":1}', 'k1', 'n1', 'g1', '1000', '0', '2', '3', '3', '10'],
    ['file', 'r1', '{"a":1}', 'k1', 'n1', 'g1', '1000', '0', '2', '3', '3', '10'],
    ['file', 'r2', '{"a":2}', 'k1', '', 'g1', '9000', '0', '2', '3', '3', '10'],
    ['file', 'r3', '{"a":3}', 'k1', 'n1', 'g1', '9000', '0', '2', '3', '3', '10'],
    ['file', 'r4', '{"a":4}', 'k2', 'n1', 'g2', '9000', '0', '2', '1', '3', '10'],
    ['file', 'r5', '{"a":5}', 'k3', 'n3', 'g3', '9000', '0', '2', '3', '2', '0'],
    ['file', 'r6', '{"a":6}', 'k4', 'n4', 'g4', '9000', '5000', '2', '3', '2', '0'],
    ['file', 'r7', '{"a":7}', 'k5', 'n5', 'g5', '9000', '5000', '2', '3', '1', '0'],
    // put: id, value, expected, status, client key, network, group, end, now, ended per call
    ['put', 'r7', '{"a":8}', 'not-it', 'decided', 'k5', 'n5', 'g5', '9000', '5000', '10'],
    ['put', 'r7', '{"seq":9,"a":8}', '{"seq":8,"a":7}', 'decided', 'k5', 'n5', 'g5', '1000', '5000', '10'],
  ].map((args) => ({ script: 'changeRequests', keys: requestKeys, args: ['', ...args] })),
  // A decision with a change of records in the same step; a filing that comes after its latest time.
  {
    script: 'changeRequests',
    setup: [['HSET', requestKeys[0] as string, 'r9', '{"seq":20,"a":9}']],
    keys: [...requestKeys, ...stateKeys],
    args: ['', 'put', 'r9', '{"a":10}', '{"seq":20,"a":9}', 'decided', 'k5', 'n5', 'g5', '9000', '5000', '10'].concat([
      '5000',
      'epoch',
      '10',
      '1',
      '10',
      '1',
      'grant:g',
      '{"x":8}',
      '',
      'always',
      '',
      'e11',
    ]),
  },
  {
    script: 'changeRequests',
    keys: requestKeys,
    args: ['1', 'file', 'r8', '{"a":8}', 'k6', 'n6', 'g6', '9000', '0', '2', '3', '3', '10'],
  },
  ...[
    ['page', 'pending', '0', '10', '0'],
    ['page', 'decided', '0', '10', '0'],
    ['page', 'pending', '0', '0', '0'],
    ['find', 'k', 'k5', '10'],
  ].map((args) => ({ script: 'readRequests', keys: requestKeys, args })),
  // Traffic added by an instance, over keys of other types and a count that is none; then read back by another.
  {
    script: 'traffic',
    setup: [
      ['SET', 't:{t}:instances', 'x'],
      ['HSET', 't:{t}:traffic:1', 'a GET /x', 'lots'],
      ['SET', 't:{t}:refused:2', 'x'],
    ],
    keys: trafficKeys,
    // instance, ms alive, ms kept, clients per minute, the others' key, no read; then each minute's fields and clients
    args: ['i1', '600', '60000', '1', '(others)', '0', '1', 'a GET /x', '2', '2', 'k1', '1', 'k2', '1'].concat([
      '0',
      '1',
      'k3',
      '1',
    ]),
  },
  {
    script: 'traffic',
    setup: [
      ['SET', 't:{t}:traffic:2', 'x'],
      ['ZADD', 't:{t}:refused:1', 'inf', 'k4'],
    ],
    keys: trafficKeys,
    args: ['i2', '600', '60000', '1', '(others)', '10', '0', '0', '0', '0'],
  },
  { script: 'read', keys: ['g:1'], args: [] },
  { script: 'read', setup: [['SET', 'g:1', '3', 'EX', '60']], keys: ['g:1'], args: [] },
  { script: 'consume', keys: ['c:1'], args: ['2', '60'] },
  { script: 'consume', keys: ['c:2'], args: ['1', '0'] },
  { script: 'consume', setup: [['SET', 'c:3', '1']], keys: ['c:3'], args: ['1', '60'] },
];

/** A script's text as EVAL sent it: MONITOR shows it with its line breaks, quotes and backslashes escaped. */
const unescaped = (text: string) =>
  text.replace(/\\(x[0-9a-f]{2}|.)/g, (_match, c: string) =>
    c.length === 3 ? String.fromCharCode(parseInt(c.slice(1), 16)) : ({ n: '\n', r: '\r', t: '\t' }[c] ?? c),
  );

/** What MONITOR showed: each script call, with the keys it declared and the commands it ran. */
interface Call {
  readonly script: string;
  readonly declared: readonly string[];
  readonly commands: string[][];
}

describeRedisServer('the keys every script of the Redis store touches', () => {
  let server: RedisServer;
  let redis: Redis;
  const calls: Call[] = [];
  /** The keys of a command as Redis itself finds them (`COMMAND GETKEYS`); none for a command without keys. */
  const keysOf = async (command: string[]): Promise<string[]> => {
    if (command.length === 1) return []; // TIME: GETKEYS takes no command without arguments
    return (redis.call('COMMAND', 'GETKEYS', ...command) as Promise<unknown[]>).then(
      (keys) => (keys as string[]).map(String),
      (error: Error) => {
        if (/no key arguments/i.test(error.message)) return [];
        throw error;
      },
    );
  };

  beforeAll(async () => {
    server = await RedisServer.start();
    redis = await ioredisClient(server.url);
    const monitor = await redis.monitor();
    const marker = `end-${process.pid}`;
    let ended = false;
    let current: Call | undefined;
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const [name = '', ...rest] = args;
      if (source === 'lua') {
        current?.commands.push(args);
        return;
      }
      current = undefined;
      if (name.toLowerCase() === 'echo' && rest[0] === marker) ended = true;
      if (!/^eval(sha)?$/i.test(name)) return;
      const sha = name.toLowerCase() === 'eval' ? sha1(unescaped(rest[0] ?? '')) : (rest[0] ?? '');
      const declared = rest.slice(2, 2 + Number(rest[1]));
      current = { script: names.get(sha) ?? sha, declared, commands: [] };
      calls.push(current);
    });

    try {
      // Each script on its own, with the arguments that take each branch.
      for (const run of runs) {
        for (const command of run.setup ?? []) await redis.call(command[0] as string, ...command.slice(1));
        const lua = scripts[run.script] as string;
        await redis.eval(lua, run.keys.length, ...run.keys, ...run.args);
      }
      // And as the store runs them, through ioredis and through GLIDE: counts, sliding windows and several limits,
      // bans, grants and grant requests, a limiter's reads and writes.
      // GLIDE's own scripts run above whether it loads here or not; through the store only where it does.
      const glide =
        withClients(['glide'] as const, (kind) => kind).length > 0 ? await glideClient(server.url) : undefined;
      try {
        for (const client of glide ? [redis, glide] : [redis]) {
          const store = redisStore(client, { prefix: 'keys', timeoutMs: 10_000, onFailure: 'closed' });
          const rows = [
            { method: 'GET', path: '/v1/one', limit: 1, windowMs: 60_000 },
            { method: 'GET', path: '/v1/two', limit: 1, windowMs: 1000 },
            { method: 'GET', path: '/v1/two', limit: 2, windowMs: 60_000 },
          ];
          for (const window of ['fixed', 'sliding'] as const) {
            const app = createApp({ listing: rows, options: { store, window } });
            for (const path of ['/v1/one', '/v1/one', '/v1/two', '/v1/two']) await request(app).get(path);
            app.locals.limiter.close();
          }
          const limits = listingLimits(rows, { store });
          await limits.ban({ token: 'Bot b' }, { duration: 60_000 });
          await limits.grant({ token: 'Bot g' }, { multiplier: 2 });
          await limits.revoke({ token: 'Bot g' });
          await limits.unban({ token: 'Bot b' });
          const filed = await limits.requests.file({
            token: 'Bot requester-0001',
            ask: { multiplier: 2 },
            proof: { kind: 'bot', servers: 1, shards: 1, link: 'https://example.com/bot' },
            contact: 'ops@example.com',
            reason: 'r',
          });
          await limits.requests.decline(filed.id, 'no');
          limits.close();
          const limiter = store({ name: 'GET /x', limit: 1, windowMs: 60_000 });
          await limiter.get('k');
          await limiter.consume('k').catch(() => {});
          await limiter.penalty('k', 2);
          await limiter.get('k');
        }
      } finally {
        glide?.close();
      }
      await redis.echo(marker);
      for (let i = 0; i < 1000 && !ended; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      if (!ended) throw new Error('MONITOR did not show every command');
    } finally {
      monitor.disconnect();
    }
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await server?.close();
  });

  /** The commands of `mine` that touched a key their call did not declare; and how many keys they touched. */
  const undeclared = async (mine: readonly Call[]) => {
    const found: string[] = [];
    let touched = 0;
    for (const call of mine) {
      for (const command of call.commands) {
        for (const key of await keysOf(command)) {
          touched++;
          if (!call.declared.includes(key)) found.push(`${command.join(' ')} (declared: ${call.declared})`);
        }
      }
    }
    return { found, touched };
  };

  it.each(Object.keys(scripts))(
    '%s: every key of every command it ran is one of the KEYS it was given',
    async (name) => {
      const mine = calls.filter((c) => c.script === name);
      expect(mine.length).toBeGreaterThan(0);
      const { found, touched } = await undeclared(mine);
      expect(found).toEqual([]);
      // Redis' clock is read on the node of its key, and touches none.
      expect({ name, touches: touched > 0 }).toEqual({ name, touches: name !== 'clock' });
    },
  );

  it("rate-limiter-flexible's own script, which consume() runs through ioredis, declares its keys too", async () => {
    const others = calls.filter((c) => !(c.script in scripts));
    expect(others.length).toBeGreaterThan(0);
    expect(new Set(others.map((c) => c.script)).size).toBe(1);
    expect(await undeclared(others)).toEqual({ found: [], touched: expect.any(Number) });
  });

  it('the runs of each script above took every command the script has', () => {
    // A command a script names but no run took would go unchecked: each is seen at least once.
    for (const [name, lua] of Object.entries(scripts)) {
      const named = new Set([...lua.matchAll(/redis\.p?call\('(\w+)'/g)].map((m) => (m[1] as string).toLowerCase()));
      const ran = new Set(calls.filter((c) => c.script === name).flatMap((c) => c.commands.map((a) => a[0])));
      expect({ name, missing: [...named].filter((command) => !ran.has(command)) }).toEqual({ name, missing: [] });
    }
  });
});
