// The Redis store: counters shared by every app instance, a bounded wait, and a chosen fallback while Redis fails.
import { createHash } from 'node:crypto';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { Checker, show } from '../../shared/check.js';
import type { Count, CountsAsync } from '../counter.js';
import { GlideLimiter, glideCommands, glideScript, hashRecord, isGlideClient, sendOf } from './glide.js';
import {
  CHANGES_KEPT,
  ENDED_PER_CHANGE,
  HISTORY_MAX,
  newEpoch,
  type RuntimeState,
  stamped,
  type StateUpdate,
} from '../state.js';
import { ENDED_PER_CALL, type RequestRecords } from '../request-store.js';
import type { Store, StoreFailurePolicy } from '../store.js';
import type { CountsLimitsAsync, LimitsSpec } from '../memory/windows.js';

/**
 * An ioredis (or iovalkey) `Redis` or `Cluster` client, a node-redis (v4 or later) client or cluster, or a Valkey
 * GLIDE `GlideClient` or `GlideClusterClient`. Typed loosely, so that none of these packages is needed to compile:
 * the package loads none of them, it only uses the client it is given.
 */
export type RedisClient = { eval(...args: never[]): unknown } | { customCommand(...args: never[]): unknown };

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
   * Longest wait for Redis, in milliseconds, of one whole request (every Redis call it makes), counted while this
   * process waits with nothing else to do (up to 5 × `timeoutMs` however busy it is): a request that Redis has not
   * answered by then is handled as `onFailure` says. Default: `200`.
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

/**
 * The package that made the client: ioredis (or iovalkey, its fork: one API), node-redis, which rate-limiter-flexible
 * must be told, or Valkey GLIDE, whose commands the store sends itself ({@link glideCommands}).
 */
type ClientKind = 'ioredis' | 'node-redis' | 'glide';

function kindOf(client: unknown): ClientKind {
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
 * One hit: creates the key with its window's expiry when it has none, counts, and answers the count and the time
 * the window has left. The same key and value as rate-limiter-flexible's RateLimiterRedis, which serves the reads
 * and writes of the package's other counters, so both kinds of call see one counter.
 */
const HIT_SCRIPT = `redis.call('set', KEYS[1], 0, 'EX', ARGV[1], 'NX')
local count = redis.call('incr', KEYS[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[1])
  ttl = 1000 * ARGV[1]
end
return {count, ttl}`;
const HIT_SHA = createHash('sha1').update(HIT_SCRIPT).digest('hex');

type Hit = (key: string, seconds: number) => Promise<[unknown, unknown]>;

/**
 * One request on the limits of an endpoint (sliding windows, or several limits), all or none: KEYS are one key per
 * limit, ARGV the window kind (`s`liding or `f`ixed), then each limit and its window in milliseconds. Times are
 * Redis' own (`TIME`), so that instances with skewed clocks agree. A sliding limit's key is a list of the times of
 * the requests counted, oldest first: those at or before `now - window` are dropped, and the request passes while
 * fewer than `limit` are left. A fixed limit's key is a count that expires at the end of its window. The request is
 * counted on every key only when every limit allows it. Answers each limit's count (`limit + 1` for one that
 * refused) and the milliseconds until it frees a request.
 */
const LIMITS_SCRIPT = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local sliding = ARGV[1] == 's'
local n = #KEYS
local counts, waits, allowed = {}, {}, true
for i = 1, n do
  local key, limit, window = KEYS[i], tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local count, wait = 0, window
  if sliding then
    local from = now - window
    local oldest = redis.call('lindex', key, 0)
    while oldest and tonumber(oldest) <= from do
      redis.call('lpop', key)
      oldest = redis.call('lindex', key, 0)
    end
    count = redis.call('llen', key)
    if oldest then wait = tonumber(oldest) + window - now end
  else
    count = tonumber(redis.call('get', key) or '0')
    local ttl = redis.call('pttl', key)
    if count > 0 and ttl > 0 then wait = ttl end
  end
  if count >= limit then
    allowed = false
    count = limit + 1
  end
  counts[i], waits[i] = count, wait
end
if allowed then
  for i = 1, n do
    local key, window = KEYS[i], tonumber(ARGV[2 * i + 1])
    if sliding then
      redis.call('rpush', key, now)
      redis.call('pexpire', key, window)
    elseif redis.call('incr', key) == 1 then
      redis.call('pexpire', key, window)
    end
    counts[i] = counts[i] + 1
  end
end
local answer = {}
for i = 1, n do
  answer[2 * i - 1], answer[2 * i] = counts[i], waits[i]
end
return answer`;
const LIMITS_SHA = createHash('sha1').update(LIMITS_SCRIPT).digest('hex');

/**
 * The state of an endpoint's limits for one client, read without counting (LIMITS_SCRIPT's first half): KEYS and
 * ARGV as LIMITS_SCRIPT's. A sliding limit's requests that left the window are dropped, as a request would drop them.
 * Answers each limit's count and the milliseconds until it frees a request (0 with none counted).
 */
const PEEK_SCRIPT = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local sliding = ARGV[1] == 's'
local answer = {}
for i = 1, #KEYS do
  local key, window = KEYS[i], tonumber(ARGV[2 * i + 1])
  local count, wait = 0, 0
  if sliding then
    local from = now - window
    local oldest = redis.call('lindex', key, 0)
    while oldest and tonumber(oldest) <= from do
      redis.call('lpop', key)
      oldest = redis.call('lindex', key, 0)
    end
    count = redis.call('llen', key)
    if oldest then wait = tonumber(oldest) + window - now end
  else
    count = tonumber(redis.call('get', key) or '0')
    local ttl = redis.call('pttl', key)
    if count > 0 and ttl > 0 then wait = ttl else count = 0 end
  end
  answer[2 * i - 1], answer[2 * i] = count, wait
end
return answer`;
const PEEK_SHA = createHash('sha1').update(PEEK_SCRIPT).digest('hex');
/** Forgets a client's keys of an endpoint's limits; answers how many there were. */
const FORGET_SCRIPT = `return redis.call('del', unpack(KEYS))`;
const FORGET_SHA = createHash('sha1').update(FORGET_SCRIPT).digest('hex');

interface IoRedisLike {
  status?: string;
  defineCommand(name: string, definition: { numberOfKeys?: number; lua: string }): void;
  listingLimitsHit?: (key: string, seconds: number) => Promise<[unknown, unknown]>;
}

interface NodeRedisLike {
  isReady?: boolean;
  evalSha(sha: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
}

const notReady = () => Promise.reject(new Error('the Redis client is not connected'));

/** RESP3's type byte of a map, `%`, by which node-redis maps a reply type to what it makes of it. */
const MAP_TYPE = 0x25;

/**
 * A script run by node-redis: EVALSHA, and EVAL when Redis does not have the script yet. While the client is not
 * connected it fails at once, unless `queued` (the runtime state's changes, which wait in the client's queue as its
 * other commands do).
 */
function nodeRedisScript(redis: NodeRedisLike, script: string, sha: string, queued = false) {
  return (keys: string[], args: string[]): Promise<unknown> => {
    if (redis.isReady === false && !queued) return notReady();
    const options = { keys, arguments: args };
    return redis.evalSha(sha, options).catch((error: unknown) => {
      if (!String((error as Error)?.message).includes('NOSCRIPT')) throw error;
      return redis.eval(script, options);
    });
  };
}

/**
 * How one client runs hits: with ioredis a command defined once (EVALSHA, loading the script when Redis lacks it),
 * with node-redis and GLIDE EVALSHA with a fallback to EVAL. Each hit is sent when it is asked for, in the order of
 * every other call of the store, so that the store's order of commands is the order the requests asked in. While
 * the client is not connected, hits fail at once instead of queueing (GLIDE does not tell: its hits wait for it).
 */
function hitsOf(client: unknown, kind: ClientKind): Hit {
  if (kind === 'glide') {
    const run = glideScript(sendOf(client), HIT_SCRIPT, HIT_SHA);
    return (key, seconds) => run([key], [String(seconds)]) as Promise<[unknown, unknown]>;
  }
  if (kind === 'node-redis') {
    const run = nodeRedisScript(client as NodeRedisLike, HIT_SCRIPT, HIT_SHA);
    return (key, seconds) => run([key], [String(seconds)]) as Promise<[unknown, unknown]>;
  }
  const redis = client as IoRedisLike;
  if (typeof redis.listingLimitsHit !== 'function') {
    redis.defineCommand('listingLimitsHit', { numberOfKeys: 1, lua: HIT_SCRIPT });
  }
  const hit = redis.listingLimitsHit as NonNullable<IoRedisLike['listingLimitsHit']>;
  return (key, seconds) => (redis.status === 'ready' ? hit.call(redis, key, seconds) : notReady());
}

/** The scripts of an endpoint's limits, each run as {@link hitsOf} runs hits: keys, then arguments. */
interface LimitsScripts {
  readonly count: (keys: string[], args: string[]) => Promise<unknown[]>;
  readonly peek: (keys: string[], args: string[]) => Promise<unknown[]>;
  readonly forget: (keys: string[]) => Promise<unknown>;
}

/** A script with a variable number of keys, on one client; while the client is not connected, it fails at once. */
function scriptOf(client: unknown, kind: ClientKind, name: string, lua: string, sha: string) {
  if (kind === 'glide')
    return glideScript(sendOf(client), lua, sha) as (k: string[], a: string[]) => Promise<unknown[]>;
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
  return (keys: string[], args: string[]) =>
    redis.status === 'ready' ? run.call(redis, keys.length, ...keys, ...args) : notReady();
}

function limitsScriptsOf(client: unknown, kind: ClientKind): LimitsScripts {
  const forget = scriptOf(client, kind, 'listingLimitsForget', FORGET_SCRIPT, FORGET_SHA);
  return {
    count: scriptOf(client, kind, 'listingLimitsLimits', LIMITS_SCRIPT, LIMITS_SHA),
    peek: scriptOf(client, kind, 'listingLimitsPeek', PEEK_SCRIPT, PEEK_SHA),
    forget: (keys) => forget(keys, []),
  };
}

/**
 * The Redis counter of an endpoint's limits: one LIMITS_SCRIPT run per request, on one key per limit,
 * `<prefix>:<counter name>:{<client key>}:<s|f><window seconds>`. The client key is the keys' hash tag, so that a
 * Cluster keeps the keys of one request on one slot.
 */
class RedisLimits implements CountsLimitsAsync {
  readonly countsAsync = true;
  readonly #prefix: string;
  readonly #suffixes: readonly string[];
  readonly #args: readonly string[];

  constructor(
    prefix: string,
    spec: LimitsSpec,
    private readonly scripts: LimitsScripts,
  ) {
    const kind = spec.window === 'sliding' ? 's' : 'f';
    this.#prefix = `${prefix}:${spec.name}:{`;
    this.#suffixes = spec.limits.map(({ windowMs }) => `}:${kind}${windowMs / 1000}`);
    this.#args = [kind, ...spec.limits.flatMap(({ limit, windowMs }) => [String(limit), String(windowMs)])];
  }

  #keys(key: string): string[] {
    return this.#suffixes.map((suffix) => this.#prefix + key + suffix);
  }

  count(key: string): Promise<readonly Count[]> {
    return this.scripts.count(this.#keys(key), this.#args as string[]).then((answer) => {
      const now = Date.now();
      return this.#suffixes.map((_, i) => ({
        count: Number(answer[2 * i]),
        resetAt: now + Number(answer[2 * i + 1]),
      }));
    });
  }

  peek(key: string): Promise<readonly Count[]> {
    return this.scripts.peek(this.#keys(key), this.#args as string[]).then((answer) => {
      const now = Date.now();
      return this.#suffixes.map((_, i) => {
        const count = Number(answer[2 * i]);
        return { count, resetAt: count > 0 ? now + Number(answer[2 * i + 1]) : 0 };
      });
    });
  }

  reset(key: string): Promise<boolean> {
    return this.scripts.forget(this.#keys(key)).then((deleted) => Number(deleted) > 0);
  }
}

/** rate-limiter-flexible's Redis limiter, whose hits run the store's own script in one command. */
class RedisLimiter extends RateLimiterRedis implements CountsAsync {
  readonly countsAsync = true;

  constructor(
    options: ConstructorParameters<typeof RateLimiterRedis>[0],
    private readonly hits: Hit,
  ) {
    super(options);
  }

  count(key: string): Promise<Count> {
    return this.hits(this.getKey(key), this.duration).then(([count, ttl]) => ({
      count: Number(count),
      resetAt: Date.now() + Number(ttl),
    }));
  }
}

/** How often each instance reads what changed in the runtime state: a change reaches every instance within this. */
export const REFRESH_MS = 250;

/**
 * A change of one record of the runtime state, atomic with what follows from it. KEYS: the records' hash, the
 * changes (a sorted set: each changed field, by the sequence number of its last change), the ends (a sorted set:
 * each record that ends, by its end), the history. ARGV: field, value ('' removes), end ('' for never), when
 * ('always', 'absent' or 'sha1'), the SHA-1 of the text expected for 'sha1', the history entry ('' for none), the
 * instance's clock, a new epoch (taken when the hash has none), the history's length, the changes kept, the ended
 * records dropped per change.
 *
 * A change that applies takes the next sequence number and writes the record with it as its JSON's first member.
 * A few ended records are dropped each time, and the changes kept are trimmed to the newest; both count as changes
 * (so that a follower's copy drops them too), and `#floor` says up to which sequence number changes were trimmed: a
 * follower behind it reads the whole hash. Every step is O(log n) in the records kept.
 */
const CHANGE_SCRIPT = `local record, changes, ends, history = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local field, value, endsAt, when, expected, event = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local now = tonumber(ARGV[7])
local epoch = redis.call('hget', record, '#epoch')
if not epoch then
  epoch = ARGV[8]
  redis.call('hset', record, '#epoch', epoch)
end
local seq = tonumber(redis.call('hget', record, '#seq') or '0') or 0
local before = redis.call('hget', record, field)
local ending = redis.call('zscore', ends, field)
local active = before and (not ending or tonumber(ending) > now)
local applies
if when == 'sha1' then applies = before and redis.sha1hex(before) == expected
elseif when == 'absent' then applies = not active
else applies = value ~= '' or active end
local gone = {}
if before and not active and not applies then gone[1] = field end
for _, f in ipairs(redis.call('zrangebyscore', ends, '-inf', now, 'LIMIT', 0, tonumber(ARGV[11]))) do
  if f ~= field then gone[#gone + 1] = f end
end
local stored = before
if applies or #gone > 0 then
  seq = seq + 1
  redis.call('hset', record, '#seq', seq)
end
for _, f in ipairs(gone) do
  redis.call('hdel', record, f)
  redis.call('zrem', ends, f)
  redis.call('zadd', changes, seq, f)
  if f == field then stored = false end
end
if applies then
  if value == '' then
    redis.call('hdel', record, field)
    redis.call('zrem', ends, field)
    stored = false
  else
    stored = '{"seq":' .. seq .. ',' .. string.sub(value, 2)
    redis.call('hset', record, field, stored)
    if endsAt == '' then redis.call('zrem', ends, field) else redis.call('zadd', ends, endsAt, field) end
  end
  redis.call('zadd', changes, seq, field)
  if event ~= '' then
    redis.call('lpush', history, event)
    redis.call('ltrim', history, 0, tonumber(ARGV[9]) - 1)
  end
end
local over = redis.call('zcard', changes) - tonumber(ARGV[10])
if over > 0 then
  local last = redis.call('zrange', changes, over - 1, over - 1, 'WITHSCORES')
  redis.call('zremrangebyrank', changes, 0, over - 1)
  redis.call('hset', record, '#floor', last[2])
end
if not active then before = false end
return {applies and 1 or 0, before or '', stored or '', seq, epoch}`;

/**
 * The grant requests' Redis keys, in the order every request script takes them (all on the runtime hash tag): the
 * records (a hash), the sequence number, the pending ones and the decided ones (sorted sets by sequence number) and
 * their ends (sorted sets by end), two lexicographic indexes (pending ones by client key and network; every one by
 * client key and network, then sequence number), the groups (a sorted set of how many each has), every one by group
 * then sequence number (lexicographic), and each one's index entries (a hash).
 */
const REQUEST_KEYS = [
  'requests',
  'requests-seq',
  'requests:pending',
  'requests:pending-ends',
  'requests:decided',
  'requests:decided-ends',
  'requests:pending-by',
  'requests:by',
  'requests:groups',
  'requests:group-by',
  'requests:meta',
] as const;

/** What the request scripts share: the keys, and the id at the end of an index entry. */
const REQUEST_COMMON = `local R, SEQ, P, PE, D, DE, PB, BY, G, GB, M =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local function lastPart(member) return string.match(member, '([^\\n]*)$') end
`;

/** How the change script indexes and removes one request. */
const REQUEST_INDEXING = `local function pad(seq) return string.format('%016d', seq) end
local function index(id, seq, status, key, net, group, ends)
  local s = pad(seq)
  if status == 'pending' then
    redis.call('zadd', P, seq, id)
    redis.call('zadd', PE, ends, id)
    redis.call('zadd', PB, 0, 'k\\n' .. key .. '\\n' .. id)
    if net ~= '' then redis.call('zadd', PB, 0, 'n\\n' .. net .. '\\n' .. id) end
  else
    redis.call('zadd', D, seq, id)
    redis.call('zadd', DE, ends, id)
  end
  redis.call('zadd', BY, 0, 'k\\n' .. key .. '\\n' .. s .. '\\n' .. id)
  if net ~= '' then redis.call('zadd', BY, 0, 'n\\n' .. net .. '\\n' .. s .. '\\n' .. id) end
  redis.call('zadd', GB, 0, group .. '\\n' .. s .. '\\n' .. id)
  redis.call('zincrby', G, 1, group)
  redis.call('hset', M, id, seq .. '\\n' .. status .. '\\n' .. key .. '\\n' .. net .. '\\n' .. group)
end
local function unindex(id)
  local meta = redis.call('hget', M, id)
  if not meta then return end
  redis.call('hdel', M, id)
  local seq, _, key, net, group = string.match(meta, '^(%d+)\\n(%l+)\\n([^\\n]*)\\n([^\\n]*)\\n([^\\n]*)$')
  if not seq then return end
  local s = pad(tonumber(seq))
  for _, z in ipairs({P, PE, D, DE}) do redis.call('zrem', z, id) end
  redis.call('zrem', PB, 'k\\n' .. key .. '\\n' .. id, 'n\\n' .. net .. '\\n' .. id)
  redis.call('zrem', BY, 'k\\n' .. key .. '\\n' .. s .. '\\n' .. id, 'n\\n' .. net .. '\\n' .. s .. '\\n' .. id)
  redis.call('zrem', GB, group .. '\\n' .. s .. '\\n' .. id)
  if tonumber(redis.call('zincrby', G, -1, group)) <= 0 then redis.call('zrem', G, group) end
end
local function remove(id)
  unindex(id)
  redis.call('hdel', R, id)
end
`;

/**
 * A change of the grant requests, every step O(log n) in the requests kept. ARGV[1] is the change:
 *
 * `file`, id, value (without seq), client key, network ('' for none), group, end, now, pending per key, pending per
 * network, most kept, ended dropped per call: files a new pending request unless its key or its network has as many
 * pending as it may (their ended ones dropped first); with the most kept, one is dropped first (an ended one, else
 * the oldest of the group with the most); answers 'done', 'key', 'network' or 'conflict' (the id is taken).
 *
 * `put`, id, value, expected, status, client key, network, group, end, now, ended dropped per call: writes `value`
 * over `expected` (a decision, or one undone), with the next sequence number unless it has one; answers the text
 * written, or '' when the request holds another value.
 */
const REQUEST_CHANGE_SCRIPT = `${REQUEST_COMMON}${REQUEST_INDEXING}local function dropEnded(now, n)
  for _, z in ipairs({PE, DE}) do
    for _, id in ipairs(redis.call('zrangebyscore', z, '-inf', now, 'LIMIT', 0, n)) do remove(id) end
  end
end
local function stamp(value)
  local seq = string.match(value, '^{"seq":(%d+),')
  if seq then return value, tonumber(seq) end
  seq = redis.call('incr', SEQ)
  return '{"seq":' .. seq .. ',' .. string.sub(value, 2), seq
end
if ARGV[1] == 'put' then
  local id = ARGV[2]
  if redis.call('hget', R, id) ~= ARGV[4] then return '' end
  local stored, seq = stamp(ARGV[3])
  unindex(id)
  redis.call('hset', R, id, stored)
  index(id, seq, ARGV[5], ARGV[6], ARGV[7], ARGV[8], tonumber(ARGV[9]))
  dropEnded(tonumber(ARGV[10]), tonumber(ARGV[11]))
  return stored
end
local id, value, key, net, group = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local ends, now = tonumber(ARGV[7]), tonumber(ARGV[8])
dropEnded(now, tonumber(ARGV[12]))
if redis.call('hexists', R, id) == 1 then return 'conflict' end
local function pendingOf(kind, value)
  local n = 0
  local of = kind .. '\\n' .. value
  for _, m in ipairs(redis.call('zrangebylex', PB, '[' .. of .. '\\n', '(' .. of .. '\\11')) do
    local pending = lastPart(m)
    local ending = redis.call('zscore', PE, pending)
    if ending and tonumber(ending) <= now then remove(pending) else n = n + 1 end
  end
  return n
end
if pendingOf('k', key) >= tonumber(ARGV[9]) then return 'key' end
if net ~= '' and pendingOf('n', net) >= tonumber(ARGV[10]) then return 'network' end
local function dropOne()
  for _, z in ipairs({PE, DE}) do
    local ended = redis.call('zrangebyscore', z, '-inf', now, 'LIMIT', 0, 1)[1]
    if ended then
      remove(ended)
      return true
    end
  end
  local top = redis.call('zrevrange', G, 0, 0)[1]
  if not top then return false end
  local oldest = redis.call('zrangebylex', GB, '[' .. top .. '\\n', '(' .. top .. '\\11', 'LIMIT', 0, 1)[1]
  if oldest then remove(lastPart(oldest)) else redis.call('zrem', G, top) end
  return true
end
while redis.call('hlen', R) >= tonumber(ARGV[11]) and dropOne() do end
local stored, seq = stamp(value)
redis.call('hset', R, id, stored)
index(id, seq, 'pending', key, net, group, ends)
return 'done'`;

/**
 * Reads of the grant requests, a page at a time. ARGV[1] is the read: `page`, status, offset, limit, now: how many
 * of that status are kept and not ended, then the rows from `offset` (pending ones oldest change first, past the
 * ended ones, which are the oldest; decided ones newest first); `find`, 'k' or 'n', client key or network, limit:
 * its requests, newest change first.
 */
const REQUEST_READ_SCRIPT = `${REQUEST_COMMON}local ids, answer = {}, {}
if ARGV[1] == 'page' then
  local z, ze = P, PE
  if ARGV[2] == 'decided' then z, ze = D, DE end
  local ended = redis.call('zcount', ze, '-inf', ARGV[5])
  local offset, limit = tonumber(ARGV[3]), tonumber(ARGV[4])
  answer[1] = redis.call('zcard', z) - ended
  if limit > 0 then
    if ARGV[2] == 'decided' then ids = redis.call('zrevrange', z, offset, offset + limit - 1)
    else ids = redis.call('zrange', z, ended + offset, ended + offset + limit - 1) end
  end
else
  local of = ARGV[2] .. '\\n' .. ARGV[3]
  local found = redis.call('zrevrangebylex', BY, '(' .. of .. '\\11', '[' .. of .. '\\n', 'LIMIT', 0, tonumber(ARGV[4]))
  for i, m in ipairs(found) do ids[i] = lastPart(m) end
end
for _, id in ipairs(ids) do answer[#answer + 1] = redis.call('hget', R, id) or '' end
return answer`;

const CHANGE_SHA = createHash('sha1').update(CHANGE_SCRIPT).digest('hex');
const REQUEST_CHANGE_SHA = createHash('sha1').update(REQUEST_CHANGE_SCRIPT).digest('hex');
const REQUEST_READ_SHA = createHash('sha1').update(REQUEST_READ_SCRIPT).digest('hex');

/** The scripts of the store, for the test that every script declares the keys it touches. @internal */
export const SCRIPTS = {
  hit: HIT_SCRIPT,
  limits: LIMITS_SCRIPT,
  peek: PEEK_SCRIPT,
  forget: FORGET_SCRIPT,
  change: CHANGE_SCRIPT,
  changeRequests: REQUEST_CHANGE_SCRIPT,
  readRequests: REQUEST_READ_SCRIPT,
} as const;

/** The commands the runtime state needs of a client, the same for every kind. */
interface StateCommands {
  change(keys: string[], args: string[]): Promise<unknown>;
  changeRequests(keys: string[], args: string[]): Promise<unknown>;
  readRequests(keys: string[], args: string[]): Promise<unknown>;
  hget(key: string, field: string): Promise<string | null>;
  hset(key: string, field: string, value: string): Promise<unknown>;
  hmget(key: string, fields: string[]): Promise<(string | null)[]>;
  hgetall(key: string): Promise<Record<string, string>>;
  zrangebyscore(key: string, min: string, max: string): Promise<string[]>;
  lrange(key: string): Promise<string[]>;
  lrem(key: string, value: string): Promise<number>;
  hvals(key: string): Promise<string[]>;
  hdel(key: string, fields: string[]): Promise<unknown>;
}

function commandsOf(client: unknown, kind: ClientKind): StateCommands {
  if (kind === 'glide') {
    const send = sendOf(client);
    return {
      change: glideScript(send, CHANGE_SCRIPT, CHANGE_SHA),
      changeRequests: glideScript(send, REQUEST_CHANGE_SCRIPT, REQUEST_CHANGE_SHA),
      readRequests: glideScript(send, REQUEST_READ_SCRIPT, REQUEST_READ_SHA),
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
      lRem(key: string, count: number, value: string): Promise<number>;
      hVals(key: string): Promise<string[]>;
      hDel(key: string, fields: string[]): Promise<unknown>;
      withTypeMapping?(mapping: Record<number, unknown>): { hGetAll(key: string): Promise<unknown> };
    };
    // node-redis makes a hash a plain object, where a field named `__proto__` would vanish: read as a list where it
    // can (v5 on), its replies of type map (RESP3's `%`, its RESP_TYPES.MAP) mapped to arrays.
    const asList = redis.withTypeMapping?.call(redis, { [MAP_TYPE]: Array });
    const change = nodeRedisScript(redis, CHANGE_SCRIPT, CHANGE_SHA, true);
    return {
      change,
      changeRequests: nodeRedisScript(redis, REQUEST_CHANGE_SCRIPT, REQUEST_CHANGE_SHA, true),
      readRequests: nodeRedisScript(redis, REQUEST_READ_SCRIPT, REQUEST_READ_SHA, true),
      hget: (key, field) => redis.hGet(key, field),
      hset: (key, field, value) => redis.hSet(key, field, value),
      hmget: (key, fields) => redis.hmGet(key, fields),
      hgetall: (key) => (asList ? asList.hGetAll(key).then(hashRecord) : redis.hGetAll(key)),
      zrangebyscore: (key, min, max) => redis.zRangeByScore(key, min, max),
      lrange: (key) => redis.lRange(key, 0, -1),
      lrem: (key, value) => redis.lRem(key, 1, value),
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
    lrem(key: string, count: number, value: string): Promise<number>;
    hvals(key: string): Promise<string[]>;
    hdel(key: string, ...fields: string[]): Promise<unknown>;
  };
  return {
    change: ioRedisScript(redis, 'listingLimitsChange', CHANGE_SCRIPT),
    changeRequests: ioRedisScript(redis, 'listingLimitsChangeRequests', REQUEST_CHANGE_SCRIPT),
    readRequests: ioRedisScript(redis, 'listingLimitsReadRequests', REQUEST_READ_SCRIPT),
    hget: (key, field) => redis.hget(key, field),
    hset: (key, field, value) => redis.hset(key, field, value),
    hmget: (key, fields) => redis.hmget(key, ...fields),
    hgetall: (key) => redis.hgetall(key),
    zrangebyscore: (key, min, max) => redis.zrangebyscore(key, min, max),
    lrange: (key) => redis.lrange(key, 0, -1),
    lrem: (key, value) => redis.lrem(key, 1, value),
    hvals: (key) => redis.hvals(key),
    hdel: (key, fields) => redis.hdel(key, ...fields),
  };
}

/**
 * A state script run by ioredis: a command defined once (EVALSHA, loading the script when Redis lacks it), sent
 * whatever the client's state, so that a change made while it reconnects waits in its queue as other commands do.
 */
function ioRedisScript(redis: IoRedisLike, name: string, lua: string) {
  const commands = redis as unknown as Record<string, ((...args: (string | number)[]) => Promise<unknown>) | undefined>;
  if (typeof commands[name] !== 'function') redis.defineCommand(name, { lua });
  const run = commands[name] as (...args: (string | number)[]) => Promise<unknown>;
  return (keys: string[], args: string[]) => run.call(redis, keys.length, ...keys, ...args);
}

/**
 * Fields of the records' hash that are the state's own, not records (their names start with `#`). `#copy` is marked
 * anew by the first instance that finds the state replaced by a copy behind it (its sequence number went back), so
 * that every instance reads that copy whole as a replaced state, even one that reads it only after new changes have
 * brought the sequence number past where it was.
 */
const META = ['#epoch', '#seq', '#floor', '#copy'];

/** A number the state keeps, or 0 for none (or for a value that is not one). */
function counted(value: string | null | undefined): number {
  const n = Number(value ?? 0);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/**
 * The runtime state in Redis, under the store's prefix, on one hash tag so that a Cluster keeps it on one node: the
 * records' hash (`#epoch`, `#seq` and `#floor` besides the records), the changes and the ends (sorted sets), the
 * history (a list) and the grant requests (a hash, and its sequence number). Each instance reads the hash's
 * `#epoch`, `#seq`, `#floor` and `#copy` every REFRESH_MS, in one command; when the sequence number moved on, the
 * fields changed since its last read and their values, two more; when the epoch or the copy is another, the sequence
 * number went back, or the instance is behind the changes kept, the whole hash.
 */
function redisState(redis: StateCommands, prefix: string): RuntimeState {
  const record = `${prefix}:{runtime}:record`;
  const changes = `${prefix}:{runtime}:changes`;
  const ends = `${prefix}:{runtime}:ends`;
  const history = `${prefix}:{runtime}:history`;

  type Position = { readonly epoch: string | undefined; readonly seq: number; readonly copy: string | undefined };
  const whole = async (known: Position | undefined): Promise<[StateUpdate, Position]> => {
    const all = await redis.hgetall(record);
    const epoch = all['#epoch'];
    const seq = counted(all['#seq']);
    const copy = all['#copy'];
    const records = new Map<string, string>();
    for (const [field, value] of Object.entries(all)) if (!field.startsWith('#')) records.set(field, value);
    const replaced = known?.epoch !== undefined && (epoch !== known.epoch || seq < known.seq || copy !== known.copy);
    return [
      { kind: replaced ? 'replaced' : 'whole', epoch, seq, records, copy },
      { epoch, seq, copy },
    ];
  };
  // Plain reads, not scripts: what an instance reads in the background is told apart from what requests cost.
  const read = async (known: Position | undefined): Promise<[StateUpdate, Position] | undefined> => {
    const [epochText, seqText, floorText, copyText] = await redis.hmget(record, META);
    const epoch = epochText ?? undefined;
    const seq = counted(seqText);
    const copy = copyText ?? undefined;
    if (known?.epoch !== undefined && epoch === known.epoch && seq < known.seq) {
      await redis.hset(record, '#copy', newEpoch());
      return whole(known);
    }
    if (known === undefined) return whole(known);
    const moved = epoch !== known.epoch || copy !== known.copy || seq < known.seq;
    if (moved || known.seq < counted(floorText)) return whole(known);
    if (seq === known.seq) return undefined;
    // The state's own fields are never records, whatever the changes say.
    const fields = (await redis.zrangebyscore(changes, `(${known.seq}`, String(seq))).filter((f) => !f.startsWith('#'));
    const values = fields.length > 0 ? await redis.hmget(record, fields) : [];
    const records = new Map(fields.map((f, i) => [f, values[i] ?? null]));
    return [
      { kind: 'changes', epoch, seq, records, copy },
      { epoch, seq, copy },
    ];
  };

  return {
    async change(c) {
      const when = typeof c.when === 'object' ? 'sha1' : c.when;
      const expected = typeof c.when === 'object' ? c.when.sha1 : '';
      if (c.value !== null) stamped(c.value, 0); // refuses what is not a record's JSON object, before Redis does
      const answer = (await redis.change(
        [record, changes, ends, history],
        [
          c.field,
          c.value ?? '',
          c.endsAt === null ? '' : String(c.endsAt),
          when,
          expected,
          c.event ?? '',
          String(c.now),
          newEpoch(),
          String(HISTORY_MAX),
          String(CHANGES_KEPT),
          String(ENDED_PER_CHANGE),
        ],
      )) as [unknown, unknown, unknown, unknown, unknown];
      const text = (value: unknown) => (value === '' || value === null ? undefined : String(value));
      return {
        changed: Number(answer[0]) === 1,
        before: text(answer[1]),
        stored: text(answer[2]),
        seq: Number(answer[3]),
        epoch: String(answer[4]),
      };
    },
    follow(apply) {
      let known: Position | undefined;
      let reading = 0;
      // Reads run one after another: a sync() reads after every read begun before it. The calls made while a read
      // waits for its turn share it, so that however many ask at once, at most two reads are under way.
      let last: Promise<void> = Promise.resolve();
      let waiting: Promise<void> | undefined;
      const sync = () => {
        if (waiting) return waiting;
        reading++;
        const next = last
          .then(() => {
            waiting = undefined;
            return read(known);
          })
          .then((read) => {
            if (!read) return;
            known = read[1];
            apply(read[0]);
          })
          .finally(() => reading--);
        waiting = next;
        last = next.catch(() => {});
        return next;
      };
      // While Redis fails, the instance keeps what it last read; a read still waiting is not doubled.
      const timer = setInterval(() => {
        if (reading === 0) sync().catch(() => {});
      }, REFRESH_MS);
      timer.unref();
      return { sync, stop: () => clearInterval(timer) };
    },
    history: () => redis.lrange(history),
    removeHistory: async (entry) => (await redis.lrem(history, entry)) > 0,
    requests: requestsOf(redis, prefix),
  };
}

/** The grant requests in Redis: each change one script, each read one script, every step O(log n). */
function requestsOf(redis: StateCommands, prefix: string): RequestRecords {
  const keys = REQUEST_KEYS.map((key) => `${prefix}:{runtime}:${key}`);
  const read = async (args: string[]) => ((await redis.readRequests(keys, args)) as unknown[]).map(String);
  const texts = (values: string[]) => values.filter((value) => value !== '');
  return {
    file: async (id, value, meta, bounds, now) => {
      const answer = await redis.changeRequests(keys, [
        'file',
        id,
        value,
        meta.key,
        meta.network,
        meta.group,
        String(meta.endsAt),
        String(now),
        String(bounds.perKey),
        String(bounds.perNetwork),
        String(bounds.max),
        String(ENDED_PER_CALL),
      ]);
      const result = String(answer);
      return result === 'done' || result === 'key' || result === 'network' ? result : 'conflict';
    },
    put: async (id, value, expected, meta, now) => {
      const args = [meta.status, meta.key, meta.network, meta.group, String(meta.endsAt)];
      const answer = await redis.changeRequests(keys, [
        'put',
        id,
        value,
        expected,
        ...args,
        String(now),
        String(ENDED_PER_CALL),
      ]);
      return answer === '' || answer === null ? undefined : String(answer);
    },
    get: (id) => redis.hget(keys[0] as string, id).then((value) => value ?? undefined),
    page: async (status, offset, limit, now) => {
      const [total, ...values] = await read(['page', status, String(offset), String(limit), String(now)]);
      return { total: Math.max(Number(total), 0), values: texts(values) };
    },
    find: async (by, value, limit) => texts(await read(['find', by === 'key' ? 'k' : 'n', value, String(limit)])),
  };
}

/**
 * A store that counts in Redis, so that every app instance shares each counter. One atomic script run per counted
 * request, none for a client Redis has already refused in the window. Keys are
 * `<prefix>:<counter name>:<client key>`, where the client key is a hash of the Authorization value or the client
 * IP, never the credential itself.
 * No request waits for Redis longer than `timeoutMs` of idle waiting, all its Redis calls together (time this
 * process is busy does not count, up to 5 × `timeoutMs`); while Redis fails, requests
 * are handled as `onFailure` says, and counting returns to Redis by itself once the client has reconnected.
 *
 * The client is yours to create, connect and close; give an ioredis or node-redis client an `'error'` listener, as
 * both packages ask (a node-redis client without one is refused, since it would crash the process when Redis goes
 * away). A GLIDE client has no events, and needs none.
 */
export function redisStore(client: RedisClient, options?: RedisStoreOptions): Store {
  const kind = kindOf(client);
  const { prefix, timeoutMs, onFailure } = checkOptions(options);
  const hits = hitsOf(client, kind);
  const store = (counter: Parameters<Store>[0]) => {
    const keyPrefix = `${prefix}:${counter.name}`;
    const points = counter.limit;
    const duration = counter.windowMs / 1000;
    if (kind === 'glide') return new GlideLimiter({ keyPrefix, points, duration }, client, hits);
    return new RedisLimiter(
      {
        storeClient: client,
        useRedisPackage: kind === 'node-redis',
        // While the client is reconnecting, fail at once instead of queueing commands that would only time out.
        rejectIfRedisNotReady: true,
        keyPrefix,
        points,
        duration,
      },
      hits,
    );
  };
  const state = redisState(commandsOf(client, kind), prefix);
  const scripts = limitsScriptsOf(client, kind);
  const limits = (counter: LimitsSpec) => new RedisLimits(prefix, counter, scripts);
  return Object.assign(store, { failure: { timeoutMs, onFailure }, state, limits });
}
