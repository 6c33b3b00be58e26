// The Redis store: counters shared by every app instance, a bounded wait, and a chosen fallback while Redis fails.
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { Checker, show } from './check.js';
import type { Store, StoreFailurePolicy } from './stores.js';

/**
 * An ioredis `Redis` or `Cluster` client, or a node-redis (v4 or later) client. Typed loosely, so that neither
 * package is needed to compile: the package loads neither, it only uses the client it is given.
 */
export interface RedisClient {
  eval(...args: never[]): unknown;
}

/** What a request gets when Redis cannot count it: see {@link RedisStoreOptions.onFailure}. */
export type RedisFailureMode = StoreFailurePolicy['onFailure'];

/** Options of {@link redisStore}. */
export interface RedisStoreOptions {
  /**
   * Namespace of every key, `<prefix>:<counter name>:<client key>`. Apps (and the two listings) that share one
   * Redis need one prefix each, or they share counters. Default: `'listing-limits'`.
   */
  prefix?: string;
  /**
   * Longest wait for Redis, in milliseconds, of one whole request (every Redis call it makes): a request that Redis
   * has not answered by then is handled as `onFailure` says. Default: `200`.
   */
  timeoutMs?: number;
  /**
   * What a request gets while Redis is down, unreachable or slower than `timeoutMs`:
   * `'memory'` counts it in this process's memory (the limits hold per instance until Redis is back),
   * `'open'` lets it through uncounted and without rate-limit headers,
   * `'closed'` answers `503` with a JSON body. Default: `'memory'`.
   */
  onFailure?: RedisFailureMode;
}

const optionNames = ['prefix', 'timeoutMs', 'onFailure'] as const;
const failureModes: readonly RedisFailureMode[] = ['memory', 'open', 'closed'];
const check: Checker = new Checker('redisStore');

/** Whether the client is node-redis, which rate-limiter-flexible must be told; ioredis is the other kind it takes. */
function isNodeRedis(client: unknown): boolean {
  if (typeof client === 'function') {
    check.invalid(
      'client',
      `is ${show(client)}, not a client: pass a connected instance, e.g. \`redisStore(new Redis(url))\`.`,
    );
  }
  const c = client as Record<string, unknown> | null;
  if (typeof c === 'object' && c !== null) {
    if (typeof c.defineCommand === 'function') return false;
    if (typeof c.isOpen === 'boolean' && typeof c.eval === 'function') {
      const listeners = c.listenerCount as ((event: string) => number) | undefined;
      if (typeof listeners === 'function' && listeners.call(c, 'error') === 0) {
        check.invalid(
          'client',
          "has no 'error' listener: node-redis would crash the process when Redis goes away. " +
            "Add client.on('error', ...) before calling redisStore().",
        );
      }
      return true;
    }
  }
  const got = typeof client === 'object' && client !== null ? 'an object that is neither' : show(client);
  return check.invalid(
    'client',
    `must be an ioredis client or Cluster, or a node-redis (v4 or later) client; got ${got}.`,
  );
}

function checkOptions(options: unknown): Required<RedisStoreOptions> {
  const o = check.options(options, 'options', '{ prefix, timeoutMs, onFailure }');
  check.unknownKeys(o, optionNames, (key) => `options.${key}`);
  const { prefix = 'listing-limits', timeoutMs = 200, onFailure = 'memory' } = o as RedisStoreOptions;
  if (typeof prefix !== 'string' || prefix === '')
    check.invalid('options.prefix', `must be a non-empty string; got ${show(prefix)}.`);
  // Beyond 2^31 - 1 ms, Node fires a timer at once: the limit of a timeout that works.
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > 2 ** 31 - 1) {
    check.invalid(
      'options.timeoutMs',
      `must be a positive whole number of milliseconds (at most 2147483647); got ${show(timeoutMs)}.`,
    );
  }
  return { prefix, timeoutMs, onFailure: check.oneOf(onFailure, failureModes, 'options.onFailure') };
}

/**
 * A store that counts in Redis, so that every app instance shares each counter. One atomic round trip per
 * counted request (rate-limiter-flexible's Lua script); keys are `<prefix>:<counter name>:<client key>`, where
 * the client key is a hash of the Authorization value or the client IP, never the credential itself.
 * No request waits for Redis longer than `timeoutMs`, all its Redis calls together; while Redis fails, requests
 * are handled as `onFailure` says, and counting returns to Redis by itself once the client has reconnected.
 *
 * The client is yours to create, connect and close; give it an `'error'` listener, as both Redis packages ask
 * (a node-redis client without one is refused, since it would crash the process when Redis goes away).
 */
export function redisStore(client: RedisClient, options?: RedisStoreOptions): Store {
  const useRedisPackage = isNodeRedis(client);
  const { prefix, timeoutMs, onFailure } = checkOptions(options);
  const store = (counter: Parameters<Store>[0]) =>
    new RateLimiterRedis({
      storeClient: client,
      useRedisPackage,
      // While the client is reconnecting, fail at once instead of queueing commands that would only time out.
      rejectIfRedisNotReady: true,
      keyPrefix: `${prefix}:${counter.name}`,
      points: counter.limit,
      duration: counter.windowMs / 1000,
    });
  return Object.assign(store, { failure: { timeoutMs, onFailure } });
}
