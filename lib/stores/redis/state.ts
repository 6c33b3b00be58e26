// The runtime state in Redis: the records' hash, its changes and history, the grant requests, read by each instance.
import {
  type ChangeResult,
  CHANGES_KEPT,
  ENDED_PER_CHANGE,
  type Follower,
  HISTORY_MAX,
  newEpoch,
  type RecordChange,
  type RuntimeState,
  stamped,
  type StateUpdate,
} from '../state.js';
import { ENDED_PER_CALL, type RequestRecords } from '../request-store.js';
import { type StateCommands } from './clients.js';
import { REQUEST_KEYS } from './scripts.js';

/** How often each instance reads what changed in the runtime state: a change reaches every instance within this. */
const REFRESH_MS = 250;

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
export function redisState(redis: StateCommands, prefix: string): RuntimeState {
  const keys = stateKeys(prefix);
  return {
    change: (c) => changeRecord(redis, keys, c),
    follow: (apply) => follower((known) => readState(redis, keys, known), apply),
    history: () => redis.lrange(keys.history),
    removeHistory: async (entry) => (await redis.lrem(keys.history, entry)) > 0,
    requests: requestsOf(redis, prefix),
  };
}

/** The runtime state's keys under the store's prefix, on one hash tag. */
interface StateKeys {
  readonly record: string;
  readonly changes: string;
  readonly ends: string;
  readonly history: string;
}

function stateKeys(prefix: string): StateKeys {
  return {
    record: `${prefix}:{runtime}:record`,
    changes: `${prefix}:{runtime}:changes`,
    ends: `${prefix}:{runtime}:ends`,
    history: `${prefix}:{runtime}:history`,
  };
}

/** Where an instance's copy of the state stands: the epoch, sequence number and copy mark it last read. */
type Position = { readonly epoch: string | undefined; readonly seq: number; readonly copy: string | undefined };

/** One change of a record, by CHANGE_SCRIPT: atomic with the sequence number, the ends, the history. */
async function changeRecord(
  redis: StateCommands,
  { record, changes, ends, history }: StateKeys,
  c: RecordChange,
): Promise<ChangeResult> {
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
}

/** The whole records' hash: a `replaced` state when it is not the one `known` followed, else a `whole` one. */
async function readWhole(
  redis: StateCommands,
  record: string,
  known: Position | undefined,
): Promise<[StateUpdate, Position]> {
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
}

/**
 * What changed since `known`, in plain reads, not scripts (what an instance reads in the background is told apart
 * from what requests cost): nothing, the fields changed since, or the whole hash when the state is another.
 */
async function readState(
  redis: StateCommands,
  { record, changes }: StateKeys,
  known: Position | undefined,
): Promise<[StateUpdate, Position] | undefined> {
  const [epochText, seqText, floorText, copyText] = await redis.hmget(record, META);
  const epoch = epochText ?? undefined;
  const seq = counted(seqText);
  const copy = copyText ?? undefined;
  if (known?.epoch !== undefined && epoch === known.epoch && seq < known.seq) {
    await redis.hset(record, '#copy', newEpoch());
    return readWhole(redis, record, known);
  }
  if (known === undefined) return readWhole(redis, record, known);
  const moved = epoch !== known.epoch || copy !== known.copy || seq < known.seq;
  if (moved || known.seq < counted(floorText)) return readWhole(redis, record, known);
  if (seq === known.seq) return undefined;
  // The state's own fields are never records, whatever the changes say.
  const fields = (await redis.zrangebyscore(changes, `(${known.seq}`, String(seq))).filter((f) => !f.startsWith('#'));
  const values = fields.length > 0 ? await redis.hmget(record, fields) : [];
  const records = new Map(fields.map((f, i) => [f, values[i] ?? null]));
  return [
    { kind: 'changes', epoch, seq, records, copy },
    { epoch, seq, copy },
  ];
}

/**
 * An instance following the state: a read every REFRESH_MS, and `sync()` on demand. Reads run one after another: a
 * sync() reads after every read begun before it. The calls made while a read waits for its turn share it, so that
 * however many ask at once, at most two reads are under way.
 */
function follower(
  read: (known: Position | undefined) => Promise<[StateUpdate, Position] | undefined>,
  apply: (update: StateUpdate) => void,
): Follower {
  let known: Position | undefined;
  let reading = 0;
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
      .then((update) => {
        if (!update) return;
        known = update[1];
        apply(update[0]);
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
