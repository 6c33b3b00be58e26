// The Redis store: counters shared by every app instance, a bounded wait, and a chosen fallback while Redis fails.
import { type RateLimiterAbstract, RateLimiterRedis } from 'rate-limiter-flexible';
import { MAX_TIMER_MS, show } from '../../shared/check.js';
import { peekOf } from '../rlf.js';
import { GlideLimiter } from './glide.js';
import type { Count, CounterSpec, CountsLimitsAsync, LimitsSpec, Store, StoreFailurePolicy } from '../store.js';
import { type Counter, type Counts, storeWith } from '../counter.js';
import {
  check,
  type Hit,
  type LimitsScripts,
  kindOf,
  hitsOf,
  commandsOf,
  limitsScriptsOf,
  msLeftOf,
} from './clients.js';
import { connectionWatch } from './connected.js';
import { redisState } from './state.js';
import { routesOf } from './routes.js';
import { DEFAULT_CALL_TIMEOUT_MS } from '../call-bound.js';

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
}

const optionNames = ['prefix', 'timeoutMs', 'onFailure', 'callTimeoutMs'] as const;
const failureModes: readonly RedisFailureMode[] = ['memory', 'open', 'closed'];

function checkOptions(options: unknown): Required<RedisStoreOptions> {
  const o = check.options(options, 'options', '{ prefix, timeoutMs, onFailure, callTimeoutMs }');
  check.unknownKeys(o, optionNames, (key) => `options.${key}`);
  const {
    prefix = 'listing-limits',
    timeoutMs = 200,
    onFailure = 'memory',
    callTimeoutMs = DEFAULT_CALL_TIMEOUT_MS,
  } = o as RedisStoreOptions;
  if (typeof prefix !== 'string' || prefix === '')
    check.invalid('options.prefix', `must be a non-empty string; got ${show(prefix)}.`);
  for (const [field, ms] of [
    ['timeoutMs', timeoutMs],
    ['callTimeoutMs', callTimeoutMs],
  ] as const) {
    if (!Number.isInteger(ms) || ms <= 0 || ms > MAX_TIMER_MS) {
      check.invalid(
        `options.${field}`,
        `must be a positive whole number of milliseconds (at most 2147483647); got ${show(ms)}.`,
      );
    }
  }
  return { prefix, timeoutMs, callTimeoutMs, onFailure: check.oneOf(onFailure, failureModes, 'options.onFailure') };
}

/**
 * The Redis counter of an endpoint's limits: one LIMITS_SCRIPT a request, on `<prefix>:<name>:{<client key>}:<s|f>
 * <seconds>`, the client key a hash tag so that a Cluster keeps a request's keys on one slot.
 */
class RedisLimits implements CountsLimitsAsync, Counter {
  readonly countsAsync = true;
  readonly now = false;
  readonly reads = true;
  readonly #prefix: string;
  readonly #suffixes: readonly string[];
  readonly #args: readonly string[];
  readonly #windows: readonly number[];
  readonly route: ((key: string) => string) | undefined;

  constructor(
    prefix: string,
    spec: LimitsSpec,
    private readonly scripts: LimitsScripts,
    routes: ((redisKey: string) => string) | undefined,
  ) {
    const kind = spec.window === 'sliding' ? 's' : 'f';
    this.#prefix = `${prefix}:${spec.name}:{`;
    this.#suffixes = spec.limits.map(({ windowMs }) => `}:${kind}${windowMs / 1000}`);
    this.#args = [kind, ...spec.limits.flatMap(({ limit, windowMs }) => [String(limit), String(windowMs)])];
    this.#windows = spec.limits.map(({ windowMs }) => windowMs);
    // Every key of a request is on one slot (its client key's hash tag): its first key's.
    this.route = routes && ((key) => routes(this.#prefix + key + (this.#suffixes[0] as string)));
  }

  #keys(key: string): string[] {
    return this.#suffixes.map((suffix) => this.#prefix + key + suffix);
  }

  count(key: string): Promise<readonly Count[]> {
    return this.hit(key);
  }

  hit(key: string): Promise<Counts> {
    return this.scripts.count(this.#keys(key), this.#args as string[]).then((answer) => this.#counts(answer, false));
  }

  peek(key: string): Promise<readonly Count[]> {
    return this.scripts.peek(this.#keys(key), this.#args as string[]).then((answer) => this.#counts(answer, true));
  }

  reset(key: string): Promise<boolean> {
    return this.scripts.forget(this.#keys(key), []).then((deleted) => Number(deleted) > 0);
  }

  /** Each limit's count and the ms until it frees a request, as the scripts answer; a peek's 0 has no window. */
  #counts(answer: unknown, peeked: boolean): Counts {
    const now = Date.now();
    return this.#windows.map((windowMs, i) => {
      const count = Number((answer as unknown[])[2 * i]);
      const msLeft = msLeftOf(Number((answer as unknown[])[2 * i + 1]), windowMs);
      return { count, resetAt: peeked && !(count > 0) ? 0 : now + msLeft };
    });
  }
}

/** A rate-limiter-flexible limiter of the store as a counter: its hits are the store's own commands, on its keys. */
function counting<L extends RateLimiterAbstract>(
  limiter: L,
  hits: Hit,
  routes: ((redisKey: string) => string) | undefined,
): L & Counter {
  return Object.assign(limiter, {
    now: false,
    reads: true,
    route: routes && ((key: string) => routes(limiter.getKey(key))),
    hit: (key: string) => hits(limiter.getKey(key), limiter.msDuration),
    peek: (key: string) => peekOf(limiter, key),
    reset: (key: string) => limiter.delete(key),
  });
}

/**
 * A store that counts in Redis, shared by every instance: `INCR` and `PTTL` per request, none for a client already
 * refused in its window. A request waits at most `timeoutMs`; while Redis fails, `onFailure` applies. The client is
 * yours to create, connect and close; give ioredis and node-redis clients an `'error'` listener.
 */
export function redisStore(client: RedisClient, options?: RedisStoreOptions): Store {
  const kind = kindOf(client);
  const { prefix, timeoutMs, onFailure, callTimeoutMs } = checkOptions(options);
  const hits = hitsOf(client, kind);
  const routes = routesOf(client);
  const counter = (spec: CounterSpec) => {
    const keyPrefix = `${prefix}:${spec.name}`;
    const points = spec.limit;
    const duration = spec.windowMs / 1000;
    if (kind === 'glide') return counting(new GlideLimiter({ keyPrefix, points, duration }, client), hits, routes);
    const options = {
      storeClient: client,
      useRedisPackage: kind === 'node-redis',
      // While the client is reconnecting, fail at once instead of queueing commands that would only time out.
      rejectIfRedisNotReady: true,
      keyPrefix,
      points,
      duration,
    };
    return counting(new RateLimiterRedis(options), hits, routes);
  };
  const state = redisState(commandsOf(client, kind), prefix, routes);
  const scripts = limitsScriptsOf(client, kind);
  const limits = (spec: LimitsSpec) => new RedisLimits(prefix, spec, scripts, routes);
  const watchConnection = connectionWatch(client, kind, prefix, onFailure);
  return storeWith({ state, failure: { timeoutMs, onFailure, callTimeoutMs }, watchConnection }, counter, limits);
}
