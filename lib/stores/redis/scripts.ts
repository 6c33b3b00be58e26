// The Redis store's Lua scripts: counting hits and limits, changing and reading the runtime state and grant requests.
import { createHash } from 'node:crypto';

/**
 * A hit's key found without an expiry (its `INCR` created it, or a client stopped before it gave it one): given its
 * window of `ARGV[1]` ms unless it has an expiry by now, on the master of the key whatever server answered the hit's
 * `PTTL` (a replica may not have the key yet). Answers the milliseconds it has left (-2 for a key that is gone).
 * Hits themselves are plain commands (see clients.ts): `INCR` and `PTTL`, no script, which costs Redis about
 * half as much.
 */
export const HEAL_SCRIPT = `local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return tonumber(ARGV[1])
end
return ttl`;
export const HEAL_SHA = createHash('sha1').update(HEAL_SCRIPT).digest('hex');

/**
 * A hit whose `INCR` found no count at its key: a value that is no integer, one at the edge of 64 bits, another type
 * (`WRONGTYPE`), or a count below zero, which no instance writes (another program did). The request is counted again
 * here: where the key holds a count by now (another request repaired it first), on that count, its expiry given as
 * HEAL_SCRIPT gives it; else the key becomes the first request of a new window of `ARGV[1]` ms. Answers the count and
 * the milliseconds left, as a hit does. Run only on that rare path.
 */
export const REPAIR_SCRIPT = `local count = redis.pcall('incr', KEYS[1])
if type(count) ~= 'number' or count < 1 then
  redis.call('set', KEYS[1], 1, 'px', ARGV[1])
  return {1, tonumber(ARGV[1])}
end
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}`;
export const REPAIR_SHA = createHash('sha1').update(REPAIR_SCRIPT).digest('hex');

/**
 * What the scripts of an endpoint's limits share: Redis' time, the window kind (ARGV[1]), and `read`, which answers a
 * limit's count on its key and the milliseconds until it frees a request, or nil for a key with no window running.
 * A sliding limit's requests that left the window are dropped first, as a request would drop them. A key that holds
 * what no instance writes there (another program's value: another type, a time or a count that is no whole number
 * from zero to 2^53, as REPAIR_SCRIPT finds for a fixed window's hit) is deleted and read as none: its client begins
 * a new window, exactly, instead of failing every request. A fixed window's count left without an expiry (a client
 * stopped between its `INCR` and its `PEXPIRE`) is given its window, as HEAL_SCRIPT gives it.
 */
const WINDOWS_COMMON = `local t = redis.call('time')
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
  local ttl = redis.call('pttl', key)
  if ttl == -1 then
    redis.call('pexpire', key, window)
    ttl = window
  end
  if ttl > 0 then return count, ttl end
  return count, nil
end
`;

/**
 * One request on the limits of an endpoint (sliding windows, or several limits), all or none: KEYS are one key per
 * limit, ARGV the window kind (`s`liding or `f`ixed), then each limit and its window in milliseconds. Times are
 * Redis' own (`TIME`), so that instances with skewed clocks agree. A sliding limit's key is a list of the times of
 * the requests counted, oldest first: those at or before `now - window` are dropped, and the request passes while
 * fewer than `limit` are left. A fixed limit's key is a count that expires at the end of its window. The request is
 * counted on every key only when every limit allows it. Answers each limit's count (`limit + 1` for one that
 * refused) and the milliseconds until it frees a request.
 */
export const LIMITS_SCRIPT = `${WINDOWS_COMMON}local n = #KEYS
local counts, waits, allowed = {}, {}, true
for i = 1, n do
  local key, limit, window = KEYS[i], tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local count, wait = read(key, window)
  wait = wait or window
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
export const LIMITS_SHA = createHash('sha1').update(LIMITS_SCRIPT).digest('hex');

/**
 * The state of an endpoint's limits for one client, read without counting (LIMITS_SCRIPT's first half): KEYS and
 * ARGV as LIMITS_SCRIPT's. A sliding limit's requests that left the window are dropped, as a request would drop them.
 * Answers each limit's count and the milliseconds until it frees a request (0 with none counted).
 */
export const PEEK_SCRIPT = `${WINDOWS_COMMON}local answer = {}
for i = 1, #KEYS do
  local count, wait = read(KEYS[i], tonumber(ARGV[2 * i + 1]))
  if not wait then count, wait = 0, 0 end
  answer[2 * i - 1], answer[2 * i] = count, wait
end
return answer`;
export const PEEK_SHA = createHash('sha1').update(PEEK_SCRIPT).digest('hex');
/** Forgets a client's keys of an endpoint's limits; answers how many there were. */
export const FORGET_SCRIPT = `return redis.call('del', unpack(KEYS))`;
export const FORGET_SHA = createHash('sha1').update(FORGET_SCRIPT).digest('hex');

/**
 * What the scripts that change the state begin with: ARGV[1] is the latest time (Redis' clock, epoch ms) at which the
 * change may be taken, or '' for any; it is taken off ARGV, so that the script reads its own arguments from ARGV[1].
 * A change that arrives later (a Redis that was paused, a command that waited in a client's queue) is refused whole,
 * answering `{'late'}`.
 */
const GUARD = `local notAfter = table.remove(ARGV, 1)
if notAfter ~= '' then
  local t = redis.call('time')
  if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > tonumber(notAfter) then return {'late'} end
end
`;

/**
 * `changeRecords(record, changes, ends, history, args, at)`: changes of records of the runtime state, in one step with
 * what follows from them. The keys are the records' hash, the changes (a sorted set: each changed field, by the
 * sequence number of its last change), the ends (a sorted set: each record that ends, by its end) and the history.
 * `args` from `at` on: the instance's clock, a new epoch (taken when the hash has none), the history's length, the
 * changes kept, the ended records dropped per change, how many changes; then, for each, the field, the value (''
 * removes), the end ('' for never), when ('always', 'absent' or 'sha1'), the SHA-1 of the text expected for 'sha1',
 * the history entry ('' for none).
 *
 * A change that applies writes the record with the next sequence number as its JSON's first member; every field the
 * step changes takes that one number. A few ended records are dropped each time, and the changes kept are trimmed to
 * the newest; both count as changes (so that a follower's copy drops them too), and `#floor` says up to which sequence
 * number changes were trimmed: a follower behind it reads the whole hash.
 *
 * A server that was promoted from replica (a failover: Redis gives it a new `master_replid` and keeps the history it
 * continues as `master_replid2`) may lack the last changes of the server it replaced: at its first change, `#copy` is
 * marked anew, so that every instance reads the state whole and compares it with what it knew, and `#forked` says the
 * sequence number the copy had then (its own changes come after it). Every step is O(log n) in the records kept.
 * Answers the sequence number, the epoch, then each change's: whether it applied, the text before (of a record in
 * force), the text after.
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
 * Changes of records of the runtime state, all in one step (see CHANGE_LIB): KEYS are the records' hash, the changes,
 * the ends and the history; ARGV the latest time it may be taken (GUARD), then CHANGE_LIB's arguments.
 */
export const CHANGE_SCRIPT = `${GUARD}${CHANGE_LIB}return changeRecords(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV, 1)`;

/** Removes one entry of the history (KEYS[1]) equal to ARGV[2], unless it comes late (GUARD). */
export const REMOVE_HISTORY_SCRIPT = `${GUARD}return redis.call('lrem', KEYS[1], 1, ARGV[1])`;

/**
 * Redis' clock, `TIME`, on the server that holds KEYS[1] (a Cluster's node of the runtime state): what the scripts'
 * GUARD reads, so that an instance gives them times on it.
 */
export const CLOCK_SCRIPT = `return redis.call('time')`;

/**
 * The grant requests' Redis keys, in the order every request script takes them (all on the runtime hash tag): the
 * records (a hash), the sequence number, the pending ones and the decided ones (sorted sets by sequence number) and
 * their ends (sorted sets by end), two lexicographic indexes (pending ones by client key and network; every one by
 * client key and network, then sequence number), the groups (a sorted set of how many each has), every one by group
 * then sequence number (lexicographic), and each one's index entries (a hash).
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

/** What the request change script is made of before its own part: it changes records too. */
const REQUEST_LIBS = `${GUARD}${REQUEST_COMMON}${REQUEST_INDEXING}${CHANGE_LIB}`;

/**
 * A change of the grant requests, every step O(log n) in the requests kept, refused when it comes late (GUARD: the
 * first argument). ARGV[1] is then the change:
 *
 * `file`, id, value (without seq), client key, network ('' for none), group, end, now, pending per key, pending per
 * network, most kept, ended dropped per call: files a new pending request unless its key or its network has as many
 * pending as it may (their ended ones dropped first); with the most kept, one is dropped first (an ended one, else
 * the oldest of the group with the most); answers 'done', 'key', 'network' or 'conflict' (the id is taken).
 *
 * `put`, id, value, expected, status, client key, network, group, end, now, ended dropped per call: writes `value`
 * over `expected` (a decision, or one undone), with the next sequence number unless it has one; answers the text
 * written, or '' when the request holds another value. With the runtime state's four keys after the requests' (KEYS[12]
 * to KEYS[15]) and CHANGE_LIB's arguments after its own, it changes those records too, in the same step, when the
 * request held `expected`: answers the text written, then CHANGE_LIB's answer.
 */
export const REQUEST_CHANGE_SCRIPT = `${REQUEST_LIBS}local function dropEnded(now, n)
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
return 'done'`;

/**
 * Reads of the grant requests, a page at a time. ARGV[1] is the read: `page`, status, offset, limit, now: how many
 * of that status are kept and not ended, then the rows from `offset` (pending ones oldest change first, past the
 * ended ones, which are the oldest; decided ones newest first); `find`, 'k' or 'n', client key or network, limit:
 * its requests, newest change first.
 */
export const REQUEST_READ_SCRIPT = `${REQUEST_COMMON}local ids, answer = {}, {}
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

export const CHANGE_SHA = createHash('sha1').update(CHANGE_SCRIPT).digest('hex');
export const REMOVE_HISTORY_SHA = createHash('sha1').update(REMOVE_HISTORY_SCRIPT).digest('hex');
export const CLOCK_SHA = createHash('sha1').update(CLOCK_SCRIPT).digest('hex');
export const REQUEST_CHANGE_SHA = createHash('sha1').update(REQUEST_CHANGE_SCRIPT).digest('hex');
export const REQUEST_READ_SHA = createHash('sha1').update(REQUEST_READ_SCRIPT).digest('hex');

/** The scripts of the store, for the test that every script declares the keys it touches. @internal */
export const SCRIPTS = {
  heal: HEAL_SCRIPT,
  repair: REPAIR_SCRIPT,
  limits: LIMITS_SCRIPT,
  peek: PEEK_SCRIPT,
  forget: FORGET_SCRIPT,
  change: CHANGE_SCRIPT,
  removeHistory: REMOVE_HISTORY_SCRIPT,
  clock: CLOCK_SCRIPT,
  changeRequests: REQUEST_CHANGE_SCRIPT,
  readRequests: REQUEST_READ_SCRIPT,
} as const;
