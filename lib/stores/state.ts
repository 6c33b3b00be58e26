// The runtime state of a store: records numbered by the store's sequence, and how instances follow them.
import { createHash, randomBytes } from 'node:crypto';
import type { GrantRequestMeta, GrantRequestStore } from './grant-request-store.js';

/** Changes kept in the history at the most; the oldest go first beyond that. */
export const HISTORY_MAX = 1000;
/**
 * Changed fields a store remembers for the instances that follow it. An instance further behind than that (more
 * changes since its last read) reads the whole state once instead.
 */
export const CHANGES_KEPT = 100_000;
/** Ended records a change drops at the most, so that a change costs the same however many have ended. */
export const ENDED_PER_CHANGE = 10;

/**
 * One change of one record. A record is a field (`<kind>:<id>`, e.g. `ban:t:…`) whose value is a JSON object; the
 * store writes it with its sequence number as the first member (`{"seq":12,…}`), so that every copy can tell which of
 * two versions is newer.
 */
export interface RecordChange {
  readonly field: string;
  /** The record's JSON object, without `seq`; null removes the record. */
  readonly value: string | null;
  /** When the record ends (epoch ms), after which the store drops it; null for never. */
  readonly endsAt: number | null;
  /**
   * When the change applies: `'always'` (a removal only of a record in force); `'absent'`, only when no record of the
   * field is in force; or `{ sha1 }`, only while the field holds a text of that SHA-1 (hex), as it was read.
   */
  readonly when: 'always' | 'absent' | { readonly sha1: string };
  /** The history's entry for the change, added only when the change applies; undefined for none. */
  readonly event: string | undefined;
  /** The instance's clock, which tells what has ended. */
  readonly now: number;
}

/** What a change of one record did. */
export interface ChangeResult {
  /** Whether the change applied. */
  readonly changed: boolean;
  /** The field's text before the change, when it held a record in force. */
  readonly before: string | undefined;
  /** The field's text after the change (undefined: no record). */
  readonly stored: string | undefined;
  /** The store's sequence number after the change. */
  readonly seq: number;
  /** The state's epoch: a new one each time the state starts from nothing (a new store, or one that lost its data). */
  readonly epoch: string;
}

/** A grant request set to `value` when it holds `expected` now (a decision), indexed by `meta`. */
export interface RequestPut {
  readonly id: string;
  readonly value: string;
  readonly expected: string;
  readonly meta: GrantRequestMeta;
  readonly now: number;
}

/**
 * One change of the state, atomic: records changed in order, each as its `when` says, and, before them, a grant
 * request's decision, without which no record changes.
 */
export interface StateChange {
  readonly records: readonly RecordChange[];
  readonly request?: RequestPut;
  /**
   * The latest time, on this process's monotonic clock (`performance.now()`), at which the store may take the change:
   * one that reaches it later (a store that was paused, or a command that waited in a client's queue) is refused
   * whole, and answered as call-bound's `TooLate`. Undefined: whenever it arrives.
   */
  readonly applyBy?: number;
}

/** What a change of the state did. */
export interface StateChangeResult {
  /** Each record's change, in order; none when the request's decision did not apply. */
  readonly records: readonly ChangeResult[];
  /** The request's text as written; undefined when it did not hold the text expected (nothing changed then). */
  readonly request?: string;
}

/**
 * What a follower of the state is told: `'changes'`, the fields changed since its last update (null: removed);
 * `'whole'`, every record (its first update, or after it fell behind the changes kept); `'replaced'`, every record of
 * a state that replaced the one it followed (the store lost its data, was flushed, or failed over to a copy that is
 * behind).
 */
export interface StateUpdate {
  readonly kind: 'changes' | 'whole' | 'replaced';
  /** The state's epoch; undefined for a state that has never been written. */
  readonly epoch: string | undefined;
  /** The store's sequence number the update brings the follower to. */
  readonly seq: number;
  readonly records: ReadonlyMap<string, string | null>;
  /** The mark of a copy behind the state that took its place (a failover): another after each; undefined for none. */
  readonly copy?: string;
  /**
   * The sequence number that copy had when it took the state's place: its records of a higher one were written on it
   * since. Undefined: the copy's sequence number when it was found.
   */
  readonly forked?: number;
}

/** How an instance follows the state: updates come by themselves; `sync()` reads what changed now. */
export interface Follower {
  /** Resolves once the follower has read the state as it was at the call, or rejects when the store failed. */
  sync(): Promise<void>;
  stop(): void;
}

/**
 * The runtime state of a store, shared by every middleware that uses the store: records that every instance keeps a
 * copy of (one field each), a bounded history of changes, and grant requests. Declared by stores that have a place
 * for it (the memory and Redis stores).
 */
export interface RuntimeState {
  /** Changes records (and a grant request), atomically with their history entries. */
  change(change: StateChange): Promise<StateChangeResult>;
  /**
   * Follows the records: `apply` is called with each update, the first one (`'whole'`) as soon as it is read, and
   * `answered` after each read the store answered, with the route of the part of the store that holds the state (see
   * `StoreCounter.route`; '' for a store of one part): that part answers again.
   */
  follow(apply: (update: StateUpdate) => void, answered?: (route: string) => void): Follower;
  /** The history, newest first. */
  history(): Promise<string[]>;
  /** Removes one entry of the history equal to `entry`, unless the store takes it after `applyBy` (see StateChange). */
  removeHistory(entry: string, applyBy?: number): Promise<boolean>;
  /** Where grant requests (rule 6) are kept, apart from the records that every instance copies. */
  readonly requests?: GrantRequestStore;
}

const SEQ = '{"seq":';

/**
 * A record's JSON object with the store's sequence number as its first member. The Redis store's scripts write the
 * same text.
 */
export function stamped(value: string, seq: number): string {
  if (!value.startsWith('{') || value.length < 3 || value.startsWith(SEQ)) {
    throw new TypeError(`listing-limits: a record must be a JSON object without "seq"; got ${value.slice(0, 40)}`);
  }
  return `${SEQ}${seq},${value.slice(1)}`;
}

/** The SHA-1 of a stored text, in hex, as Redis' `redis.sha1hex` gives it: how a change names a text it expects. */
export function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}

/** A new epoch: random, so that no two states that started from nothing share one. */
export function newEpoch(): string {
  return randomBytes(9).toString('base64url');
}
