// The cluster's primary: the counters and runtime state of every worker's cluster store, kept by the memory store.
import cluster, { type Worker } from 'node:cluster';
import { Checker, MAX_DURATION_MS } from '../../shared/check.js';
import type { Counter, Counts } from '../counter.js';
import { memoryCounter } from '../memory/store.js';
import { MemoryState } from '../memory/state.js';
import { TooLate } from '../call-bound.js';
import { type RecordChange, stamped, type StateUpdate } from '../state.js';
import type { GrantRequestBounds, GrantRequestMeta } from '../grant-request-store.js';
import { MAX_SLIDING_LIMIT } from '../store.js';
import {
  type PrimaryReply,
  type Answers,
  type Call,
  countsOut,
  LATE,
  reportMalformed,
  TAG,
  tagged,
  type Update,
  updateOut,
} from './messages.js';

/** Prefixes and counters the primary keeps at the most: a worker's mistake cannot grow them without bound. */
const MAX_PREFIXES = 1000;
const MAX_COUNTERS = 10_000;

/** A worker as the primary answers it: what a turn brings, in order, sent as one message. */
export class Peer {
  #out: (PrimaryReply | Update)[] = [];

  constructor(private readonly send: (message: Answers) => void) {}

  push(item: PrimaryReply | Update): void {
    if (this.#out.push(item) === 1) setImmediate(() => this.#flush());
  }

  #flush(): void {
    const out = this.#out;
    this.#out = [];
    this.send({ [TAG]: 1, out });
  }
}

/** What the primary keeps of one prefix: a memory counter per counter spec, the memory state, and its followers. */
class Space {
  readonly counters = new Map<string, Counter>();
  readonly state = new MemoryState();
  readonly followers = new Set<Peer>();

  constructor(prefix: string) {
    let told = false;
    this.state.follow((update) => {
      if (!told) return;
      const item = updateOut(prefix, update);
      for (const peer of this.followers) peer.push(item);
    });
    told = true;
  }

  /** The state as a new follower reads it. */
  whole(prefix: string): Update {
    let whole: StateUpdate | undefined;
    this.state.follow((update) => (whole = update)).stop();
    return updateOut(prefix, whole as StateUpdate);
  }
}

function text(value: unknown): string {
  if (typeof value !== 'string') throw new TypeError('a text expected');
  return value;
}

function natural(value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new TypeError('a number expected');
  return value;
}

function object(value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError('an object expected');
  return value as Record<string, unknown>;
}

/** A record's change from a worker, checked whole before any applies. */
function recordIn(value: unknown): RecordChange {
  const c = object(value);
  const when = c.when === 'always' || c.when === 'absent' ? c.when : { sha1: text(object(c.when).sha1) };
  const record = c.value === null ? null : text(c.value);
  if (record !== null) stamped(record, 0);
  const event = c.event === undefined ? undefined : text(c.event);
  return {
    field: text(c.field),
    value: record,
    endsAt: c.endsAt === null ? null : natural(c.endsAt),
    when,
    event,
    now: natural(c.now),
  };
}

function metaIn(value: unknown): GrantRequestMeta {
  const m = object(value);
  const status = m.status === 'pending' || m.status === 'decided' ? m.status : undefined;
  if (!status) throw new TypeError('a status expected');
  return { status, key: text(m.key), network: text(m.network), group: text(m.group), endsAt: natural(m.endsAt) };
}

function boundsIn(value: unknown): GrantRequestBounds {
  const b = object(value);
  return { perKey: natural(b.perKey), perNetwork: natural(b.perNetwork), max: natural(b.max) };
}

/** Refuses a change that arrives after its `applyBy` (epoch ms: the processes share the machine's clock). */
function inTime(applyBy: unknown): undefined {
  if (applyBy !== null && Date.now() > natural(applyBy)) throw new TooLate();
  return undefined;
}

/** A counter's spec from its name in a call: `[name, window, [[limit, windowMs], …]]` as JSON. */
function specIn(name: string) {
  const [counter, window, limits] = JSON.parse(name) as unknown[];
  if (window !== 'fixed' && window !== 'sliding') throw new TypeError('a window expected');
  if (!Array.isArray(limits) || limits.length < 1 || limits.length > 10) throw new TypeError('limits expected');
  return {
    name: text(counter),
    window,
    limits: limits.map((pair: unknown) => {
      const [limit, windowMs] = Array.isArray(pair) ? pair.map(natural) : [];
      const most = window === 'sliding' ? MAX_SLIDING_LIMIT : Number.MAX_SAFE_INTEGER;
      if (!limit || limit > most || !windowMs || windowMs > MAX_DURATION_MS) throw new TypeError('a limit expected');
      return { limit, windowMs };
    }),
  } as const;
}

/** Every prefix's counters and state, answering calls from workers (and from a cluster store in this process). */
class Hub {
  readonly #spaces = new Map<string, Space>();
  #counters = 0;

  /** Answers a message's calls, each on its own: a malformed one is answered with its error, or skipped. */
  handle(peer: Peer, message: object, from: string): void {
    const { calls } = message as { calls?: unknown };
    if (!Array.isArray(calls)) return reportMalformed(from, 'no list of calls');
    for (const call of calls as unknown[]) {
      if (!Array.isArray(call) || !Number.isSafeInteger(call[0]) || typeof call[1] !== 'string') {
        reportMalformed(from, 'a call without its id and prefix');
        continue;
      }
      const [id, prefix, op, ...args] = call as Call;
      const failed = (error: unknown) => {
        if (!(error instanceof TooLate)) reportMalformed(from, `${String(op).slice(0, 20)}: ${String(error)}`);
        peer.push([id, 0, error instanceof TooLate ? LATE : String(error)]);
      };
      try {
        const answer = this.#run(peer, prefix, op, args);
        if (answer instanceof Promise) answer.then((value) => peer.push([id, 1, value]), failed);
        else peer.push([id, 1, answer]);
      } catch (error) {
        failed(error);
      }
    }
  }

  /** Forgets a worker that exited. */
  drop(peer: Peer): void {
    for (const space of this.#spaces.values()) space.followers.delete(peer);
  }

  #space(prefix: string): Space {
    let space = this.#spaces.get(prefix);
    if (space) return space;
    if (this.#spaces.size >= MAX_PREFIXES) throw new RangeError(`more than ${MAX_PREFIXES} prefixes`);
    this.#spaces.set(prefix, (space = new Space(prefix)));
    return space;
  }

  #counter(space: Space, name: unknown): Counter {
    let counter = space.counters.get(text(name));
    if (counter) return counter;
    if (this.#counters >= MAX_COUNTERS) throw new RangeError(`more than ${MAX_COUNTERS} counters`);
    counter = memoryCounter(specIn(name as string));
    this.#counters++;
    space.counters.set(name as string, counter);
    return counter;
  }

  #run(peer: Peer, prefix: string, op: unknown, a: unknown[]): unknown {
    const space = this.#space(prefix);
    const { state } = space;
    const { requests } = state;
    switch (op) {
      case 'hit':
        return countsOut(this.#counter(space, a[0]).hit(text(a[1])) as Counts);
      case 'peek':
        return countsOut(this.#counter(space, a[0]).peek(text(a[1])) as Counts);
      case 'reset':
        return this.#counter(space, a[0]).reset(text(a[1]));
      case 'follow':
        space.followers.add(peer);
        return space.whole(prefix);
      case 'sync':
        return true;
      case 'change': {
        if (!Array.isArray(a[0])) throw new TypeError('records expected');
        const records = a[0].map(recordIn);
        const r = a[1] === null ? undefined : object(a[1]);
        const request = r && {
          id: text(r.id),
          value: text(r.value),
          expected: text(r.expected),
          meta: metaIn(r.meta),
          now: natural(r.now),
        };
        return inTime(a[2]) ?? state.change({ records, request });
      }
      case 'history':
        return state.history();
      case 'removeHistory':
        return inTime(a[1]) ?? state.removeHistory(text(a[0]));
      case 'file':
        return inTime(a[5]) ?? requests.file(text(a[0]), text(a[1]), metaIn(a[2]), boundsIn(a[3]), natural(a[4]));
      case 'put':
        return inTime(a[5]) ?? requests.put(text(a[0]), text(a[1]), text(a[2]), metaIn(a[3]), natural(a[4]));
      case 'get':
        return requests.get(text(a[0])).then((value) => value ?? null);
      case 'page':
        return requests.page(a[0] === 'decided' ? 'decided' : 'pending', natural(a[1]), natural(a[2]), natural(a[3]));
      case 'find':
        return requests.find(a[0] === 'network' ? 'network' : 'key', text(a[1]), natural(a[2]));
      default:
        throw new TypeError('no such operation');
    }
  }
}

let hub: Hub | undefined;

/** The hub of this process: the primary's, or that of a cluster store in a process that is not a worker. */
export function hubOf(): Hub {
  return (hub ??= new Hub());
}

let listening = false;
const primaryCheck = new Checker('clusterPrimary');

/**
 * Keeps the counters and runtime state of every worker's `clusterStore()`, in this process's memory. Call it once in
 * the primary of `node:cluster`, before forking; a second call does nothing. Throws `ERR_INVALID_OPTION` in a worker.
 */
export function clusterPrimary(): void {
  if (cluster.isWorker) {
    primaryCheck.invalid(
      'process',
      'is a worker: call clusterPrimary() in the primary, and clusterStore() in workers.',
    );
  }
  if (listening) return;
  listening = true;
  const peers = new WeakMap<Worker, Peer>();
  const peerOf = (worker: Worker): Peer => {
    let peer = peers.get(worker);
    // A worker whose channel closed is not sent to: its answers are lost with it.
    if (!peer) peers.set(worker, (peer = new Peer((m) => worker.isConnected() && worker.send(m, () => {}))));
    return peer;
  };
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (tagged(message)) hubOf().handle(peerOf(worker), message, `worker ${worker.id}`);
  });
  cluster.on('exit', (worker: Worker) => {
    const peer = peers.get(worker);
    if (peer) hubOf().drop(peer);
  });
}
