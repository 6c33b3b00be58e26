// The Redis clients the store accepts (ioredis, node-redis, GLIDE): what kind each is, and its scripts and commands.
import { Checker, MAX_DURATION_MS, show } from '../../shared/check.js';
import type { Counts } from '../counter.js';
import { slotOf } from './routes.js';
import { batchedSendOf, glideCommands, glideScript, hashRecord, isGlideClient, sendOf } from './glide.js';
import {
  HEAL_SCRIPT,
  HEAL_SHA,
  REPAIR_SCRIPT,
  REPAIR_SHA,
  FORGET_SCRIPT,
  FORGET_SHA,
  LIMITS_SCRIPT,
  LIMITS_SHA,
  PEEK_SCRIPT,
  PEEK_SHA,
  CHANGE_SCRIPT,
  CHANGE_SHA,
  CLOCK_SCRIPT,
  CLOCK_SHA,
  REMOVE_HISTORY_SCRIPT,
  REMOVE_HISTORY_SHA,
  REQUEST_CHANGE_SCRIPT,
  REQUEST_CHANGE_SHA,
  REQUEST_READ_SCRIPT,
  REQUEST_READ_SHA,
} from './scripts.js';

export const check: Checker = new Checker('redisStore');

/** The package that made the client: ioredis (or iovalkey), node-redis, or Valkey GLIDE. */
export type RedisClientKind = 'ioredis' | 'node-redis' | 'glide';

export function kindOf(client: unknown): RedisClientKind {
  if (typeof client === 'function') {
    check.invalid(
      'client',
      `is ${show(client)}, not a client: pass a connected instance, e.g. \`redisStore(new Redis(url))\`.`,
    );
  }
  const c = client as Record<string, unknown> | null;
  if (typeof c === 'object' && c !== null) {
    if (isGlideClient(c)) return 'glide';
    if (typeof c.defineCommand === 'function') return 'ioredis';
    if (typeof c.isOpen === 'boolean' && typeof c.eval === 'function') {
      const listeners = c.listenerCount as ((event: string) => number) | undefined;
      if (typeof listeners === 'function' && listeners.call(c, 'error') === 0) {
        check.invalid(
          'client',
          "has no 'error' listener: node-redis would crash the process when Redis goes away. " +
            "Add client.on('error', ...) before calling redisStore().",
        );
      }
      return 'node-redis';
    }
  }
  const got = typeof client === 'object' && client !== null ? 'an object that is none of these' : show(client);
  return check.invalid(
    'client',
    'must be an ioredis (or iovalkey) client or Cluster, a node-redis (v4 or later) client or cluster, or a ' +
      `Valkey GLIDE GlideClient or GlideClusterClient; got ${got}.`,
  );
}

/** A socket that can hold its writes: a client's, or a Cluster node's. */
interface Corkable {
  cork?(): void;
  uncork(): void;
}

interface IoRedisLike {
  status?: string;
  /** The socket of a standalone client; a Cluster has none, but one per node. */
  stream?: Corkable;
  isCluster?: boolean;
  nodes?(role: 'master'): { stream?: Corkable }[];
  defineCommand(name: string, definition: { numberOfKeys?: number; lua: string }): void;
  incr(key: string): Promise<unknown>;
  pttl(key: string): Promise<unknown>;
  listingLimitsHeal?: (key: string, ms: number) => Promise<unknown>;
  listingLimitsRepair?: (key: string, ms: number) => Promise<[unknown, unknown]>;
}

interface NodeRedisLike {
  isReady?: boolean;
  /** A cluster's: the master of a slot. */
  getSlotMaster?: unknown;
  sendCommand(...args: unknown[]): Promise<unknown>;
}

/**
 * ioredis writes each command at once, a system call each: the store's commands of one turn leave in one write
 * instead, the client's sockets corked until `setImmediate`. One per client, whatever its stores.
 */
const togetherByClient = new WeakMap<IoRedisLike, () => void>();

function together(redis: IoRedisLike): () => void {
  let batch = togetherByClient.get(redis);
  if (batch) return batch;
  let corked: Corkable[] | undefined;
  const uncork = () => {
    const streams = corked ?? [];
    corked = undefined;
    for (const stream of streams) stream.uncork();
  };
  const streamsOf = (): (Corkable | undefined)[] =>
    redis.isCluster === true ? (redis.nodes?.('master') ?? []).map((node) => node.stream) : [redis.stream];
  batch = () => {
    if (corked) return;
    corked = [];
    for (const stream of streamsOf()) {
      if (typeof stream?.cork !== 'function') continue;
      stream.cork();
      corked.push(stream);
    }
    setImmediate(uncork);
  };
  togetherByClient.set(redis, batch);
  return batch;
}

const notReady = () => Promise.reject(new Error('the Redis client is not connected'));

/** RESP3's type byte of a map, `%`, by which node-redis maps a reply type to what it makes of it. */
const MAP_TYPE = 0x25;

/**
 * A request's commands go through node-redis without its timeout per command (an `AbortSignal.timeout` each, most of
 * its cost): the store bounds the wait itself. A cluster routes each to its key's master.
 */
const REQUEST_OPTIONS = { timeout: undefined };

function nodeRedisSend(
  redis: NodeRedisLike,
  options: typeof REQUEST_OPTIONS | undefined,
): (key: string, args: string[]) => Promise<unknown> {
  if (typeof redis.getSlotMaster === 'function') return (key, args) => redis.sendCommand(key, false, args, options);
  return (_key, args) => redis.sendCommand(args, options);
}

/** A script run by node-redis: EVALSHA, then EVAL; fails at once while not connected, unless `queued`. */
function nodeRedisScript(redis: NodeRedisLike, script: string, sha: string, queued = false) {
  const send = nodeRedisSend(redis, queued ? undefined : REQUEST_OPTIONS);
  return (keys: string[], args: string[]): Promise<unknown> => {
    if (redis.isReady === false && !queued) return notReady();
    const key = keys[0] as string;
    const call = [String(keys.length), ...keys, ...args];
    return send(key, ['EVALSHA', sha, ...call]).catch((error: unknown) => {
      if (!String((error as Error)?.message).includes('NOSCRIPT')) throw error;
      return send(key, ['EVAL', script, ...call]);
    });
  };
}

/** What Redis answers an `INCR` of a key that holds no integer count: not one, at the edge of 64 bits, no string. */
const NO_COUNT = /not an integer|would overflow|WRONGTYPE/;
const noCount = Symbol('no count');

/** A hit of the Redis store: one more request on a key, answering its count and when its window ends. */
export type Hit = (key: string, windowMs: number) => Promise<Counts>;

/** The ms a window has left, as Redis answered: at most a year; none is the whole window. */
export function msLeftOf(answered: number, windowMs: number): number {
  return answered >= 0 ? Math.min(answered, MAX_DURATION_MS) : windowMs;
}

function countsOf(count: unknown, ttl: unknown, windowMs: number): Counts {
  return [{ count: Number(count), resetAt: Date.now() + msLeftOf(Number(ttl), windowMs) }];
}

/** A hit's two commands and the scripts of its rare paths, as each client sends them. */
interface HitCommands {
  incr(key: string): Promise<unknown>;
  pttl(key: string): Promise<unknown>;
  heal(key: string, ms: number): Promise<unknown>;
  repair(key: string, ms: number): Promise<[unknown, unknown]>;
}

/**
 * One hit as `INCR` and `PTTL` of the key, on rate-limiter-flexible's RateLimiterRedis keys and values, so that its
 * reads see the same counter. A key without an expiry is healed (HEAL_SCRIPT), one without a count repaired.
 */
function hitOfCommands({ incr, pttl, heal, repair }: HitCommands): Hit {
  const counted = (key: string) =>
    incr(key).catch((error: unknown) => {
      if (NO_COUNT.test(String((error as Error)?.message))) return noCount;
      throw error;
    });
  return (key, windowMs) =>
    Promise.all([counted(key), pttl(key)]).then(([count, ttl]) => {
      if (count === noCount || !(Number(count) >= 1))
        return repair(key, windowMs).then(([repaired, left]) => countsOf(repaired, left, windowMs));
      if (Number(ttl) >= 0) return countsOf(count, ttl, windowMs);
      return heal(key, windowMs).then((left) => countsOf(count, left, windowMs));
    });
}

/**
 * How one client runs hits, each sent when asked, in the order of the store's other calls: ioredis in one write a
 * turn, node-redis through `sendCommand`, GLIDE in one batch a turn. While not connected, they fail at once.
 */
export function hitsOf(client: unknown, kind: RedisClientKind): Hit {
  if (kind === 'glide') {
    const send = batchedSendOf(client);
    const [heal, repair] = [glideScript(send, HEAL_SCRIPT, HEAL_SHA), glideScript(send, REPAIR_SCRIPT, REPAIR_SHA)];
    return hitOfCommands({
      incr: (key) => send(['INCR', key]),
      pttl: (key) => send(['PTTL', key]),
      heal: (key, ms) => heal([key], [String(ms)]),
      repair: (key, ms) => repair([key], [String(ms)]) as Promise<[unknown, unknown]>,
    });
  }
  if (kind === 'node-redis') {
    const redis = client as NodeRedisLike;
    const send = nodeRedisSend(redis, REQUEST_OPTIONS);
    const heal = nodeRedisScript(redis, HEAL_SCRIPT, HEAL_SHA);
    const repair = nodeRedisScript(redis, REPAIR_SCRIPT, REPAIR_SHA);
    const hit = hitOfCommands({
      incr: (key) => send(key, ['INCR', key]),
      pttl: (key) => send(key, ['PTTL', key]),
      heal: (key, ms) => heal([key], [String(ms)]),
      repair: (key, ms) => repair([key], [String(ms)]) as Promise<[unknown, unknown]>,
    });
    return (key, windowMs) => (redis.isReady === false ? notReady() : hit(key, windowMs));
  }
  const redis = client as IoRedisLike;
  if (typeof redis.listingLimitsHeal !== 'function') {
    redis.defineCommand('listingLimitsHeal', { numberOfKeys: 1, lua: HEAL_SCRIPT });
  }
  if (typeof redis.listingLimitsRepair !== 'function') {
    redis.defineCommand('listingLimitsRepair', { numberOfKeys: 1, lua: REPAIR_SCRIPT });
  }
  const { listingLimitsHeal: heal, listingLimitsRepair: repair } = redis as Required<IoRedisLike>;
  const batch = together(redis);
  const master = redis.isCluster === true ? mastersOf(redis as IoRedisCluster) : undefined;
  const hit = hitOfCommands({
    incr: master ? (key) => master(key, 'incr') : (key) => redis.incr(key),
    pttl: master ? (key) => master(key, 'pttl') : (key) => redis.pttl(key),
    heal: (key, ms) => {
      batch();
      return heal.call(redis, key, ms);
    },
    repair: (key, ms) => {
      batch();
      return repair.call(redis, key, ms);
    },
  });
  return (key, windowMs) => {
    if (redis.status !== 'ready') return notReady();
    batch();
    return hit(key, windowMs);
  };
}

/** What an ioredis Cluster tells of its masters: the master of each slot, and each master's connection. */
interface IoRedisCluster extends IoRedisLike {
  slots?: unknown;
  nodes(role: 'master'): (IoRedisLike & { options?: { host?: unknown; port?: unknown } })[];
}

/** The errors of a Cluster's node for a command it did not run, which the Cluster itself sends again elsewhere. */
const SENT_AGAIN = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) |^Connection is closed/;

/**
 * A hit's command sent straight to its key's master, without the Cluster's routing (a slot, a closure and a weak-set
 * entry per command). A command the master did not run goes through the Cluster, which follows redirections.
 */
function mastersOf(cluster: IoRedisCluster): (key: string, command: 'incr' | 'pttl') => Promise<unknown> {
  let byAddress = new Map<string, IoRedisLike>();
  const connectionOf = (key: string): IoRedisLike | undefined => {
    const nodes = Array.isArray(cluster.slots) ? (cluster.slots[slotOf(key)] as unknown) : undefined;
    const address = Array.isArray(nodes) ? nodes[0] : undefined;
    if (typeof address !== 'string') return undefined;
    let node = byAddress.get(address);
    if (!node) {
      byAddress = new Map(cluster.nodes('master').map((n) => [`${n.options?.host}:${n.options?.port}`, n]));
      node = byAddress.get(address);
    }
    return node?.status === 'ready' ? node : undefined;
  };
  return (key, command) => {
    const node = connectionOf(key);
    if (!node) return cluster[command](key);
    return node[command](key).catch((error: unknown) => {
      if (!SENT_AGAIN.test(String((error as Error)?.message))) throw error;
      return cluster[command](key);
    });
  };
}

/** The scripts of an endpoint's limits, each run as {@link hitsOf} runs hits: keys, then arguments. */
export interface LimitsScripts {
  readonly count: (keys: string[], args: string[]) => Promise<unknown[]>;
  readonly peek: (keys: string[], args: string[]) => Promise<unknown[]>;
  readonly forget: (keys: string[]) => Promise<unknown>;
}

/** A script with a variable number of keys, on one client; while the client is not connected, it fails at once. */
function scriptOf(client: unknown, kind: RedisClientKind, name: string, lua: string, sha: string) {
  if (kind === 'glide')
    return glideScript(batchedSendOf(client), lua, sha) as (k: string[], a: string[]) => Promise<unknown[]>;
  if (kind === 'node-redis')
    return nodeRedisScript(client as NodeRedisLike, lua, sha) as (k: string[], a: string[]) => Promise<unknown[]>;
  const redis = client as IoRedisLike;
  const commands = redis as unknown as Record<
    string,
    ((...args: (string | number)[]) => Promise<unknown[]>) | undefined
  >;
  // Defined without a number of keys: each call gives it first, as endpoints have one key per limit.
  if (typeof commands[name] !== 'function') redis.defineCommand(name, { lua });
  const run = commands[name] as (...args: (string | number)[]) => Promise<unknown[]>;
  const batch = together(redis);
  return (keys: string[], args: string[]) => {
    if (redis.status !== 'ready') return notReady();
    batch();
    return run.call(redis, keys.length, ...keys, ...args);
  };
}

export function limitsScriptsOf(client: unknown, kind: RedisClientKind): LimitsScripts {
  const forget = scriptOf(client, kind, 'listingLimitsForget', FORGET_SCRIPT, FORGET_SHA);
  return {
    count: scriptOf(client, kind, 'listingLimitsLimits', LIMITS_SCRIPT, LIMITS_SHA),
    peek: scriptOf(client, kind, 'listingLimitsPeek', PEEK_SCRIPT, PEEK_SHA),
    forget: (keys) => forget(keys, []),
  };
}

/** The commands the runtime state needs of a client, the same for every kind. */
export interface StateCommands {
  change(keys: string[], args: string[]): Promise<unknown>;
  changeRequests(keys: string[], args: string[]): Promise<unknown>;
  readRequests(keys: string[], args: string[]): Promise<unknown>;
  removeHistory(keys: string[], args: string[]): Promise<unknown>;
  /** Redis' `TIME` on the server of `keys`. */
  clock(keys: string[]): Promise<unknown>;
  hget(key: string, field: string): Promise<string | null>;
  hset(key: string, field: string, value: string): Promise<unknown>;
  hmget(key: string, fields: string[]): Promise<(string | null)[]>;
  hgetall(key: string): Promise<Record<string, string>>;
  zrangebyscore(key: string, min: string, max: string): Promise<string[]>;
  lrange(key: string): Promise<string[]>;
  hvals(key: string): Promise<string[]>;
  hdel(key: string, fields: string[]): Promise<unknown>;
}

export function commandsOf(client: unknown, kind: RedisClientKind): StateCommands {
  if (kind === 'glide') {
    const send = sendOf(client);
    const clock = glideScript(send, CLOCK_SCRIPT, CLOCK_SHA);
    return {
      change: glideScript(send, CHANGE_SCRIPT, CHANGE_SHA),
      changeRequests: glideScript(send, REQUEST_CHANGE_SCRIPT, REQUEST_CHANGE_SHA),
      readRequests: glideScript(send, REQUEST_READ_SCRIPT, REQUEST_READ_SHA),
      removeHistory: glideScript(send, REMOVE_HISTORY_SCRIPT, REMOVE_HISTORY_SHA),
      clock: (keys) => clock(keys, []),
      ...glideCommands(send),
    };
  }
  if (kind === 'node-redis') {
    const redis = client as NodeRedisLike & {
      hGet(key: string, field: string): Promise<string | null>;
      hSet(key: string, field: string, value: string): Promise<unknown>;
      hmGet(key: string, fields: string[]): Promise<(string | null)[]>;
      hGetAll(key: string): Promise<Record<string, string>>;
      zRangeByScore(key: string, min: string, max: string): Promise<string[]>;
      lRange(key: string, start: number, stop: number): Promise<string[]>;
      hVals(key: string): Promise<string[]>;
      hDel(key: string, fields: string[]): Promise<unknown>;
      withTypeMapping?(mapping: Record<number, unknown>): { hGetAll(key: string): Promise<unknown> };
    };
    // node-redis makes a hash a plain object, where a field named `__proto__` would vanish: read as a list where it
    // can (v5 on), its replies of type map (RESP3's `%`, its RESP_TYPES.MAP) mapped to arrays.
    const asList = redis.withTypeMapping?.call(redis, { [MAP_TYPE]: Array });
    const change = nodeRedisScript(redis, CHANGE_SCRIPT, CHANGE_SHA, true);
    const clock = nodeRedisScript(redis, CLOCK_SCRIPT, CLOCK_SHA, true);
    return {
      change,
      changeRequests: nodeRedisScript(redis, REQUEST_CHANGE_SCRIPT, REQUEST_CHANGE_SHA, true),
      readRequests: nodeRedisScript(redis, REQUEST_READ_SCRIPT, REQUEST_READ_SHA, true),
      removeHistory: nodeRedisScript(redis, REMOVE_HISTORY_SCRIPT, REMOVE_HISTORY_SHA, true),
      clock: (keys) => clock(keys, []),
      hget: (key, field) => redis.hGet(key, field),
      hset: (key, field, value) => redis.hSet(key, field, value),
      hmget: (key, fields) => redis.hmGet(key, fields),
      hgetall: (key) => (asList ? asList.hGetAll(key).then(hashRecord) : redis.hGetAll(key)),
      zrangebyscore: (key, min, max) => redis.zRangeByScore(key, min, max),
      lrange: (key) => redis.lRange(key, 0, -1),
      hvals: (key) => redis.hVals(key),
      hdel: (key, fields) => redis.hDel(key, fields),
    };
  }
  const redis = client as IoRedisLike & {
    hget(key: string, field: string): Promise<string | null>;
    hset(key: string, field: string, value: string): Promise<unknown>;
    hmget(key: string, ...fields: string[]): Promise<(string | null)[]>;
    hgetall(key: string): Promise<Record<string, string>>;
    zrangebyscore(key: string, min: string, max: string): Promise<string[]>;
    lrange(key: string, start: number, stop: number): Promise<string[]>;
    hvals(key: string): Promise<string[]>;
    hdel(key: string, ...fields: string[]): Promise<unknown>;
  };
  const clock = ioRedisScript(redis, 'listingLimitsClock', CLOCK_SCRIPT);
  return {
    change: ioRedisScript(redis, 'listingLimitsChange', CHANGE_SCRIPT),
    changeRequests: ioRedisScript(redis, 'listingLimitsChangeRequests', REQUEST_CHANGE_SCRIPT),
    readRequests: ioRedisScript(redis, 'listingLimitsReadRequests', REQUEST_READ_SCRIPT),
    removeHistory: ioRedisScript(redis, 'listingLimitsRemoveHistory', REMOVE_HISTORY_SCRIPT),
    clock: (keys) => clock(keys, []),
    hget: (key, field) => redis.hget(key, field),
    hset: (key, field, value) => redis.hset(key, field, value),
    hmget: (key, fields) => redis.hmget(key, ...fields),
    hgetall: (key) => redis.hgetall(key),
    zrangebyscore: (key, min, max) => redis.zrangebyscore(key, min, max),
    lrange: (key) => redis.lrange(key, 0, -1),
    hvals: (key) => redis.hvals(key),
    hdel: (key, fields) => redis.hdel(key, ...fields),
  };
}

/** A state script run by ioredis, sent whatever the client's state: a change made while it reconnects waits. */
function ioRedisScript(redis: IoRedisLike, name: string, lua: string) {
  const commands = redis as unknown as Record<string, ((...args: (string | number)[]) => Promise<unknown>) | undefined>;
  if (typeof commands[name] !== 'function') redis.defineCommand(name, { lua });
  const run = commands[name] as (...args: (string | number)[]) => Promise<unknown>;
  return (keys: string[], args: string[]) => run.call(redis, keys.length, ...keys, ...args);
}
