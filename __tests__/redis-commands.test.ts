// What a request costs Redis, and what the store makes of what it finds there, with every kind of client, on a server
// and on a Cluster of three masters: each request's commands exactly as Redis received them (MONITOR on every node),
// a counter that a client left without an expiry, a counter's key that holds no count, and how the commands of one
// turn leave (one write with ioredis, one batch with GLIDE).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { createInterface } from 'node:readline';
import type Redis from 'ioredis';
import { createClient, createCluster } from 'redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import request from 'supertest';
import { type EndpointRow, redisStore } from '../lib';
import { SCRIPTS } from '../lib/stores/redis/scripts';
import { createApp } from './helpers/app';
import { describeRedisServer, glideClient, ioredisClient, RedisCluster, RedisServer } from './helpers/redis';
import { type ClientPackage, withClients } from './helpers/redis-env';

const LIMIT = 2;
const row: EndpointRow = { method: 'GET', path: '/v1/things/:id', limit: LIMIT, windowMs: 60_000 };
const BUCKET = 'GET /v1/things/:id';
/** No answer of a busy machine's Redis comes 10 s late; a request Redis could not count would be a loud 503. */
const counting = { timeoutMs: 10_000, onFailure: 'closed' } as const;

let prefixes = 0;
const freshPrefix = () => `cmd-${process.pid}-${++prefixes}`;
/** The key of the one client of these tests (no Authorization: its address) on the endpoint. */
const keyOf = (prefix: string) => `${prefix}:${BUCKET}:ip:127.0.0.1`;

/** Waits until `condition()`, for up to 20 s: a bound for a hang, not a speed the machine must keep up. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  if (!condition()) throw new Error(`timed out waiting until ${what}`);
}

interface Connection {
  readonly client: Parameters<typeof redisStore>[0];
  close(): Promise<void> | void;
}
type Target = { server: RedisServer; cluster: RedisCluster };

/** Each kind of client the store takes, on the Redis it is made for; its package's name, for withClients. */
const kinds = withClients<[string, ClientPackage, (t: Target) => Promise<Connection>]>(
  [
    [
      'ioredis',
      'ioredis',
      async (t) => ioredisClient(t.server.url).then((c) => ({ client: c, close: () => c.disconnect() })),
    ],
    [
      'node-redis',
      'node-redis',
      async (t) => {
        const client = createClient({ url: t.server.url });
        client.on('error', () => {});
        await client.connect();
        return { client, close: () => client.destroy() };
      },
    ],
    ['GLIDE', 'glide', async (t) => glideClient(t.server.url).then((c) => ({ client: c, close: () => c.close() }))],
    [
      'ioredis Cluster',
      'ioredis',
      async (t) => t.cluster.client().then((c) => ({ client: c, close: () => c.disconnect() })),
    ],
    [
      'node-redis cluster',
      'node-redis',
      async (t) => {
        const client = createCluster({ rootNodes: t.cluster.servers.map((s) => ({ url: s.url })) });
        client.on('error', () => {});
        await client.connect();
        return { client, close: () => client.destroy() };
      },
    ],
    [
      'GLIDE cluster',
      'glide',
      async (t) => t.cluster.glideClient().then((c) => ({ client: c, close: () => c.close() })),
    ],
  ],
  ([, kind]) => kind,
);

describeRedisServer('the Redis commands of each request, and what the store makes of a key it finds', () => {
  let target: Target;
  /** One connection per node of the server and of the Cluster, to look and to write as an operator would. */
  let nodes: { server: Redis[]; cluster: Redis[] };
  beforeAll(async () => {
    target = { server: await RedisServer.start(), cluster: await RedisCluster.start(3) };
    nodes = {
      server: [await ioredisClient(target.server.url)],
      cluster: await Promise.all(target.cluster.servers.map((s) => ioredisClient(s.url))),
    };
    // The hit scripts loaded everywhere, so that each of their runs is one command (EVALSHA).
    for (const node of [...nodes.server, ...nodes.cluster]) {
      await node.script('LOAD', SCRIPTS.hit);
      await node.script('LOAD', SCRIPTS.heal);
    }
  }, 60_000);
  afterAll(async () => {
    for (const node of [...(nodes?.server ?? []), ...(nodes?.cluster ?? [])]) node.disconnect();
    await target?.server.close();
    await target?.cluster.close();
  });

  /** The node that holds `key`: on a Cluster, the master of its slot, the one that does not answer MOVED. */
  const nodeOf = async (kind: string, key: string): Promise<Redis> => {
    if (!kind.includes('luster')) return nodes.server[0] as Redis;
    const owns = await Promise.all(
      nodes.cluster.map((n) =>
        n.exists(key).then(
          () => true,
          (error: Error) => !/MOVED/.test(error.message),
        ),
      ),
    );
    return nodes.cluster[owns.indexOf(true)] as Redis;
  };

  /**
   * The commands on the keys under `prefix` that Redis receives from now until `stop()`, as MONITOR shows them on
   * every node: a client's command by its name (`eval` for EVALSHA and EVAL alike), a command a script ran as `lua …`.
   * Read from `redis-cli monitor`: an ioredis monitor that starts while commands arrive takes the first lines for
   * replies to no command, and fails.
   */
  const watch = async (kind: string, prefix: string) => {
    const servers = kind.includes('luster') ? target.cluster.servers : [target.server];
    const seen: string[] = [];
    const marker = `end-${prefix}`;
    const watchers = await Promise.all(
      servers.map(async (server) => {
        const cli = spawn('redis-cli', ['-p', String(server.port), 'monitor'], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        const lines = createInterface({ input: cli.stdout });
        let ended = false;
        const started = new Promise((resolve, reject) => {
          cli.once('error', reject);
          lines.once('line', resolve); // MONITOR's OK
        });
        // `<time> [<db> <client address, or lua>] "<command>" "<argument>" ...`
        lines.on('line', (line) => {
          const source = /^\S+ \[\d+ ([^\]]+)\] /.exec(line)?.[1];
          const args = [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1] as string);
          const name = String(args[0]).toLowerCase();
          if (name === 'echo' && args[1] === marker) ended = true;
          const key = String(/^eval/.test(name) ? args[3] : args[1]);
          if (!source || !key.startsWith(`${prefix}:`) || key.includes('{runtime}')) return;
          seen.push(source === 'lua' ? `lua ${name}` : name.replace(/^evalsha$/, 'eval'));
        });
        await started;
        return { cli, server, ended: () => ended };
      }),
    );
    return async () => {
      for (const { server } of watchers) {
        const echo = await ioredisClient(server.url);
        await echo.echo(marker);
        echo.disconnect();
      }
      for (let i = 0; i < 1000 && !watchers.every((w) => w.ended()); i++) await new Promise((r) => setTimeout(r, 20));
      await Promise.all(
        watchers.map(({ cli }) => {
          const exited = once(cli, 'exit');
          cli.kill();
          return exited;
        }),
      );
      if (!watchers.every((w) => w.ended())) throw new Error('MONITOR did not show every command');
      return seen;
    };
  };

  /** An app counting in Redis through `connection`, and its requests' outcomes. */
  const serving = (connection: Connection, prefix: string) => {
    const app = createApp({
      listing: [row],
      options: { store: redisStore(connection.client, { prefix, ...counting }) },
    });
    const server: Server = app.listen(0, '127.0.0.1');
    const answer = () =>
      request(server)
        .get('/v1/things/1')
        .timeout(counting.timeoutMs + 5000);
    const get = () => answer().then((res) => `${res.status} ${res.headers['x-ratelimit-remaining'] ?? '-'}`);
    /** Its status, X-RateLimit-Remaining, X-RateLimit-Reset and X-RateLimit-Reset-After. */
    const window = () =>
      answer().then((res) =>
        [res.status, ...['remaining', 'reset', 'reset-after'].map((h) => res.headers[`x-ratelimit-${h}`])].join(' '),
      );
    const close = () => {
      app.locals.limiter.close();
      server.close();
    };
    /** The client's counter on the endpoint as the operators read it, without counting. */
    const usage = () => app.locals.limiter.usage({ ip: '127.0.0.1' }).then(([u]: { used: number }[]) => u);
    return { get, window, close, usage, limiter: app.locals.limiter as { reset(client: object): Promise<boolean> } };
  };

  /** Runs `body` with a fresh prefix and an app counting through one connection of `kind`, closing them after. */
  const withApp = async (
    kind: (typeof kinds)[number],
    body: (app: ReturnType<typeof serving>, prefix: string, node: Redis) => Promise<void>,
  ) => {
    const [name, , connect] = kind;
    const prefix = freshPrefix();
    const connection = await connect(target);
    const app = serving(connection, prefix);
    try {
      await body(app, prefix, await nodeOf(name, keyOf(prefix)));
    } finally {
      app.close();
      await connection.close();
    }
  };

  /** The client's key holds `count`, and ends within one window. */
  const expectWindow = async (node: Redis, prefix: string, count: string) => {
    expect(await node.get(keyOf(prefix))).toBe(count);
    const ttl = await node.pttl(keyOf(prefix));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(row.windowMs);
  };

  /** `count` requests one after the other: their outcomes, status and X-RateLimit-Remaining. */
  const inTurn = async (app: ReturnType<typeof serving>, count: number) => {
    const outcomes: string[] = [];
    for (let i = 0; i < count; i++) outcomes.push(await app.get());
    return outcomes;
  };

  it.each(kinds)(
    '%s: a window is read by one script (INCR, PTTL, its PEXPIRE), then each request is an INCR; a refused one nothing',
    async (...kind) => {
      await withApp(kind, async (app, prefix, node) => {
        const stop = await watch(kind[0], prefix);
        // The first begins the window, the third is refused by Redis, the next five by that refusal, remembered.
        const outcomes = await inTurn(app, 8);
        const commands = await stop();
        expect(outcomes).toEqual(['200 1', '200 0', ...Array(6).fill('429 0')]);
        expect(commands).toEqual(['eval', 'lua incr', 'lua pttl', 'lua pexpire', 'incr', 'incr']);
        await expectWindow(node, prefix, '3');
      });
    },
  );

  it.each(kinds)(
    '%s: a counter left without an expiry (a client stopped after its INCR) gets its window at the next request',
    async (...kind) => {
      await withApp(kind, async (app, prefix, node) => {
        await node.set(keyOf(prefix), '1');
        const stop = await watch(kind[0], prefix);
        expect(await inTurn(app, 2)).toEqual(['200 0', '429 0']);
        expect(await stop()).toEqual(['eval', 'lua incr', 'lua pttl', 'lua pexpire', 'incr']);
        await expectWindow(node, prefix, '3');
      });
    },
  );

  it.each(kinds)(
    '%s: a window being opened (its INCR run, its expiry on its way) is read as its count, never as none',
    async (...kind) => {
      await withApp(kind, async (app, prefix, node) => {
        // What a read finds between a window's first INCR and the expiry its script gives: a rule reading the count
        // then (the addresses' tokens) must see it, as the requests that follow it do.
        await node.set(keyOf(prefix), '2');
        expect(await app.usage()).toMatchObject({ endpoint: BUCKET, used: 2, remaining: 0 });
        expect(await node.pttl(keyOf(prefix))).toBe(-1);
        expect(await inTurn(app, 1)).toEqual(['429 0']);
      });
    },
  );

  /**
   * A window that another instance or process began, written as it would write it: `count` requests, ending in
   * `seconds` at the middle of a second, so that however long this instance waits for Redis, its end is in that second.
   * Answers the start of the answer that counts the next request: status, X-RateLimit-Remaining and -Reset.
   */
  /** The answer to the first request of a window this instance began: one counted, its whole minute to come. */
  const NEW_WINDOW = /^200 1 \d+ (60|59\.\d+)$/;
  const begun = async (node: Redis, prefix: string, count: number, seconds: number) => {
    const end = (Math.floor(Date.now() / 1000) + seconds) * 1000 + 500;
    await node.set(keyOf(prefix), String(count), 'PXAT', end);
    const reset = Math.ceil(end / 1000);
    return (status: number) => new RegExp(`^${status} 0 ${reset} [\\d.]+$`);
  };

  it.each(kinds)(
    '%s: a window another instance began is read once, its end exact; its next requests are an INCR each',
    async (...kind) => {
      await withApp(kind, async (app, prefix, node) => {
        const window = await begun(node, prefix, 1, 30);
        const stop = await watch(kind[0], prefix);
        const outcomes = [await app.window(), await app.window()];
        expect(await stop()).toEqual(['eval', 'lua incr', 'lua pttl', 'incr']);
        expect(outcomes[0]).toMatch(window(200));
        expect(outcomes[1]).toMatch(window(429));
      });
    },
  );

  it.each(kinds)(
    "%s: a window deleted behind the instance's back and begun anew is read again, its new end exact",
    async (...kind) => {
      await withApp(kind, async (app, prefix, node) => {
        const before = await begun(node, prefix, 1, 30);
        expect(await app.window()).toMatch(before(200));
        // Another process began a new window: an INCR not above the count this instance saw is a new window.
        await node.del(keyOf(prefix));
        const after = await begun(node, prefix, 1, 40);
        const stop = await watch(kind[0], prefix);
        expect(await app.window()).toMatch(after(200));
        // Deleted again, this instance's INCR begins the window: it gives it its expiry.
        await node.del(keyOf(prefix));
        expect(await app.window()).toMatch(NEW_WINDOW);
        const commands = await stop();
        expect(commands).toEqual(['incr', 'eval', 'lua pttl', 'del', 'incr', 'eval', 'lua pttl', 'lua pexpire']);
        await expectWindow(node, prefix, '1');
      });
    },
  );

  it.each(kinds)('%s: a window that ended in Redis is never extended by the end an instance knew', async (...kind) => {
    await withApp(kind, async (app, prefix, node) => {
      await node.set(keyOf(prefix), '1', 'PX', 1000);
      expect(await app.get()).toBe('200 0');
      for (let i = 0; i < 1000 && (await node.exists(keyOf(prefix))) === 1; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const stop = await watch(kind[0], prefix);
      expect(await app.window()).toMatch(NEW_WINDOW);
      expect(await stop()).toEqual(['eval', 'lua incr', 'lua pttl', 'lua pexpire']);
      await expectWindow(node, prefix, '1');
    });
  });

  it.each(kinds)(
    "%s: a reset from another instance makes this one read the next window's end, whoever began it",
    async (...kind) => {
      const [name, , connect] = kind;
      const prefix = freshPrefix();
      const connections = [await connect(target), await connect(target)];
      const [a, b] = connections.map((c) => serving(c, prefix)) as [
        ReturnType<typeof serving>,
        ReturnType<typeof serving>,
      ];
      try {
        const node = await nodeOf(name, keyOf(prefix));
        const before = await begun(node, prefix, 1, 30);
        expect(await b.window()).toMatch(before(200));
        expect(await b.window()).toMatch(before(429));
        expect(await a.limiter.reset({ ip: '127.0.0.1' })).toBe(true);
        // The new window, which instances other than b count past b's count (its INCR alone would find it above).
        const after = await begun(node, prefix, 3, 40);
        // b answers its refusal from memory, with no command, until the reset reaches it (within 250 ms).
        let answer = await b.window();
        for (let i = 0; i < 1000 && before(429).test(answer); i++) {
          await new Promise((resolve) => setTimeout(resolve, 20));
          answer = await b.window();
        }
        expect(answer).toMatch(after(429));
        expect(await node.get(keyOf(prefix))).toBe('4');
      } finally {
        for (const app of [a, b]) app.close();
        for (const connection of connections) await connection.close();
      }
    },
  );

  /** What another program may leave at a counter's key, and how it is written there. */
  const foreign: [string, (node: Redis, key: string) => Promise<unknown>][] = [
    ['a word', (node, key) => node.set(key, 'many')],
    ['a fraction', (node, key) => node.set(key, '1.5')],
    ['a count below zero', (node, key) => node.set(key, '-5', 'PX', 3_600_000)],
    ['the largest 64-bit integer', (node, key) => node.set(key, '9223372036854775807')],
    ['a list', (node, key) => node.rpush(key, '1')],
  ];

  describe.each(kinds)('%s: a key that holds no count', (...kind) => {
    it.each(foreign)(
      '%s: the request that finds it begins a new window, exactly; no 5xx, nothing left without an expiry',
      async (_what, write) => {
        await withApp(kind, async (app, prefix, node) => {
          await write(node, keyOf(prefix));
          const stop = await watch(kind[0], prefix);
          const outcomes = await inTurn(app, 3);
          const commands = await stop();
          expect(outcomes).toEqual(['200 1', '200 0', '429 0']);
          // Its INCR finds no count: the script counts it as the first of a new window.
          expect(commands).toEqual(['eval', 'lua incr', 'lua set', 'incr', 'incr']);
          await expectWindow(node, prefix, '3');
        });
      },
    );

    it.each(foreign)(
      '%s, written where this instance knows the window: its INCR fails, the script begins a new window, exactly',
      async (_what, write) => {
        await withApp(kind, async (app, prefix, node) => {
          expect(await app.get()).toBe('200 1');
          await node.del(keyOf(prefix));
          await write(node, keyOf(prefix));
          const stop = await watch(kind[0], prefix);
          const outcomes = await inTurn(app, 3);
          expect(await stop()).toEqual(['incr', 'eval', 'lua incr', 'lua set', 'incr', 'incr']);
          expect(outcomes).toEqual(['200 1', '200 0', '429 0']);
          await expectWindow(node, prefix, '3');
        });
      },
    );
  });

  /**
   * The endpoints counted by a script (a sliding window, several limits): what another program may leave at the key of
   * the first limit, and what the client's requests then count on each limit (the refusing limit's count is its
   * limit + 1).
   */
  const LIMITS = [
    { limit: 2, windowMs: 60_000 },
    { limit: 5, windowMs: 3_600_000 },
  ];
  const scripted: [string, 's' | 'f', (node: Redis, key: string) => Promise<unknown>, number[][]][] = [
    ['sliding: a word', 's', (node, key) => node.set(key, 'many'), [[1], [2], [3]]],
    ['sliding: a hash', 's', (node, key) => node.hset(key, 'a', '1'), [[1], [2], [3]]],
    ['sliding: a list of words', 's', (node, key) => node.rpush(key, 'then', 'now'), [[1], [2], [3]]],
    ['sliding: a list of times below zero', 's', (node, key) => node.rpush(key, '-5'), [[1], [2], [3]]],
    [
      'two limits: a word',
      'f',
      (node, key) => node.set(key, 'many'),
      [
        [1, 1],
        [2, 2],
        [3, 2],
      ],
    ],
    [
      'two limits: a fraction',
      'f',
      (node, key) => node.set(key, '1.5'),
      [
        [1, 1],
        [2, 2],
        [3, 2],
      ],
    ],
    [
      'two limits: a count below zero',
      'f',
      (node, key) => node.set(key, '-5', 'PX', 60_000),
      [
        [1, 1],
        [2, 2],
        [3, 2],
      ],
    ],
    [
      'two limits: the largest 64-bit integer',
      'f',
      (node, key) => node.set(key, '9223372036854775807'),
      [
        [1, 1],
        [2, 2],
        [3, 2],
      ],
    ],
    [
      'two limits: a list',
      'f',
      (node, key) => node.rpush(key, '1'),
      [
        [1, 1],
        [2, 2],
        [3, 2],
      ],
    ],
    // A count left without an expiry is a count: it is given its window.
    [
      'two limits: a count without an expiry',
      'f',
      (node, key) => node.set(key, '1'),
      [
        [2, 1],
        [3, 1],
        [3, 1],
      ],
    ],
  ];

  describe.each(kinds)('%s: the key of a limit counted by a script, holding what no instance writes', (...kind) => {
    it.each(scripted)(
      '%s: the requests that find it count exactly from a new window; no error, nothing left without an expiry',
      async (_what, window, write, counts) => {
        const [name, , connect] = kind;
        const prefix = freshPrefix();
        const connection = await connect(target);
        try {
          const store = redisStore(connection.client, { prefix, ...counting });
          const spec = { name: BUCKET, window: window === 's' ? 'sliding' : 'fixed', limits: LIMITS } as const;
          const limits = store.limits?.(window === 's' ? { ...spec, limits: LIMITS.slice(0, 1) } : spec);
          const counter = limits as unknown as { count(key: string): Promise<readonly { count: number }[]> };
          const keys = LIMITS.map((l) => `${prefix}:${BUCKET}:{k}:${window}${l.windowMs / 1000}`);
          const node = await nodeOf(name, keys[0] as string);
          await write(node, keys[0] as string);
          const answers: number[][] = [];
          for (let i = 0; i < 3; i++) answers.push((await counter.count('k')).map((c) => c.count));
          expect(answers).toEqual(counts);
          for (const [i, key] of keys.slice(0, counts[0]?.length).entries()) {
            expect(await node.type(key)).toBe(window === 's' ? 'list' : 'string');
            const ttl = await node.pttl(key);
            expect(ttl).toBeGreaterThan(0);
            expect(ttl).toBeLessThanOrEqual((LIMITS[i] as { windowMs: number }).windowMs);
          }
        } finally {
          await connection.close();
        }
      },
    );
  });

  it.each(kinds)(
    '%s: of simultaneous requests through two instances onto a key that holds no count, exactly the limit pass',
    async (...kind) => {
      const [, , connect] = kind;
      const prefix = freshPrefix();
      const connections = [await connect(target), await connect(target)];
      const apps = connections.map((c) => serving(c, prefix));
      try {
        const node = await nodeOf(kind[0], keyOf(prefix));
        await node.set(keyOf(prefix), 'many');
        const outcomes = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (apps[i % 2] as (typeof apps)[0]).get()),
        );
        expect(outcomes.filter((o) => o.startsWith('200'))).toHaveLength(LIMIT);
        expect(outcomes.filter((o) => o.startsWith('429'))).toHaveLength(20 - LIMIT);
        // Every request that reached Redis was counted once on the repaired key (those refused by a remembered
        // refusal never reached it), and the key has its window.
        expect(Number(await node.get(keyOf(prefix)))).toBeGreaterThan(LIMIT);
        expect(Number(await node.get(keyOf(prefix)))).toBeLessThanOrEqual(20);
        expect(await node.pttl(keyOf(prefix))).toBeGreaterThan(0);
      } finally {
        for (const app of apps) app.close();
        for (const connection of connections) await connection.close();
      }
    },
  );

  it.each(kinds)(
    "%s: the counter is rate-limiter-flexible's RateLimiterRedis': an app's own limiter on the key sees it, and the store its own",
    async (...kind) => {
      await withApp(kind, async (app, prefix) => {
        const storeClient = kind[0].includes('luster')
          ? await target.cluster.client()
          : await ioredisClient(target.server.url);
        try {
          // Made by the app itself, as rate-limiter-flexible documents it: its keys are `<keyPrefix>:<key>`.
          const own = new RateLimiterRedis({
            storeClient,
            keyPrefix: `${prefix}:${BUCKET}`,
            points: LIMIT,
            duration: 60,
          });
          expect(await app.get()).toBe('200 1');
          const read = await own.get('ip:127.0.0.1');
          expect(read?.consumedPoints).toBe(1);
          expect(read?.msBeforeNext).toBeGreaterThan(0);
          expect(read?.msBeforeNext).toBeLessThanOrEqual(row.windowMs);
          expect((await own.consume('ip:127.0.0.1')).consumedPoints).toBe(2);
          expect(await app.get()).toBe('429 0');
          expect((await own.get('ip:127.0.0.1'))?.consumedPoints).toBe(3);
        } finally {
          storeClient.disconnect();
        }
      });
    },
  );

  it('ioredis: an instance remembers 10,000 windows at the most: past them, a new window takes the oldest place', async () => {
    const prefix = freshPrefix();
    const client = await ioredisClient(target.server.url);
    try {
      const store = redisStore(client, { prefix, ...counting });
      const fixed = store({ name: 'GET /x', limit: 3, windowMs: 60_000 }) as unknown as {
        hit(key: string): Promise<readonly { count: number }[]>;
      };
      // An attacker's keys, each counted once: the windows remembered stop growing at 10,000.
      for (let i = 0; i < 10_000; i += 1000) {
        await Promise.all(Array.from({ length: 1000 }, (_, j) => fixed.hit(`k${i + j}`)));
      }
      const stop = await watch('ioredis', prefix);
      const counts = [await fixed.hit('new'), await fixed.hit('new'), await fixed.hit('k0')].map((a) => a[0]?.count);
      expect(counts).toEqual([1, 2, 2]);
      // The oldest, k0's, is read whole again.
      expect(await stop()).toEqual([
        'eval',
        'lua incr',
        'lua pttl',
        'lua pexpire',
        'incr',
        'eval',
        'lua incr',
        'lua pttl',
      ]);
    } finally {
      client.disconnect();
    }
  });

  it("ioredis: one turn's commands leave in one write, in the order asked, the app's own among them", async () => {
    const prefix = freshPrefix();
    const client = await ioredisClient(target.server.url);
    const stream = client.stream as Socket;
    const writes: number[] = []; // chunks per system call: write() one, writev() as many as it sends
    const { _write: write, _writev: writev } = stream as unknown as Record<string, (...args: unknown[]) => void>;
    Object.assign(stream, {
      _write(...args: unknown[]) {
        writes.push(1);
        return write?.apply(stream, args);
      },
      _writev(chunks: unknown[], ...rest: unknown[]) {
        writes.push(chunks.length);
        return writev?.apply(stream, [chunks, ...rest]);
      },
    });
    try {
      const store = redisStore(client, { prefix, ...counting });
      type Counts = { hit(key: string): Promise<readonly { count: number }[]> };
      const fixed = store({ name: 'GET /x', limit: 3, windowMs: 60_000 }) as unknown as Counts;
      const limits = { name: 'GET /y', window: 'sliding', limits: [{ limit: 3, windowMs: 60_000 }] } as const;
      const sliding = store.limits?.(limits) as unknown as Counts;
      // Scripts loaded, the store's first reads done and the fixed window of `k` begun (its key given its expiry),
      // so that only the commands below are written.
      await Promise.all([fixed.hit('warm'), sliding.hit('warm'), client.ping()]);
      await fixed.hit('k');
      await client.ping();
      writes.length = 0;
      const asked = [
        fixed.hit('k'),
        sliding.hit('k'),
        client.incr(`${prefix}:own`),
        fixed.hit('k'),
        sliding.hit('k'),
        fixed.hit('k'),
      ];
      expect(stream.writableCorked).toBe(1);
      const answers = await Promise.all(asked);
      const count = (a: number | readonly { count: number }[]) => (typeof a === 'number' ? a : a[0]?.count);
      expect(answers.map(count)).toEqual([2, 1, 1, 3, 2, 4]);
      // A count is one script: 3 counts, 2 sliding counts and the app's own command in one write.
      expect(writes).toEqual([6]);
      expect(stream.writableCorked).toBe(0);
      // The next turn's commands leave at once after their own turn, not held for another.
      expect(await fixed.hit('k')).toMatchObject([{ count: 5 }]);
      expect(writes).toEqual([6, 1]);
      expect(stream.writableCorked).toBe(0);
    } finally {
      client.disconnect();
    }
  });

  (withClients(['glide'] as const, (kind) => kind).length > 0 ? it : it.skip)(
    "GLIDE: one turn's commands leave as one batch, in the order asked, each answered as alone",
    async () => {
      const prefix = freshPrefix();
      const client = await glideClient(target.server.url);
      const batches: number[] = []; // commands per exec
      const exec = client.exec.bind(client);
      type Exec = typeof exec;
      client.exec = (batch: Parameters<Exec>[0], raiseOnError: boolean, options?: Parameters<Exec>[2]) => {
        // The batch's commands, which GLIDE keeps as `commands` (not in its types).
        batches.push((batch as unknown as { commands: unknown[] }).commands.length);
        return exec(batch, raiseOnError, options);
      };
      try {
        const store = redisStore(client, { prefix, ...counting });
        type Counts = { hit(key: string): Promise<readonly { count: number }[]> };
        const fixed = store({ name: 'GET /x', limit: 3, windowMs: 60_000 }) as unknown as Counts;
        const limits = { name: 'GET /y', window: 'sliding', limits: [{ limit: 3, windowMs: 60_000 }] } as const;
        const sliding = store.limits?.(limits) as unknown as Counts;
        // Scripts loaded and the fixed window of `k` begun, so that only the commands below are sent.
        await Promise.all([fixed.hit('k'), sliding.hit('warm')]);
        batches.length = 0;
        const answers = await Promise.all([fixed.hit('k'), sliding.hit('k'), fixed.hit('k'), fixed.hit('k')]);
        const count = (a: readonly { count: number }[]) => a[0]?.count;
        expect(answers.map(count)).toEqual([2, 1, 3, 4]);
        // Four counts, one script each: one batch.
        expect(batches).toEqual([4]);
        // A command that fails fails alone: a script Redis cannot run (a limit that is no number), the next one counts.
        const unreadable = { ...limits, limits: [{ limit: 'many' as unknown as number, windowMs: 60_000 }] };
        const broken = store.limits?.(unreadable) as unknown as Counts;
        batches.length = 0;
        const [failed, next] = await Promise.allSettled([broken.hit('bad'), fixed.hit('k')]);
        expect(failed).toMatchObject({
          status: 'rejected',
          reason: expect.objectContaining({ message: expect.stringMatching(/compare|nil/) }),
        });
        expect(next).toMatchObject({ status: 'fulfilled', value: [{ count: 5 }] });
        expect(batches).toEqual([2]);
      } finally {
        client.close();
      }
    },
  );

  it('ioredis: commands held for one write when the connection drops are answered or fail; the next are counted', async () => {
    const prefix = freshPrefix();
    const client = await ioredisClient(target.server.url);
    const app = serving({ client, close: () => client.disconnect() }, prefix);
    try {
      const fixed = redisStore(client, { prefix, ...counting })({ name: BUCKET, limit: 2, windowMs: 60_000 });
      const counts = fixed as unknown as { hit(key: string): Promise<{ count: number }[]> };
      const held = [counts.hit('ip:127.0.0.1'), counts.hit('ip:127.0.0.1')];
      client.stream.destroy(); // before the turn ends: the held commands have not left
      // ioredis sends a dropped connection's commands again once it has reconnected, or rejects them: none hangs,
      // and those answered are counted once each, in order.
      const settled = await Promise.allSettled(held);
      const answered = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value[0]?.count] : []));
      expect(answered).toEqual([1, 2].slice(0, answered.length));
      await until(() => client.status === 'ready', 'ioredis has reconnected');
      expect(await app.get()).toBe(['200 1', '200 0', '429 0'][answered.length]);
      expect(await (nodes.server[0] as Redis).get(`${prefix}:${BUCKET}:ip:127.0.0.1`)).toBe(
        String(answered.length + 1),
      );
    } finally {
      app.close();
      client.disconnect();
    }
  });
});
