// The Redis clients the store accepts (ioredis, node-redis, GLIDE): what kind each is, and its scripts and commands.
import { Checker, MAX_DURATION_MS, show } from '../../shared/check.js';
import type { Counts } from '../counter.js';
import { slotOf } from './routes.js';
import { batchedSendOf, isGlideClient, sendOf } from './glide.js';
import { sha1 } from '../state.js';
import { evalOf, type Script, SCRIPTS } from './scripts.js';

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
  options: object | undefined,
): (args: string[], key: string) => Promise<unknown> {
  if (typeof redis.getSlotMaster === 'function') return (args, key) => redis.sendCommand(key, false, args, options);
  return (args) => redis.sendCommand(args, options);
}

/**
 * A script of the store on one client. On a request's path it fails at once while the client is not connected and
 * leaves with the turn's other commands; the runtime state's scripts wait for the client instead.
 */
function scriptOf(client: unknown, kind: RedisClientKind, name: keyof typeof SCRIPTS, request: boolean): Script {
  const lua = SCRIPTS[name];
  if (kind === 'glide') return evalOf(request ? batchedSendOf(client) : sendOf(client), lua);
  if (kind === 'node-redis') {
    const redis = client as NodeRedisLike;
    const run = evalOf(nodeRedisSend(redis, request ? REQUEST_OPTIONS : undefined), lua);
    return request ? (keys, args) => (redis.isReady === false ? notReady() : run(keys, args)) : run;
  }
  const redis = client as IoRedisLike & Record<string, unknown>;
  // Named by its text: copies of the package on one client never share a name. Each call gives its number of keys.
  const command = `listingLimits:${sha1(lua)}`;
  if (typeof redis[command] !== 'function') redis.defineCommand(command, { lua });
  const run = redis[command] as (...args: (string | number)[]) => Promise<unknown>;
  if (!request) return (keys, args) => run.call(redis, keys.length, ...keys, ...args);
  const batch = together(redis);
  return (keys, args) => {
    if (redis.status !== 'ready') return notReady();
    batch();
    return run.call(redis, keys.length, ...keys, ...args);
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

/**
 * One hit as `INCR` and `PTTL` of the key, on rate-limiter-flexible's RateLimiterRedis keys and values, so that its
 * reads see the same counter. A key without an expiry is healed (HEAL_SCRIPT), one without a count repaired.
 */
function hitOf(
  client: unknown,
  kind: RedisClientKind,
  incr: (key: string) => Promise<unknown>,
  pttl: (key: string) => Promise<unknown>,
): Hit {
  const [heal, repair] = [scriptOf(client, kind, 'heal', true), scriptOf(client, kind, 'repair', true)];
  const counted = (key: string) =>
    incr(key).catch((error: unknown) => {
      if (NO_COUNT.test(String((error as Error)?.message))) return noCount;
      throw error;
    });
  return (key, windowMs) =>
    Promise.all([counted(key), pttl(key)]).then(([count, ttl]) => {
      if (count === noCount || !(Number(count) >= 1)) {
        return repair([key], [String(windowMs)]).then((answer) => {
          const [repaired, left] = answer as [unknown, unknown];
          return countsOf(repaired, left, windowMs);
        });
      }
      if (Number(ttl) >= 0) return countsOf(count, ttl, windowMs);
      return heal([key], [String(windowMs)]).then((left) => countsOf(count, left, windowMs));
    });
}

/**
 * How one client runs hits, each sent when asked, in the order of the store's other calls: ioredis in one write a
 * turn, node-redis through `sendCommand`, GLIDE in one batch a turn. While not connected, they fail at once.
 */
export function hitsOf(client: unknown, kind: RedisClientKind): Hit {
  if (kind === 'glide') {
    const send = batchedSendOf(client);
    return hitOf(
      client,
      kind,
      (key) => send(['INCR', key]),
      (key) => send(['PTTL', key]),
    );
  }
  if (kind === 'node-redis') {
    const redis = client as NodeRedisLike;
    const send = nodeRedisSend(redis, REQUEST_OPTIONS);
    const hit = hitOf(
      client,
      kind,
      (key) => send(['INCR', key], key),
      (key) => send(['PTTL', key], key),
    );
    return (key, windowMs) => (redis.isReady === false ? notReady() : hit(key, windowMs));
  }
  const redis = client as IoRedisLike;
  const batch = together(redis);
  const master = redis.isCluster === true ? mastersOf(redis as IoRedisCluster) : undefined;
  const hit = master
    ? hitOf(
        client,
        kind,
        (key) => master(key, 'incr'),
        (key) => master(key, 'pttl'),
      )
    : hitOf(
        client,
        kind,
        (key) => redis.incr(key),
        (key) => redis.pttl(key),
      );
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
  readonly count: Script;
  readonly peek: Script;
  readonly forget: Script;
}

export function limitsScriptsOf(client: unknown, kind: RedisClientKind): LimitsScripts {
  return {
    count: scriptOf(client, kind, 'limits', true),
    peek: scriptOf(client, kind, 'peek', true),
    forget: scriptOf(client, kind, 'forget', true),
  };
}

/** What the runtime state sends through a client: its scripts, and plain commands routed by their first key. */
export interface StateCommands {
  readonly scripts: Record<'change' | 'changeRequests' | 'readRequests' | 'removeHistory' | 'clock', Script>;
  send(args: string[]): Promise<unknown>;
}

export function commandsOf(client: unknown, kind: RedisClientKind): StateCommands {
  const script = (name: keyof typeof SCRIPTS) => scriptOf(client, kind, name, false);
  return {
    scripts: {
      change: script('change'),
      changeRequests: script('changeRequests'),
      readRequests: script('readRequests'),
      removeHistory: script('removeHistory'),
      clock: script('clock'),
    },
    send: sendOfKind(client, kind),
  };
}

/**
 * A plain command, as each client sends it. node-redis makes a hash a plain object, where a field named `__proto__`
 * would vanish: its replies of type map (RESP3's `%`, its RESP_TYPES.MAP) come as lists.
 */
function sendOfKind(client: unknown, kind: RedisClientKind): (args: string[]) => Promise<unknown> {
  if (kind === 'glide') return sendOf(client);
  if (kind === 'node-redis') {
    const send = nodeRedisSend(client as NodeRedisLike, { typeMapping: { [MAP_TYPE]: Array } });
    return (args) => send(args, args[1] as string);
  }
  const redis = client as { call(...args: string[]): Promise<unknown> };
  return (args) => redis.call(...args);
}
