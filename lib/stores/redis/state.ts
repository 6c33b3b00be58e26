// The runtime state in Redis: the records' hash, its changes and history, the grant requests, read by each instance.
import {
  type ChangeResult,
  CHANGES_KEPT,
  ENDED_PER_CHANGE,
  type Follower,
  HISTORY_MAX,
  newEpoch,
  type RecordChange,
  type RequestPut,
  type RuntimeState,
  stamped,
  type StateChangeResult,
  type StateUpdate,
} from '../state.js';
import { performance } from 'node:perf_hooks';
import { TooLate } from '../call-bound.js';
import { type GrantRequestStore } from '../grant-request-store.js';
import type { RedisConnection } from './clients.js';
import { REQUEST_KEYS, type Script, type SCRIPTS } from './scripts.js';
import { redisTraffic } from './traffic.js';

/** A plain command of the state, routed by its key (its first argument). */
type Command = (args: string[]) => Promise<unknown>;

/** How often each instance reads what changed in the runtime state: a change reaches every instance within this. */
const REFRESH_MS = 250;

/**
 * The hash's own fields (`#…`). `#copy` is marked anew by the first instance that finds a copy behind the state in
 * its place, so that every instance reads it whole, even after new changes moved the sequence number past.
 */
const META = ['#epoch', '#seq', '#floor', '#copy'];

/** A number the state keeps, or 0 for none (or for a value that is not one). */
function counted(value: string | null | undefined): number {
  const n = Number(value ?? 0);
  return Number.isSafeInteger(n) && n >= 0 ? n : 0;
}

/**
 * The runtime state in Redis, on one hash tag (one Cluster node): the records' hash, the changes and ends, the
 * history and the grant requests. Each instance reads `#epoch`, `#seq`, `#floor` and `#copy` every REFRESH_MS, then
 * what changed, or the whole hash when the state is another or it fell behind the changes kept.
 */
export function redisState(connection: RedisConnection, prefix: string, trafficIntervalMs: number): RuntimeState {
  const send: Command = (args) => connection.call(args, args[1] as string);
  const script = (name: keyof typeof SCRIPTS) => connection.script(name, false);
  // The records' hash, its changes and ends, and the history: the `change` script's keys, in its order.
  const keys = ['record', 'changes', 'ends', 'history'].map((key) => `${prefix}:{runtime}:${key}`);
  const [record, changes, , history] = keys as [string, string, string, string];
  const route = () => connection.route?.(record) ?? '';
  const guard = guardOf(script('clock'), record);
  const [change, changeRequests, removeHistory] = [
    guard(script('change')),
    guard(script('changeRequests')),
    guard(script('removeHistory')),
  ];
  // The highest sequence number of the state this process has seen its changes take: a state found below it (its
  // epoch the same) is a copy behind it, even before any instance's read has passed that number.
  const seen: Seen = { epoch: undefined, seq: 0 };
  const saw = (result: StateChangeResult) => {
    const last = result.records[result.records.length - 1];
    if (last && (last.epoch !== seen.epoch || last.seq > seen.seq)) {
      seen.epoch = last.epoch;
      seen.seq = last.seq;
    }
    return result;
  };
  const requestKeys = REQUEST_KEYS.map((key) => `${prefix}:{runtime}:${key}`);
  return {
    change: async (c) => {
      const args = changeArgs(c.records);
      const n = c.records.length;
      if (!c.request) return saw({ records: changeResults(await change(keys, c.applyBy, args), 0, n) });
      const both = [...putArgs(c.request), ...args];
      const answer = await changeRequests([...requestKeys, ...keys], c.applyBy, both);
      if (!Array.isArray(answer)) return { records: [], request: undefined };
      return saw({ records: changeResults(answer, 1, n), request: String(answer[0]) });
    },
    follow: (apply, answered) =>
      follower((known) => readState(send, record, changes, known, seen), apply, answered && (() => answered(route()))),
    history: () => send(['LRANGE', history, '0', '-1']) as Promise<string[]>,
    removeHistory: async (entry, applyBy) => Number(await removeHistory([history], applyBy, [entry])) > 0,
    requests: requestsOf(send, changeRequests, script('readRequests'), requestKeys),
    traffic: redisTraffic(script('traffic'), prefix, trafficIntervalMs),
  };
}

/** How long a measure of Redis' clock is trusted before a change that has a time measures it again. */
const CLOCK_KEPT_MS = 60_000;
/** A measure of Redis' clock that took longer (Redis paused or busy) serves its own change only. */
const CLOCK_KEPT_ROUND_TRIP_MS = 250;

/**
 * Scripts that begin with GUARD, given Redis' time for `applyBy` (a `performance.now()`), measured by the clock
 * script on `key`'s node. A change refused as late throws TooLate, and the clock is measured again at the next one.
 */
function guardOf(clock: Script, key: string): (script: Script) => Guarded {
  let known: { offset: number; error: number; at: number } | undefined;
  /** Redis' time for `applyBy` (`performance.now()`), early by the measure's error; '' for none. */
  const notAfter = async (applyBy: number | undefined): Promise<string> => {
    if (applyBy === undefined) return '';
    let measure = known;
    if (!measure || performance.now() - measure.at > CLOCK_KEPT_MS) {
      const sent = performance.now();
      const [seconds, micros] = (await clock([key], [])) as [unknown, unknown];
      const received = performance.now();
      const redisMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      measure = { offset: redisMs - (sent + received) / 2, error: (received - sent) / 2, at: received };
      if (received - sent <= CLOCK_KEPT_ROUND_TRIP_MS) known = measure;
    }
    return String(Math.floor(applyBy + measure.offset - measure.error));
  };
  return (script) => async (keys, applyBy, args) => {
    const answer = await script(keys, [await notAfter(applyBy), ...args]);
    if (!Array.isArray(answer) || answer[0] !== 'late') return answer;
    known = undefined;
    throw new TooLate();
  };
}

/** A script that begins with GUARD: refused whole when Redis takes it after `applyBy`. */
type Guarded = (keys: string[], applyBy: number | undefined, args: string[]) => Promise<unknown>;

/** Where an instance's copy of the state stands: the epoch, sequence number and copy mark of its last update. */
type Position = Pick<StateUpdate, 'epoch' | 'seq' | 'copy'>;

/** The highest sequence number of an epoch this process's changes took (see redisState). */
type Seen = { epoch: string | undefined; seq: number };

/** CHANGE_LIB's arguments for `changes`, without the time they may be taken at. */
function changeArgs(changes: readonly RecordChange[]): string[] {
  const now = changes[0]?.now ?? Date.now();
  const args = [now, newEpoch(), HISTORY_MAX, CHANGES_KEPT, ENDED_PER_CHANGE, changes.length].map(String);
  for (const c of changes) {
    if (c.value !== null) stamped(c.value, 0); // refuses what is not a record's JSON object, before Redis does
    const when = typeof c.when === 'object' ? 'sha1' : c.when;
    const expected = typeof c.when === 'object' ? c.when.sha1 : '';
    args.push(c.field, c.value ?? '', c.endsAt === null ? '' : String(c.endsAt), when, expected, c.event ?? '');
  }
  return args;
}

/** CHANGE_LIB's answer from `at` on: each change's result. */
function changeResults(answered: unknown, at: number, n: number): ChangeResult[] {
  const answer = answered as unknown[];
  const seq = Number(answer[at]);
  const epoch = String(answer[at + 1]);
  const text = (value: unknown) => (value === '' || value === null || value === false ? undefined : String(value));
  return Array.from({ length: n }, (_, i) => {
    const b = at + 2 + 3 * i;
    return { changed: Number(answer[b]) === 1, before: text(answer[b + 1]), stored: text(answer[b + 2]), seq, epoch };
  });
}

/** A grant request's decision, as the request script's `put` takes it. */
function putArgs({ id, value, expected, meta, now }: RequestPut): string[] {
  const { status, key, network, group, endsAt } = meta;
  return ['put', id, value, expected, status, key, network, group, endsAt, now, ENDED_PER_CHANGE].map(String);
}

/** The whole records' hash: a `replaced` state when it is not the one `known` followed, else a `whole` one. */
async function readWhole(send: Command, record: string, known: Position | undefined): Promise<StateUpdate> {
  // Without a prototype: a foreign `__proto__` field stays a field. HGETALL answers a flat list of fields and values.
  const all = Object.create(null) as Record<string, string>;
  const answer = (await send(['HGETALL', record])) as unknown[];
  for (let i = 0; i < answer.length; i += 2) all[String(answer[i])] = String(answer[i + 1]);
  const epoch = all['#epoch'];
  const seq = counted(all['#seq']);
  const copy = all['#copy'];
  const forked = all['#forked'] === undefined ? undefined : counted(all['#forked']);
  const records = new Map<string, string>();
  for (const [field, value] of Object.entries(all)) if (!field.startsWith('#')) records.set(field, value);
  const replaced = known?.epoch !== undefined && (epoch !== known.epoch || seq < known.seq || copy !== known.copy);
  return { kind: replaced ? 'replaced' : 'whole', epoch, seq, records, copy, forked };
}

/** What changed since `known`, in plain reads: nothing, the fields changed, or the whole hash. */
async function readState(
  send: Command,
  record: string,
  changes: string,
  known: Position | undefined,
  seen: Seen,
): Promise<StateUpdate | undefined> {
  // What this process had seen when the read began: a change answered later may be one the read came before.
  const { epoch: seenEpoch, seq: seenSeq } = seen;
  const [epochText, seqText, floorText, copyText] = (await send(['HMGET', record, ...META])) as (string | null)[];
  const epoch = epochText ?? undefined;
  const seq = counted(seqText);
  const copy = copyText ?? undefined;
  const behind =
    (known?.epoch !== undefined && epoch === known.epoch && seq < known.seq) ||
    (seenEpoch !== undefined && epoch === seenEpoch && seq < seenSeq);
  if (behind) {
    // A copy behind, not marked yet: no change was made on it since it took over, or the first would have marked it
    // (CHANGE_LIB), so it forked where it stands.
    if (copy === known?.copy) {
      await send(['HSET', record, '#forked', String(seq)]);
      await send(['HSET', record, '#copy', newEpoch()]);
    }
    const whole = await readWhole(send, record, known ?? { epoch, seq: seenSeq, copy });
    // The copy is the state from now on: what this process saw before it is no longer to be found.
    seen.epoch = whole.epoch;
    seen.seq = whole.seq;
    return whole;
  }
  if (known === undefined) return readWhole(send, record, known);
  const moved = epoch !== known.epoch || copy !== known.copy || seq < known.seq;
  if (moved || known.seq < counted(floorText)) return readWhole(send, record, known);
  if (seq === known.seq) return undefined;
  // The state's own fields are never records, whatever the changes say.
  const changed = (await send(['ZRANGEBYSCORE', changes, `(${known.seq}`, String(seq)])) as string[];
  const fields = changed.filter((f) => !f.startsWith('#'));
  const values = fields.length > 0 ? ((await send(['HMGET', record, ...fields])) as (string | null)[]) : [];
  const records = new Map(fields.map((f, i) => [f, values[i] ?? null]));
  return { kind: 'changes', epoch, seq, records, copy };
}

/** An instance following the state: a read every REFRESH_MS, and `sync()`; calls share reads, two at most. */
function follower(
  read: (known: Position | undefined) => Promise<StateUpdate | undefined>,
  apply: (update: StateUpdate) => void,
  answered: (() => void) | undefined,
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
        answered?.();
        if (!update) return;
        // Its position only: the update's records are the cache's to keep.
        known = { epoch: update.epoch, seq: update.seq, copy: update.copy };
        apply(update);
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
function requestsOf(send: Command, change: Guarded, readRequests: Script, keys: string[]): GrantRequestStore {
  const read = async (args: string[]) => ((await readRequests(keys, args)) as unknown[]).map(String);
  const texts = (values: string[]) => values.filter((value) => value !== '');
  return {
    file: async (id, value, meta, bounds, now, applyBy) => {
      const { key, network, group, endsAt } = meta;
      const { perKey, perNetwork, max } = bounds;
      const args = ['file', id, value, key, network, group, endsAt, now, perKey, perNetwork, max, ENDED_PER_CHANGE];
      const answer = await change(keys, applyBy, args.map(String));
      const result = String(answer);
      return result === 'done' || result === 'key' || result === 'network' ? result : 'conflict';
    },
    put: async (id, value, expected, meta, now, applyBy) => {
      const put = putArgs({ id, value, expected, meta, now });
      const answer = await change(keys, applyBy, put);
      return answer === '' || answer === null ? undefined : String(answer);
    },
    get: (id) => send(['HGET', keys[0] as string, id]).then((value) => (value ?? undefined) as string | undefined),
    page: async (status, offset, limit, now) => {
      const [total, ...values] = await read(['page', status, String(offset), String(limit), String(now)]);
      return { total: Math.max(Number(total), 0), values: texts(values) };
    },
    find: async (by, value, limit) => texts(await read(['find', by === 'key' ? 'k' : 'n', value, String(limit)])),
  };
}
