// The cluster store: a worker's counters and runtime state, kept by the primary and asked over the IPC channel.
import { type RateLimiterAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { Checker } from '../../shared/check.js';
import { type Counter, type Counts, storeWith } from '../counter.js';
import { checkFailureOptions, meanwhile } from '../failure-options.js';
import type { GrantRequestStore } from '../grant-request-store.js';
import type { ChangeResult, RuntimeState, StateChangeResult } from '../state.js';
import type { CounterSpec, CountsLimitsAsync, LimitsSpec, Store, StoreFailurePolicy } from '../store.js';
import { type Channel, channelOf } from './channel.js';
import { countsIn } from './messages.js';
import { underPm2 } from './instance.js';

/** Options of {@link clusterStore}. */
export interface ClusterStoreOptions {
  /**
   * Namespace of the counters and state in the primary: each middleware (and listing) of an app needs its own.
   * Default: `'listing-limits'`.
   */
  prefix?: string;
  /**
   * Longest wait (ms) of one whole request for the primary, counted while this process is idle (at most 5 ×
   * `timeoutMs`); then `onFailure` applies. Default: `200`.
   */
  timeoutMs?: number;
  /**
   * What a request gets while the primary does not answer within `timeoutMs`: `'memory'` counts it in this worker,
   * `'open'` lets it through uncounted and without headers, `'closed'` answers `503`. Default: `'memory'`.
   */
  onFailure?: StoreFailurePolicy['onFailure'];
  /**
   * Longest wait (ms) of an operator's call (`ban()`, `usage()`, a page's load): then it rejects with
   * `ERR_STORE_UNAVAILABLE` and changes nothing. Default: `2000`.
   */
  callTimeoutMs?: number;
}

const clusterCheck = new Checker('clusterStore');

/** How long the primary may take to answer a worker's first call before the store tells it has not. */
const ANSWER_WITHIN_MS = 5000;

const primaryFix = 'Call clusterPrimary() in the primary before forking.';
const pm2Fix =
  "PM2's cluster mode has no primary of the app's own: use redisStore(client), or run a primary of yours that calls " +
  'clusterPrimary() and forks the workers, in PM2 fork mode.';

function malformed(): never {
  throw new Error("listing-limits: the cluster's primary answered a malformed value");
}

/** A counter whose every call is a message to the primary, named by its spec. */
function clusterCounter(channel: Channel, prefix: string, spec: LimitsSpec, ms: number): CountsLimitsAsync & Counter {
  const name = JSON.stringify([spec.name, spec.window, spec.limits.map(({ limit, windowMs }) => [limit, windowMs])]);
  const n = spec.limits.length;
  const counts = (answer: unknown): Counts => countsIn(answer, n) ?? malformed();
  const hit = (key: string) => channel.call(prefix, 'hit', [name, key], ms).then(counts);
  return {
    countsAsync: true,
    now: false,
    reads: true,
    count: hit,
    hit,
    peek: (key) => channel.call(prefix, 'peek', [name, key], ms).then(counts),
    reset: (key) => channel.call(prefix, 'reset', [name, key], ms).then((answer) => answer === true),
  };
}

/** A fixed window's counter with rate-limiter-flexible's `consume()`, `get()` and `delete()` (no other method). */
function clusterLimiter(counter: Counter, spec: CounterSpec): RateLimiterAbstract & Counter {
  const result = ([count]: Counts) => {
    const { count: consumed, resetAt } = count ?? { count: 0, resetAt: 0 };
    const msLeft = resetAt === Infinity ? -1 : resetAt - Date.now();
    return new RateLimiterRes(Math.max(spec.limit - consumed, 0), msLeft, consumed, consumed === 1);
  };
  const limiter = {
    ...counter,
    points: spec.limit,
    msDuration: spec.windowMs,
    consume: async (key: string | number) => {
      const res = result(await counter.hit(String(key)));
      if (res.consumedPoints > spec.limit) throw res;
      return res;
    },
    get: async (key: string | number) => {
      const counts = await counter.peek(String(key));
      return counts[0]?.count ? result(counts) : null;
    },
    delete: (key: string | number) => Promise.resolve(counter.reset(String(key))),
  };
  return limiter as unknown as RateLimiterAbstract & Counter;
}

function stateResult(answer: unknown): StateChangeResult {
  const { records, request } = (answer ?? {}) as { records?: unknown; request?: unknown };
  if (!Array.isArray(records) || (request !== undefined && typeof request !== 'string')) malformed();
  for (const r of records as Partial<ChangeResult>[]) {
    if (typeof r?.changed !== 'boolean' || typeof r.seq !== 'number' || typeof r.epoch !== 'string') malformed();
    if (![r.before, r.stored].every((t) => t === undefined || typeof t === 'string')) malformed();
  }
  return answer as StateChangeResult;
}

const texts = (answer: unknown): string[] =>
  Array.isArray(answer) && answer.every((t) => typeof t === 'string') ? answer : malformed();

/** The runtime state in the primary, each call a message; changes come to every worker as the primary tells them. */
function clusterState(channel: Channel, prefix: string, ms: number): RuntimeState {
  const call = (op: string, ...args: unknown[]) => channel.call(prefix, op, args, ms);
  // The processes share the machine's clock: a change's latest time goes as epoch ms.
  const epochMs = (applyBy: number | undefined) =>
    applyBy === undefined ? null : Math.floor(Date.now() + applyBy - performance.now());
  const requests: GrantRequestStore = {
    file: async (id, value, meta, bounds, now, applyBy) => {
      const answer = await call('file', id, value, meta, bounds, now, epochMs(applyBy));
      return answer === 'done' || answer === 'key' || answer === 'network' ? answer : 'conflict';
    },
    put: async (id, value, expected, meta, now, applyBy) => {
      const answer = await call('put', id, value, expected, meta, now, epochMs(applyBy));
      return typeof answer === 'string' ? answer : undefined;
    },
    get: async (id) => {
      const answer = await call('get', id);
      return typeof answer === 'string' ? answer : undefined;
    },
    page: async (status, offset, limit, now) => {
      const { total, values } = ((await call('page', status, offset, limit, now)) ?? {}) as Record<string, unknown>;
      return { total: typeof total === 'number' ? total : malformed(), values: texts(values) };
    },
    find: async (by, value, limit) => texts(await call('find', by, value, limit)),
  };
  return {
    change: async (c) => stateResult(await call('change', c.records, c.request ?? null, epochMs(c.applyBy))),
    follow: (apply, answered) => channel.follow(prefix, apply, answered && (() => answered('')), ms),
    history: async () => texts(await call('history')),
    removeHistory: async (entry, applyBy) => (await call('removeHistory', entry, epochMs(applyBy))) === true,
    requests,
  };
}

/**
 * A store for the workers of `node:cluster`: the counters and runtime state (bans, grants, history) live in the
 * primary, which calls {@link clusterPrimary} before forking; each worker asks it over the cluster's IPC channel, a
 * turn's calls in one message. Every worker counts on the same counters, and a change made in one is in force in all
 * within a second. A request waits at most `timeoutMs`; then `onFailure` applies. In a process that is not a worker,
 * it counts in that process.
 */
export function clusterStore(options?: ClusterStoreOptions): Store {
  const { prefix, timeoutMs, onFailure, callTimeoutMs } = checkFailureOptions(clusterCheck, options, 'listing-limits');
  const channel = channelOf();
  // A call is dropped once no request or operator's call can wait for it any longer.
  const ms = Math.max(5 * timeoutMs, callTimeoutMs);
  const limits = (spec: LimitsSpec) => clusterCounter(channel, prefix, spec, ms);
  const limiter = (spec: CounterSpec) =>
    clusterLimiter(limits({ name: spec.name, window: 'fixed', limits: [spec] }), spec);
  const watchConnection = (tell: (message: string) => void) => {
    const timer = setTimeout(
      () =>
        tell(
          `listing-limits: the cluster's primary has not answered this worker's cluster store (prefix ` +
            `${JSON.stringify(prefix)}) within ${ANSWER_WITHIN_MS / 1000} s of the middleware's start. Until it ` +
            `does, ${meanwhile[onFailure]}. ${underPm2() ? pm2Fix : primaryFix}`,
        ),
      ANSWER_WITHIN_MS,
    ).unref();
    channel.call(prefix, 'sync', [], ANSWER_WITHIN_MS).then(
      () => clearTimeout(timer),
      () => {},
    );
    return () => clearTimeout(timer);
  };
  const state = clusterState(channel, prefix, ms);
  return storeWith({ state, failure: { timeoutMs, onFailure, callTimeoutMs }, watchConnection }, limiter, limits);
}
