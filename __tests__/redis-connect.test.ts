// A Redis store whose client never connects is no silent mistake: a few seconds after the middleware starts, a process
// warning and onError say so, once per client, for ioredis, node-redis and GLIDE; a client that connects in time, or a
// middleware closed before, says nothing. In real time, against a real redis-server and a port nobody listens on.
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import type * as Glide from '@valkey/valkey-glide';
import Redis from 'ioredis';
import { createClient } from 'redis';
import { ListingLimitsWarning, type ListingLimitsMiddleware, listingLimits, redisStore } from '../lib';
import { CONNECT_WITHIN_MS } from '../lib/stores/redis/connected';
import { describeRedisServer, glideClient, ioredisClient, RedisServer } from './helpers/redis';
import { withClients } from './helpers/redis-env';

/** A port of 127.0.0.1 that nothing listens on: taken from the system, then let go. */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

const glide = () => createRequire(__filename)('@valkey/valkey-glide') as typeof Glide;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const never = (what: string, prefix: string, onFailure: string) =>
  `listing-limits: the Redis store's client (${what}, prefix "${prefix}") has not connected within 5 s of the ` +
  `middleware's start (${onFailure}`;

interface Case {
  /** The client package, as the tests name them. */
  readonly kind: 'ioredis' | 'node-redis' | 'glide';
  /** A client that never connects, and what the warning says of it. */
  readonly never: (port: number) => Promise<{ client: object; close: () => unknown }>;
  readonly says: RegExp;
  /** A client that connects, in time. */
  readonly connects: (url: string) => Promise<{ client: object; close: () => unknown }>;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const cases = withClients<Case>(
  [
    {
      kind: 'ioredis',
      never: async (port) => {
        const client = new Redis(port, '127.0.0.1', { retryStrategy: () => 50 });
        client.on('error', () => {});
        return { client, close: () => client.disconnect() };
      },
      says: new RegExp(
        `^${escape(never('ioredis', 'never-ioredis', 'its status is "'))}(?:re)?connecting"\\)\\. Until it does, ` +
          `${escape("each instance counts in its own memory (onFailure: 'memory'), so that N instances let a client through up to N times the limits. Check its address, and that Redis is reachable from here.")}$`,
      ),
      connects: async (url) => {
        const client = await ioredisClient(url);
        return { client, close: () => client.disconnect() };
      },
    },
    {
      kind: 'node-redis',
      // Created and given its 'error' listener, never `connect()`ed.
      never: async (port) => {
        const client = createClient({ url: `redis://127.0.0.1:${port}` });
        client.on('error', () => {});
        return { client, close: () => undefined };
      },
      says: new RegExp(
        `^${escape(
          never(
            'node-redis',
            'never-node-redis',
            'it is not open: call `await client.connect()` before the app takes traffic',
          ) +
            "). Until it does, requests pass uncounted (onFailure: 'open'). Check its address, and that Redis is reachable from here.",
        )}$`,
      ),
      // Connected a second after the middleware starts, as an app that connects while it sets up would.
      connects: async (url) => {
        const client = createClient({ url });
        client.on('error', () => {});
        setTimeout(() => void client.connect(), 1000);
        return { client, close: () => client.destroy() };
      },
    },
    {
      kind: 'glide',
      // GLIDE connects when it is created, unless told to wait for its first command: then a port nobody listens on.
      never: async (port) => {
        const { GlideClient, Logger } = glide();
        Logger.setLoggerConfig('off');
        const client = await GlideClient.createClient({
          addresses: [{ host: '127.0.0.1', port }],
          lazyConnect: true,
          requestTimeout: 2000,
        });
        return { client, close: () => client.close() };
      },
      says: new RegExp(
        `^${escape(
          never('Valkey GLIDE', 'never-glide', 'it has not answered a PING') +
            "). Until it does, requests are answered 503 (onFailure: 'closed'). Check its address, and that Redis is reachable from here.",
        )}$`,
      ),
      connects: async (url) => {
        const client = await glideClient(url);
        return { client, close: () => client.close() };
      },
    },
  ],
  (c) => c.kind,
);

const onFailures = { ioredis: 'memory', 'node-redis': 'open', glide: 'closed' } as const;

describeRedisServer("a Redis store's client that does not connect", () => {
  let redis: RedisServer;
  const closing: (() => unknown)[] = [];
  let emitWarning: jest.SpyInstance;
  beforeAll(async () => {
    redis = await RedisServer.start();
  }, 30_000);
  beforeEach(() => {
    emitWarning = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  });
  afterEach(async () => {
    emitWarning.mockRestore();
    for (const close of closing.splice(0).reverse()) await close();
  });
  afterAll(() => redis?.close());

  const middleware = (client: object, prefix: string, onFailure: 'memory' | 'open' | 'closed', onError = jest.fn()) => {
    const limits: ListingLimitsMiddleware = listingLimits('B', {
      store: redisStore(client as never, { prefix, onFailure }),
      onError,
    });
    closing.push(() => limits.close());
    return { limits, onError };
  };

  /** The store warnings emitted so far, as their messages. */
  const warned = () =>
    emitWarning.mock.calls
      .filter(
        ([, options]) => (options as { code?: string } | undefined)?.code === 'LISTING_LIMITS_STORE_NOT_CONNECTED',
      )
      .map(([message]) => message as string);

  it(
    'ioredis at a closed port, node-redis never connected, GLIDE unreachable: each told once, by a warning and ' +
      'onError; clients that connect, and a middleware closed in time, tell nothing',
    async () => {
      const port = await closedPort();
      const told: { kind: string; says: RegExp; onError: jest.Mock }[] = [];
      const quiet: jest.Mock[] = [];
      for (const c of cases) {
        const good = await c.connects(redis.url);
        closing.push(good.close);
        quiet.push(middleware(good.client, `good-${c.kind}`, 'memory').onError);
        const bad = await c.never(port);
        closing.push(bad.close);
        // Closed before its time is up: nothing, although its client never connects.
        middleware(bad.client, `closed-${c.kind}`, 'memory').limits.close();
        // Two middlewares on one client: told once.
        const { onError } = middleware(bad.client, `never-${c.kind}`, onFailures[c.kind]);
        told.push({ kind: c.kind, says: c.says, onError });
        quiet.push(middleware(bad.client, `never-${c.kind}-again`, 'memory').onError);
      }
      const started = Date.now();
      while (warned().length < told.length && Date.now() - started < 3 * CONNECT_WITHIN_MS) await sleep(100);
      // Long enough for any other warning to come, and for the connected clients' watch to have ended.
      await sleep(500);
      expect(Date.now() - started).toBeGreaterThanOrEqual(CONNECT_WITHIN_MS - 1000);
      const messages = warned();
      expect(messages).toHaveLength(told.length);
      for (const { kind, says, onError } of told) {
        expect([kind, messages.filter((m) => says.test(m)).length]).toEqual([kind, 1]);
        expect(onError.mock.calls).toEqual([[expect.any(ListingLimitsWarning), undefined]]);
        const [warning] = onError.mock.calls[0] as [ListingLimitsWarning];
        expect([warning.code, says.test(warning.message)]).toEqual(['LISTING_LIMITS_STORE_NOT_CONNECTED', true]);
      }
      for (const onError of quiet) expect(onError).not.toHaveBeenCalled();
    },
    30_000,
  );
});
