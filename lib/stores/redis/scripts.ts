// The Redis store's Lua scripts: counting hits and limits, the runtime state, grant requests and traffic.
import { sha1 } from '../state.js';

/** `heal(key, window)`: gives a count left without an expiry its window (ms); answers the ms it has left. */
const HEAL = `local function heal(key, window)
  local ttl = redis.call('pttl', key)
  if ttl ~= -1 then return ttl end
  redis.call('pexpire', key, window)
  return window
end
`;

/**
 * What the limits scripts share: Redis' time, the window kind (ARGV[1]), and `read`, a limit's count and the ms until
 * it frees a request. A key that holds another program's value is deleted and read as none, so its client is not
 * refused forever; a fixed count left without an expiry is healed.
 */
const WINDOWS_COMMON = `${HEAL}local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local sliding = ARGV[1] == 's'
local function whole(n)
  return n and n >= 0 and n < 9007199254740992 and n == math.floor(n)
end
local function foreign(key)
  redis.call('del', key)
  return 0, nil
end
local function read(key, window)
  if sliding then
    local oldest = redis.pcall('lindex', key, 0)
    if type(oldest) == 'table' then return foreign(key) end
    while oldest do
      local at = tonumber(oldest)
      if not whole(at) then return foreign(key) end
      if at > now - window then return redis.call('llen', key), at + window - now end
      redis.call('lpop', key)
      oldest = redis.call('lindex', key, 0)
    end
    return 0, nil
  end
  local value = redis.pcall('get', key)
  if type(value) == 'table' then return foreign(key) end
  local count = tonumber(value or '0')
  if not whole(count) then return foreign(key) end
  if count == 0 then return 0, nil end
  local ttl = heal(key, window)
  if ttl > 0 then return count, ttl end
  return count, nil
end
`;

/**
 * What the changing scripts begin with: ARGV[1], taken off ARGV, is the latest Redis time at which the change may be
 * taken ('' for any); a later one is refused whole with `{'late'}`.
 */
const GUARD = `local notAfter = table.remove(ARGV, 1)
if notAfter ~= '' then
  local t = redis.call('time')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > tonumber(notAfter) then return {'late'} end
end
`;

/**
 * `changeRecords(record, changes, ends, history, args, at)`; `args` from `at`: clock, epoch, history length, changes
 * kept, ended per change, count, then each change's field, value, end, when, SHA-1, history entry ('' for none). A
 * failover's new master marks `#copy` (`#forked`), so instances reread the state. Answers seq, epoch, each change's.
 */
const CHANGE_LIB = `local function changeRecords(record, changes, ends, history, args, at)
  local now, newEpoch, historyLength = tonumber(args[at]), args[at + 1], tonumber(args[at + 2])
  local kept, endedPer, n = tonumber(args[at + 3]), tonumber(args[at + 4]), tonumber(args[at + 5])
  local meta = redis.call('hmget', record, '#epoch', '#seq', '#replid')
  local epoch, seq, last = meta[1], tonumber(meta[2] or '0') or 0, meta[3]
  if not epoch then
    epoch = newEpoch
    redis.call('hset', record, '#epoch', epoch)
  end
  local info = redis.pcall('info', 'replication')
  if type(info) == 'string' then
    local replid, replid2 = string.match(info, 'master_replid:(%x+)'), string.match(info, 'master_replid2:(%x+)')
    if replid and last ~= replid then
      if last and replid2 and string.find(replid2, '[^0]') then
        redis.call('hset', record, '#copy', newEpoch, '#forked', seq)
      end
      redis.call('hset', record, '#replid', replid)
    end
  end
  local nextSeq, wrote = seq + 1, false
  local gone = redis.call('zrangebyscore', ends, '-inf', now, 'LIMIT', 0, endedPer)
  for i = 0, n - 1 do
    local field = args[at + 6 + 6 * i]
    local ending = redis.call('zscore', ends, field)
    if ending and tonumber(ending) <= now then gone[#gone + 1] = field end
  end
  for _, f in ipairs(gone) do
    redis.call('hdel', record, f)
    redis.call('zrem', ends, f)
    redis.call('zadd', changes, nextSeq, f)
    wrote = true
  end
  local answer = {0, epoch}
  for i = 0, n - 1 do
    local b = at + 6 + 6 * i
    local field, value, endsAt = args[b], args[b + 1], args[b + 2]
    local when, expected, event = args[b + 3], args[b + 4], args[b + 5]
    local before = redis.call('hget', record, field)
    local applies
    if when == 'sha1' then applies = before and redis.sha1hex(before) == expected
    elseif when == 'absent' then applies = not before
    else applies = value ~= '' or before end
    local stored = before
    if applies then
      wrote = true
      if value == '' then
        redis.call('hdel', record, field)
        redis.call('zrem', ends, field)
        stored = false
      else
        stored = '{"seq":' .. nextSeq .. ',' .. string.sub(value, 2)
        redis.call('hset', record, field, stored)
        if endsAt == '' then redis.call('zrem', ends, field) else redis.call('zadd', ends, endsAt, field) end
      end
      redis.call('zadd', changes, nextSeq, field)
      if event ~= '' then
        redis.call('lpush', history, event)
        redis.call('ltrim', history, 0, historyLength - 1)
      end
    end
    answer[#answer + 1] = applies and 1 or 0
    answer[#answer + 1] = before or ''
    answer[#answer + 1] = stored or ''
  end
  if wrote then
    seq = nextSeq
    redis.call('hset', record, '#seq', seq)
  end
  local over = redis.call('zcard', changes) - kept
  if over > 0 then
    local trimmed = redis.call('zrange', changes, over - 1, over - 1, 'WITHSCORES')
    redis.call('zremrangebyrank', changes, 0, over - 1)
    redis.call('hset', record, '#floor', trimmed[2])
  end
  answer[1] = seq
  return answer
end
`;

/**
 * The grant requests' keys, in the order every request script takes them: records, sequence, pending and decided,
 * their ends, the two lexicographic indexes, the groups, the requests by group, each one's index entries.
 */
export const REQUEST_KEYS = [
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

/** The scripts of the store, each named by what it does. */
export const SCRIPTS = {
  /** A key that a hit's `INCR` began anew given its window of `ARGV[1]` ms, unless it has one: answers the ms left. */
  heal: `${HEAL}return heal(KEYS[1], tonumber(ARGV[1]))`,
  /**
   * One hit of a fixed window of `ARGV[1]` ms: the count and the ms its key has left, in one call. A key without an
   * expiry gets its window; one without a count (another program's value, or below zero) begins a new window.
   */
  hit: `${HEAL}local count = redis.pcall('incr', KEYS[1])
if type(count) ~= 'number' or count < 1 then
  redis.call('set', KEYS[1], 1, 'px', ARGV[1])
  return {1, tonumber(ARGV[1])}
end
return {count, heal(KEYS[1], tonumber(ARGV[1]))}`,
  /**
   * One request on an endpoint's limits, all or none, on Redis' clock: KEYS one per limit, ARGV the window kind, then
   * each limit and its window (ms). A sliding limit's key lists its requests' times. Answers each limit's count
   * (`limit + 1` where it refused) and the ms until it frees a request.
   */
  limits: `${WINDOWS_COMMON}local n = #KEYS
local answer, allowed = {}, true
for i = 1, n do
  local limit, window = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local count, wait = read(KEYS[i], window)
  if count >= limit then
    allowed = false
    count = limit + 1
  end
  answer[2 * i - 1], answer[2 * i] = count, wait or window
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
    answer[2 * i - 1] = answer[2 * i - 1] + 1
  end
end
return answer`,
  /** The limits' read without counting, with their KEYS and ARGV: each count and ms until it frees one (0: none). */
  peek: `${WINDOWS_COMMON}local answer = {}
for i = 1, #KEYS do
  local count, wait = read(KEYS[i], tonumber(ARGV[2 * i + 1]))
  if not wait then count, wait = 0, 0 end
  answer[2 * i - 1], answer[2 * i] = count, wait
end
return answer`,
  /** Forgets a client's keys of an endpoint's limits; answers how many there were. */
  forget: `return redis.call('del', unpack(KEYS))`,
  /** CHANGE_LIB as a script: KEYS its four keys; ARGV the GUARD time, then its arguments. */
  change: `${GUARD}${CHANGE_LIB}return changeRecords(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV, 1)`,
  /** Removes one entry of the history (KEYS[1]) equal to ARGV[2], unless it comes late (GUARD). */
  removeHistory: `${GUARD}return redis.call('lrem', KEYS[1], 1, ARGV[1])`,
  /** Redis' `TIME` on the node of KEYS[1], which GUARD reads. */
  clock: `return redis.call('time')`,
  /**
   * A change of the grant requests after GUARD: ARGV[1] `file` (id, value, key, network, group, end, now, per key,
   * per network, most, ended per call) or `put` (id, value, expected, status, key, network, group, end, now, ended
   * per call; with KEYS[12] to KEYS[15] and CHANGE_LIB's arguments, records change in the same step).
   */
  changeRequests: `${GUARD}${REQUEST_COMMON}local function pad(seq) return string.format('%016d', seq) end
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
${CHANGE_LIB}local function dropEnded(now, n)
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
  if #KEYS == 11 then return stored end
  local changed = changeRecords(KEYS[12], KEYS[13], KEYS[14], KEYS[15], ARGV, 12)
  table.insert(changed, 1, stored)
  return changed
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
return 'done'`,
  /**
   * Reads of the grant requests. ARGV[1]: `page`, status, offset, limit, now (how many are in force, then the rows);
   * `find`, 'k' or 'n', key or network, limit (newest change first).
   */
  readRequests: `${REQUEST_COMMON}local ids, answer = {}, {}
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
return answer`,
  /**
   * An instance's minutes of traffic, added in one step. KEYS: the instances, then each minute's hash (`a <endpoint>`
   * and `r <endpoint>`: allowed and refused) and refused clients. ARGV: instance, ms alive, ms kept, clients per
   * minute, the others' key, how many clients to answer (0: no read), then each minute's fields and clients, each a
   * count of pairs, then the pairs. A key of another type is replaced, a value not a count skipped: both told in the
   * answer's second part. Answers the instances alive, what was skipped, and with a read each minute's hash and the
   * clients refused most often.
   */
  traffic: `local id, alive, kept = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local cap, others, top = tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6])
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local skipped = {}
local function ours(key, kind)
  local found = redis.call('type', key).ok
  if found == kind or found == 'none' then return true end
  skipped[#skipped + 1] = key .. '\\nis a ' .. found
  return false
end
local function whole(n)
  return n and n >= 0 and n < 9007199254740992 and n == math.floor(n)
end
if not ours(KEYS[1], 'zset') then redis.call('del', KEYS[1]) end
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
redis.call('zadd', KEYS[1], now + alive, id)
redis.call('pexpire', KEYS[1], kept)
local answer, at, sums = {redis.call('zcard', KEYS[1]), skipped}, 7, {}
for m = 1, (#KEYS - 1) / 2 do
  local hash, clients = KEYS[2 * m], KEYS[2 * m + 1]
  local fields = tonumber(ARGV[at])
  if fields > 0 and not ours(hash, 'hash') then redis.call('del', hash) end
  for i = 1, fields do
    local field, n = ARGV[at + 2 * i - 1], ARGV[at + 2 * i]
    if type(redis.pcall('hincrby', hash, field, n)) == 'table' then
      skipped[#skipped + 1] = hash .. '\\nholds no count in ' .. field
      redis.call('hset', hash, field, n)
    end
  end
  if fields > 0 then redis.call('pexpire', hash, kept) end
  at = at + 2 * fields + 1
  local refused = tonumber(ARGV[at])
  if refused > 0 and not ours(clients, 'zset') then redis.call('del', clients) end
  for i = 1, refused do
    local key, n = ARGV[at + 2 * i - 1], ARGV[at + 2 * i]
    if not redis.call('zscore', clients, key) and redis.call('zcard', clients) >= cap then key = others end
    redis.call('zincrby', clients, n, key)
  end
  if refused > 0 then redis.call('pexpire', clients, kept) end
  at = at + 2 * refused + 1
  if top > 0 then
    local counts = {}
    if ours(hash, 'hash') then
      if redis.call('hlen', hash) > 4 * cap then skipped[#skipped + 1] = hash .. '\\nhas too many fields'
      else counts = redis.call('hgetall', hash) end
    end
    answer[#answer + 1] = counts
    if ours(clients, 'zset') then
      local list = redis.call('zrevrange', clients, 0, cap - 1, 'WITHSCORES')
      for i = 1, #list, 2 do
        local key, n = list[i], tonumber(list[i + 1])
        if whole(n) and #key <= 512 then sums[key] = (sums[key] or 0) + n
        else skipped[#skipped + 1] = clients .. '\\nhas a member that is no client key or count' end
      end
    end
  end
end
if top == 0 then return answer end
local ranked = {}
for key, n in pairs(sums) do ranked[#ranked + 1] = {key, n} end
table.sort(ranked, function(a, b) return a[2] > b[2] or (a[2] == b[2] and a[1] < b[1]) end)
local best = {}
for i = 1, math.min(top, #ranked) do
  best[#best + 1] = ranked[i][1]
  best[#best + 1] = ranked[i][2]
end
answer[#answer + 1] = best
return answer`,
  /** rate-limiter-flexible's GLIDE limiter's read: a counter's count and the ms its key has left, or nothing. */
  read: `local points = redis.call('get', KEYS[1])
if not points then return false end
return {points, redis.call('pttl', KEYS[1])}`,
  /** Its consume, as RateLimiterRedis counts: `ARGV[1]` points more on a counter expiring in `ARGV[2]` s (0: never). */
  consume: `local seconds = tonumber(ARGV[2])
if seconds > 0 then redis.call('set', KEYS[1], 0, 'EX', seconds, 'NX') end
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 and seconds > 0 then
  redis.call('expire', KEYS[1], seconds)
  ttl = 1000 * seconds
end
return {consumed, ttl}`,
} as const;

/** A command sent through a client, routed on a Cluster by `key`; text answered as strings. */
export type Send = (args: string[], key: string) => Promise<unknown>;

/** A script run on one client: its keys, then its arguments. */
export type Script = (keys: string[], args: string[]) => Promise<unknown>;

/** Redis lacks the script (a first run, a restart, a failover); GLIDE names that error NoScriptError. */
const NO_SCRIPT = /NoScriptError|NOSCRIPT/;

/** A script sent as EVALSHA, then as EVAL where Redis lacks it. */
export function evalOf(send: Send, lua: string): Script {
  const sha = sha1(lua);
  return (keys, args) => {
    const key = keys[0] as string;
    const call = [String(keys.length), ...keys, ...args];
    return send(['EVALSHA', sha, ...call], key).catch((error: unknown) => {
      if (!NO_SCRIPT.test(String((error as Error | undefined)?.message))) throw error;
      return send(['EVAL', lua, ...call], key);
    });
  };
}
