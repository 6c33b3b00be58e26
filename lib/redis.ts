// The Redis store: counters shared by every app instance, a bounded wait, and a chosen fallback while Redis fails.
import { closest } from 'fastest-levenshtein';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
  RLWrapperTimeouts,
} from 'rate-limiter-flexible';
import { ListingLimitsError, type StoreFailureMode, StoreUnavailableError } from './errors.js';
import type { Store } from './stores.js';

/**
 * An ioredis `Redis` or `Cluster` client, or a node-redis (v4 or later) client. Typed loosely, so that neither
 * package is needed to compile: the package loads neither, it only uses the client it is given.
 */
export interface RedisClient {
  eval(...args: never[]): unknown;
}

/** What a request gets when Redis cannot count it: see {@link RedisStoreOptions.onFailure}. */
export type RedisFailureMode = 'memory' | StoreFailureMode;

/** Options of {@link redisStore}. */
export interface RedisStoreOptions {
  /**
   * Namespace of every key, `<prefix>:<endpoint name>:<client key>`. Apps (and the two listings) that share one
   * Redis need one prefix each, or they share counters. Default: `'listing-limits'`.
   */
  prefix?: string;
  /**
   * Longest wait for Redis, in milliseconds: a request that Redis has not counted by then is handled as
   * `onFailure` says. Default: `200`.
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

function invalid(field: string, message: string): never {
  throw new ListingLimitsError('ERR_INVALID_OPTION', field, message, 'redisStore');
}

/** Whether the client is node-redis, which rate-limiter-flexible must be told; ioredis is the other kind it takes. */
function isNodeRedis(client: unknown): boolean {
  const c = client as Record<string, unknown> | null;
  if (typeof c === 'object' && c !== null) {
    if (typeof c.defineCommand === 'function') return false;
    if (typeof c.isOpen === 'boolean' && typeof c.eval === 'function') {
      const listeners = c.listenerCount as ((event: string) => number) | undefined;
      if (typeof listeners === 'function' && listeners.call(c, 'error') === 0) {
        invalid(
          'client',
          "has no 'error' listener: node-redis would crash the process when Redis goes away. " +
            "Add client.on('error', ...) before calling redisStore().",
        );
      }
      return true;
    }
  }
  const got = typeof client === 'object' && client !== null ? 'an object that is neither' : String(client);
  return invalid('client', `must be an ioredis client or Cluster, or a node-redis (v4 or later) client; got ${got}.`);
}

function checkOptions(options: unknown): Required<RedisStoreOptions> {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null) invalid('options', 'must be an object.');
  for (const key of Object.keys(options)) {
    if (!(optionNames as readonly string[]).includes(key)) {
      throw new ListingLimitsError(
        'ERR_UNKNOWN_OPTION',
        `options.${key}`,
        `is not an option. Did you mean \`${closest(key, [...optionNames])}\`?`,
        'redisStore',
      );
    }
  }
  const { prefix = 'listing-limits', timeoutMs = 200, onFailure = 'memory' } = options as RedisStoreOptions;
  if (typeof prefix !== 'string' || prefix === '') {
    invalid('options.prefix', `must be a non-empty string; got ${JSON.stringify(prefix)}.`);
  }
  // Beyond 2^31 - 1 ms, Node fires a timer at once: the limit of a timeout that works.
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0 || timeoutMs > 2 ** 31 - 1) {
    invalid(
      'options.timeoutMs',
      `must be a positive whole number of milliseconds (at most 2147483647); got ${String(timeoutMs)}.`,
    );
  }
  if (!failureModes.includes(onFailure)) {
    invalid('options.onFailure', `must be "memory", "open" or "closed"; got ${JSON.stringify(onFailure)}.`);
  }
  return { prefix, timeoutMs, onFailure };
}

/** rate-limiter-flexible's timeout wrapper; failing open or closed, a store failure becomes a StoreUnavailableError. */
class RedisLimiter extends RLWrapperTimeouts {
  constructor(
    private readonly mode: RedisFailureMode,
    options: ConstructorParameters<typeof RLWrapperTimeouts>[0],
  ) {
    super(options);
  }

  override consume(...args: Parameters<RateLimiterAbstract['consume']>): Promise<RateLimiterRes> {
    return super.consume(...args).catch((rejection: unknown) => {
      if (this.mode === 'memory' || rejection instanceof RateLimiterRes) throw rejection;
      throw new StoreUnavailableError(this.mode, { cause: rejection });
    });
  }
}

/**
 * A store that counts in Redis, so that every app instance shares each counter. One atomic round trip per
 * counted request (rate-limiter-flexible's Lua script); keys are `<prefix>:<endpoint name>:<client key>`, where
 * the client key is a hash of the Authorization value or the client IP, never the credential itself.
 * No request waits for Redis longer than `timeoutMs`; while Redis fails, requests are handled as `onFailure`
 * says, and counting returns to Redis by itself once the client has reconnected.
 *
 * The client is yours to create, connect and close; give it an `'error'` listener, as both Redis packages ask
 * (a node-redis client without one is refused, since it would crash the process when Redis goes away).
 */
export function redisStore(client: RedisClient, options?: RedisStoreOptions): Store {
  const useRedisPackage = isNodeRedis(client);
  const { prefix, timeoutMs, onFailure } = checkOptions(options);
  return (endpoint) => {
    const points = endpoint.limit;
    const duration = endpoint.windowMs / 1000;
    const redis = new RateLimiterRedis({
      storeClient: client,
      useRedisPackage,
      // While the client is reconnecting, fail at once instead of queueing commands that would only time out.
      rejectIfRedisNotReady: true,
      keyPrefix: `${prefix}:${endpoint.name}`,
      points,
      duration,
    });
    const insuranceLimiter = onFailure === 'memory' ? new RateLimiterMemory({ points, duration }) : undefined;
    return new RedisLimiter(onFailure, { limiter: redis, timeoutMs, insuranceLimiter });
  };
}
