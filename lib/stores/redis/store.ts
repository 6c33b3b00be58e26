// The Redis store: counters shared by every app instance, a bounded wait, and a chosen fallback while Redis fails.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { peekOf } from '../rlf.js';
import type { CounterSpec, CountsLimitsAsync, LimitsSpec, Store, StoreFailurePolicy } from '../store.js';
import { type Counter, storeWith } from '../counter.js';
import { check, connectionOf, countsOf, hitsOf, type RedisConnection } from './clients.js';
import { connectionWatch } from './connected.js';
import { redisState } from './state.js';
import { checkFailureOptions } from '../failure-options.js';

/**
 * An ioredis (or iovalkey) `Redis` or `Cluster`, a node-redis (v4 or later) client or cluster, or a Valkey GLIDE
 * `GlideClient` or `GlideClusterClient`; typed loosely, as the package loads none of them.
 */
export type RedisClient = { eval(...args: never[]): unknown } | { customCommand(...args: never[]): unknown };

/** What a request gets when Redis cannot count it: see {@link RedisStoreOptions.onFailure}. */
export type RedisFailureMode = StoreFailurePolicy['onFailure'];

/** Options of {@link redisStore}. */
export interface RedisStoreOptions {
  /**
   * Namespace of every key: apps (and listings) sharing one Redis need one prefix each. Default: `'listing-limits'`.
   */
  prefix?: string;
  /**
   * Longest wait (ms) of one whole request for Redis, counted while this process is idle (at most 5 × `timeoutMs`);
   * then `onFailure` applies. Default: `200`.
   */
  timeoutMs?: number;
  /**
   * What a request gets while Redis fails or is slower than `timeoutMs`: `'memory'` counts it in this process,
   * `'open'` lets it through uncounted and without headers, `'closed'` answers `503`. Default: `'memory'`.
   */
  onFailure?: RedisFailureMode;
  /**
   * Longest wait (ms) of an operator's call (`ban()`, `usage()`, a page's load): then it rejects with
   * `ERR_STORE_UNAVAILABLE` and changes nothing. Default: `2000`.
   */
  callTimeoutMs?: number;
  /**
   * How often (ms) each instance adds the requests it counted to Redis, in one script call, so that `traffic()` and
   * the operator's page show every instance's. Default: `5000`.
   */
  trafficIntervalMs?: number;
}

/**
 * The store's counters. A fixed window's is rate-limiter-flexible's limiter, whose hits are the store's own (`hitsOf`)
 * on its keys. An endpoint's limits count by one `limits` script a request, on `<prefix>:<name>:{<client
 * key>}:<s|f><seconds>`, the client key a hash tag so that a Cluster keeps a request's keys on one slot.
 */
function redisCounters(connection: RedisConnection, prefix: string) {
  const { route, script } = connection;
  const hits = hitsOf(connection);
  const [count, peek, forget] = [script('limits', true), script('peek', true), script('forget', true)];
  const limiter = ({ name, limit, windowMs }: CounterSpec): RateLimiterAbstract & Counter => {
    const made = connection.limiter({ keyPrefix: `${prefix}:${name}`, points: limit, duration: windowMs / 1000 });
    // Windows are kept by client key, each with its Redis key: a request makes no key of its own.
    const windows = hits(windowMs, (key) => made.getKey(key));
    const forgetWindow = (key: string) => windows.forget(key);
    return Object.assign(made, {
      now: false,
      reads: true,
      route: route && ((key: string) => route(made.getKey(key))),
      hit: (key: string) => windows.hit(key),
      forget: forgetWindow,
      peek: (key: string) => peekOf(made, key),
      reset: (key: string) => {
        forgetWindow(key);
        return made.delete(key);
      },
    });
  };
  const limits = (spec: LimitsSpec): CountsLimitsAsync & Counter => {
    const kind = spec.window === 'sliding' ? 's' : 'f';
    const head = `${prefix}:${spec.name}:{`;
    const suffixes = spec.limits.map(({ windowMs }) => `}:${kind}${windowMs / 1000}`);
    const args = [kind, ...spec.limits.flatMap(({ limit, windowMs }) => [String(limit), String(windowMs)])];
    const keys = (key: string) => suffixes.map((suffix) => head + key + suffix);
    const windows = spec.limits.map(({ windowMs }) => windowMs);
    const hit = (key: string) => count(keys(key), args).then((answer) => countsOf(answer, windows));
    return {
      countsAsync: true,
      now: false,
      reads: true,
      // Every key of a request is on one slot (its client key's hash tag): its first key's.
      route: route && ((key) => route(head + key + (suffixes[0] as string))),
      count: hit,
      hit,
      peek: (key) => peek(keys(key), args).then((answer) => countsOf(answer, windows, true)),
      reset: (key) => forget(keys(key), []).then((deleted) => Number(deleted) > 0),
    };
  };
  return { limiter, limits };
}

/**
 * A store that counts in Redis, shared by every instance: one `INCR` per request once an instance knows the window,
 * none for a client already refused in it. A request waits at most `timeoutMs`; while Redis fails, `onFailure`
 * applies. The client is yours to create, connect and close; give ioredis and node-redis clients an `'error'` listener.
 */
export function redisStore(client: RedisClient, options?: RedisStoreOptions): Store {
  const connection = connectionOf(client);
  const checked = checkFailureOptions(check, options, 'listing-limits', ['trafficIntervalMs']);
  const { prefix, timeoutMs, onFailure, callTimeoutMs } = checked;
  const { trafficIntervalMs = 5000 } = checked.options;
  check.whole(trafficIntervalMs, 'options.trafficIntervalMs', { unit: 'milliseconds', least: 10, most: 60_000 });
  const { limiter, limits } = redisCounters(connection, prefix);
  const state = redisState(connection, prefix, trafficIntervalMs as number);
  const watchConnection = connectionWatch(connection, prefix, onFailure);
  return storeWith({ state, failure: { timeoutMs, onFailure, callTimeoutMs }, watchConnection }, limiter, limits);
}
