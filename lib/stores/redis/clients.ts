// The Redis clients the store accepts (ioredis, node-redis, GLIDE), a table of kinds: how the store sends through each.
import calculateSlot from 'cluster-key-slot';
import { type RateLimiterAbstract, RateLimiterRedis } from 'rate-limiter-flexible';
import { Checker, MAX_DURATION_MS, show } from '../../shared/check.js';
import { once } from '../../shared/once.js';
import { SweptMap } from '../../shared/swept.js';
import type { Counts } from '../counter.js';
import type { Count } from '../store.js';
import { sha1 } from '../state.js';
import { batchedSendOf, GlideLimiter, sendOf } from './glide.js';
import { evalOf, type Script, SCRIPTS, type Send } from './scripts.js';

export const check: Checker = new Checker('redisStore');

/** What a store's limiter of one fixed window is made of. */
type LimiterOptions = { keyPrefix: string; points: number; duration: number };

/** A connection as a kind of client makes it; the store adds its one warning. */
type Made = Omit<RedisConnection, 'notConnected'>;

/** One client as the store uses it, whatever its package: made once per client, whatever its stores. */
export interface RedisConnection {
  /** Its package, as the warnings name it. */
  readonly name: string;
  /** A request's command: those of one turn leave together; while the client is not connected, it fails at once. */
  readonly request: Send;
  /** A command of the runtime state, which waits for the client. */
  readonly call: Send;
  /** A script of the store, sent as `request` sends (on a request's path) or as `call` does. */
  script(name: keyof typeof SCRIPTS, request: boolean): Script;
  /** rate-limiter-flexible's limiter on this client. */
  limiter(options: LimiterOptions): RateLimiterAbstract;
  /**
   * A Cluster's route of each key, so that a master that fails stops only its own keys' requests waiting: the master
   * of its slot as the client knows it, else the slot (GLIDE does not tell). None for a client of one server.
   */
  readonly route: ((redisKey: string) => string) | undefined;
  /** Whether it is connected and ready for commands; undefined where it does not say (GLIDE). */
  ready(): boolean | undefined;
  /** What it says of its connection, for the warning that it has not connected. */
  says(): string;
  /** The warning that it has not connected, told once per client. */
  readonly notConnected: (tell: (message: string) => void, message: string) => void;
}

/** Slots of keys seen, forgotten all at once past this many. */
const REMEMBERED_SLOTS = 10_000;
const slots = new Map<string, number>();

/**
 * A key's slot, remembered: computing one allocates an array of the key's bytes, and each request of a Cluster asks
 * for its key's slot twice (its route, its command).
 */
export function slotOf(key: string): number {
  let slot = slots.get(key);
  if (slot === undefined) {
    if (slots.size >= REMEMBERED_SLOTS) slots.clear();
    slot = calculateSlot(key);
    slots.set(key, slot);
  }
  return slot;
}

const notReady = () => Promise.reject(new Error('the Redis client is not connected'));

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
  slots?: unknown;
  nodes(role: 'master'): (IoRedisLike & { options?: { host?: unknown; port?: unknown } })[];
  defineCommand(name: string, definition: { lua: string }): void;
  call(...args: string[]): Promise<unknown>;
}

/**
 * ioredis writes each command at once, a system call each: the store's commands of one turn leave in one write
 * instead, the client's sockets corked until `setImmediate`.
 */
function together(redis: IoRedisLike): () => void {
  let corked: Corkable[] | undefined;
  const uncork = () => {
    const streams = corked ?? [];
    corked = undefined;
    for (const stream of streams) stream.uncork();
  };
  return () => {
    if (corked) return;
    corked = [];
    const streams = redis.isCluster === true ? redis.nodes('master').map((node) => node.stream) : [redis.stream];
    for (const stream of streams) {
      if (typeof stream?.cork !== 'function') continue;
      stream.cork();
      corked.push(stream);
    }
    setImmediate(uncork);
  };
}

/** The errors of a Cluster's node for a command it did not run, which the Cluster itself sends again elsewhere. */
const SENT_AGAIN = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) |^Connection is closed/;

/** The address of the master of a key's slot, as an ioredis Cluster's table has it. */
function addressOf(cluster: IoRedisLike, key: string): string | undefined {
  const nodes = Array.isArray(cluster.slots) ? (cluster.slots[slotOf(key)] as unknown) : undefined;
  const address = Array.isArray(nodes) ? (nodes[0] as unknown) : undefined;
  return typeof address === 'string' ? address : undefined;
}

/**
 * A command sent straight to its key's master, without the Cluster's routing (a slot, a closure and a weak-set entry
 * per command). A command the master did not run goes through the Cluster, which follows redirections.
 */
function mastersOf(cluster: IoRedisLike): Send {
  let byAddress = new Map<string, IoRedisLike>();
  return (args, key) => {
    const address = addressOf(cluster, key);
    let node = address === undefined ? undefined : byAddress.get(address);
    if (address !== undefined && !node) {
      byAddress = new Map(cluster.nodes('master').map((n) => [`${n.options?.host}:${n.options?.port}`, n]));
      node = byAddress.get(address);
    }
    if (node?.status !== 'ready') return cluster.call(...args);
    return node.call(...args).catch((error: unknown) => {
      if (!SENT_AGAIN.test(String((error as Error)?.message))) throw error;
      return cluster.call(...args);
    });
  };
}

/** rate-limiter-flexible's own limiter of an ioredis or node-redis client. */
const redisLimiter = (client: object, useRedisPackage: boolean) => (options: LimiterOptions) =>
  // While the client is reconnecting, fail at once instead of queueing commands that would only time out.
  new RateLimiterRedis({ storeClient: client, useRedisPackage, rejectIfRedisNotReady: true, ...options });

function ioredis(redis: IoRedisLike): Made {
  const batch = together(redis);
  // A request's commands: none while not connected, those of one turn in one write.
  const gate = () => {
    if (redis.status !== 'ready') return false;
    batch();
    return true;
  };
  const cluster = redis.isCluster === true && Array.isArray(redis.slots);
  const master = cluster ? mastersOf(redis) : undefined;
  return {
    name: 'ioredis',
    route: cluster ? (key) => addressOf(redis, key) ?? `slot ${slotOf(key)}` : undefined,
    request: (args, key) => (!gate() ? notReady() : master ? master(args, key) : redis.call(...args)),
    call: (args) => redis.call(...args),
    script: (name, request) => {
      const lua = SCRIPTS[name];
      // Named by its text: copies of the package on one client never share a name. Each call gives its number of keys.
      const command = `listingLimits:${sha1(lua)}`;
      const named = redis as unknown as Record<string, (...args: (string | number)[]) => Promise<unknown>>;
      if (typeof named[command] !== 'function') redis.defineCommand(command, { lua });
      const run = named[command] as (...args: (string | number)[]) => Promise<unknown>;
      const script: Script = (keys, args) => run.call(redis, keys.length, ...keys, ...args);
      return request ? (keys, args) => (gate() ? script(keys, args) : notReady()) : script;
    },
    limiter: redisLimiter(redis, false),
    ready: () => redis.status === 'ready',
    says: () => `its status is ${JSON.stringify(redis.status)}`,
  };
}

interface NodeRedisLike {
  isReady?: boolean;
  isOpen?: boolean;
  /** A cluster's: the master of a slot. */
  getSlotMaster?(slot: number): { host?: unknown; port?: unknown } | undefined;
  sendCommand(...args: unknown[]): Promise<unknown>;
}

/** RESP3's type byte of a map, `%`, by which node-redis maps a reply type to what it makes of it. */
const MAP_TYPE = 0x25;

/**
 * node-redis, a cluster routing each command to its key's master. A request's commands go without its timeout per
 * command (an `AbortSignal.timeout` each, most of its cost): the store bounds the wait itself. The state's replies of
 * type map come as lists, where a plain object would lose a field named `__proto__`.
 */
function nodeRedis(redis: NodeRedisLike): Made {
  const sendWith = (options: object): Send =>
    typeof redis.getSlotMaster === 'function'
      ? (args, key) => redis.sendCommand(key, false, args, options)
      : (args) => redis.sendCommand(args, options);
  const direct = sendWith({ timeout: undefined });
  const request: Send = (args, key) => (redis.isReady === false ? notReady() : direct(args, key));
  const call = sendWith({ typeMapping: { [MAP_TYPE]: Array } });
  const master = (key: string) => {
    try {
      const found = redis.getSlotMaster?.(slotOf(key));
      if (found && typeof found.host === 'string') return `${found.host}:${String(found.port)}`;
    } catch {
      // A cluster that has not read its slots yet: the slot is the route.
    }
    return `slot ${slotOf(key)}`;
  };
  return {
    name: 'node-redis',
    route: typeof redis.getSlotMaster === 'function' ? master : undefined,
    request,
    call,
    script: (name, onRequest) => evalOf(onRequest ? request : call, SCRIPTS[name]),
    limiter: redisLimiter(redis, true),
    ready: () => (typeof redis.isReady === 'boolean' ? redis.isReady : redis.isOpen === true),
    says: () =>
      redis.isOpen === true
        ? 'it is connecting'
        : 'it is not open: call `await client.connect()` before the app takes traffic',
  };
}

/** Valkey GLIDE's `GlideClient` or `GlideClusterClient`, which alone routes functions (and tells no master). */
function glide(client: { fcallWithRoute?: unknown }): Made {
  const [call, request] = [sendOf(client), batchedSendOf(client)];
  return {
    name: 'Valkey GLIDE',
    route: typeof client.fcallWithRoute === 'function' ? (key) => `slot ${slotOf(key)}` : undefined,
    request,
    call,
    script: (name, onRequest) => evalOf(onRequest ? request : call, SCRIPTS[name]),
    limiter: (options) => new GlideLimiter(options, client, request),
    ready: () => undefined,
    says: () => 'it has not answered a PING',
  };
}

/** A node-redis client or cluster; one without an 'error' listener is refused, as its first error would crash. */
function isNodeRedis(c: Record<string, unknown>): boolean {
  if (typeof c.isOpen !== 'boolean' || typeof c.eval !== 'function') return false;
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

/** The kinds of client, in the order they are told apart: GLIDE's alone have `customCommand` and `invokeScript`. */
const KINDS: readonly [(c: Record<string, unknown>) => boolean, (c: never) => Made][] = [
  [(c) => typeof c.customCommand === 'function' && typeof c.invokeScript === 'function', glide],
  [(c) => typeof c.defineCommand === 'function', ioredis],
  [isNodeRedis, nodeRedis],
];

const connections = new WeakMap<object, RedisConnection>();

/** The store's connection through `client`, refused at once when it is no client of the three packages. */
export function connectionOf(client: unknown): RedisConnection {
  if (typeof client === 'function') {
    check.invalid(
      'client',
      `is ${show(client)}, not a client: pass a connected instance, e.g. \`redisStore(new Redis(url))\`.`,
    );
  }
  const c = client as Record<string, unknown> | null;
  const connect = typeof c === 'object' && c !== null ? KINDS.find(([is]) => is(c))?.[1] : undefined;
  if (!connect) {
    const got = typeof client === 'object' && client !== null ? 'an object that is none of these' : show(client);
    return check.invalid(
      'client',
      'must be an ioredis (or iovalkey) client or Cluster, a node-redis (v4 or later) client or cluster, or a ' +
        `Valkey GLIDE GlideClient or GlideClusterClient; got ${got}.`,
    );
  }
  let made = connections.get(c as object);
  if (!made) {
    made = { ...connect(c as never), notConnected: once((tell, message) => tell(message)) };
    connections.set(c as object, made);
  }
  return made;
}

/** What Redis answers an `INCR` of a key that holds no integer count: not one, at the edge of 64 bits, no string. */
const NO_COUNT = /not an integer|would overflow|WRONGTYPE/;

/** Windows a limiter remembers at the most: beyond, the oldest is forgotten (its next hit reads its window again). */
const REMEMBERED_WINDOWS = 10_000;

/**
 * A key's window as an instance read it: its Redis key, its end, the end it is sure of (early by the read's wait), its
 * last count, and what reads an `INCR`'s answer on it, made once per window rather than per request.
 */
interface Window {
  readonly redisKey: string;
  readonly resetAt: number;
  readonly sureUntil: number;
  count: number;
  readonly counted: (answer: unknown) => Counts | Promise<Counts>;
  readonly failed: (error: unknown) => Promise<Counts>;
}

/** A client key's key in Redis. */
type RedisKeyOf = (key: string) => string;

/** A fixed window's hits on client keys, and `forget`, for a key whose window was reset. */
interface Hits {
  hit(key: string): Promise<Counts>;
  forget(key: string): void;
}

/** A limit's count and when its window ends, from Redis' count and ms left: at most a year, none the whole window. */
function redisCount(count: unknown, ttl: unknown, windowMs: number, now: number): Count {
  const left = Number(ttl);
  return { count: Number(count), resetAt: now + (left >= 0 ? Math.min(left, MAX_DURATION_MS) : windowMs) };
}

/** Each limit's count from Redis' count and ms left per limit. A peek's count of 0 has no window. */
export function countsOf(answer: unknown, windows: readonly number[], peeked = false): Counts {
  const now = Date.now();
  return windows.map((windowMs, i) => {
    const count = redisCount((answer as unknown[])[2 * i], (answer as unknown[])[2 * i + 1], windowMs, now);
    return peeked && !(count.count > 0) ? { count: count.count, resetAt: 0 } : count;
  });
}

/**
 * A fixed window's hits of `windowMs`, on rate-limiter-flexible's RateLimiterRedis keys and values, so that its reads
 * see the same counter. A key's first hit is the `hit` script, which answers when its window ends; while that end is
 * to come, a hit is its `INCR` alone. A count of 1, or not above the last one seen, means the window began anew
 * (reset, expired, deleted): its end is read again (`heal`). A key that holds no count is repaired by `hit`, which
 * counts a count below 1 once more, as the first of a new window.
 */
export function hitsOf({ request, script }: RedisConnection): (windowMs: number, keyOf: RedisKeyOf) => Hits {
  const [hit, heal] = [script('hit', true), script('heal', true)];
  return (windowMs, keyOf) => {
    const args = [String(windowMs)];
    const windows = new SweptMap<Window>((w) => w.sureUntil);
    const remembered = (key: string, redisKey: string, count: number, ttl: unknown, sent: number): Counts => {
      const now = Date.now();
      const counted = redisCount(count, ttl, windowMs, now);
      if (windows.size >= REMEMBERED_WINDOWS && !windows.has(key)) {
        windows.delete(windows.keys().next().value as string);
      }
      const { resetAt } = counted;
      const window: Window = {
        redisKey,
        resetAt,
        sureUntil: resetAt - (now - sent),
        count,
        counted: (answer) => counts(key, window, answer),
        failed: (error) => {
          if (NO_COUNT.test(String((error as Error)?.message))) return read(key);
          throw error;
        },
      };
      windows.add(key, window, now);
      return [counted];
    };
    const read = (key: string): Promise<Counts> => {
      const sent = Date.now();
      const redisKey = keyOf(key);
      return hit([redisKey], args).then((answer) => {
        const [count, ttl] = answer as unknown[];
        return remembered(key, redisKey, Number(count), ttl, sent);
      });
    };
    // An answer above the last one seen is this window's; otherwise the window began anew, and is read again.
    const counts = (key: string, known: Window, answer: unknown): Counts | Promise<Counts> => {
      const count = Number(answer);
      if (count > known.count) {
        known.count = count;
        return [{ count, resetAt: known.resetAt }];
      }
      if (!(count >= 1)) return read(key);
      const sent = Date.now();
      return heal([known.redisKey], args).then((ttl) => remembered(key, known.redisKey, count, ttl, sent));
    };
    return {
      hit: (key) => {
        const known = windows.get(key);
        if (known === undefined || known.sureUntil <= Date.now()) return read(key);
        return request(['INCR', known.redisKey], known.redisKey).then(known.counted, known.failed);
      },
      forget: (key) => windows.delete(key),
    };
  };
}
