// The runtime state of a store: records numbered by the store's sequence, and how instances follow them.
import { createHash, randomBytes } from 'node:crypto';
import type { GrantRequestMeta, GrantRequestStore } from './grant-request-store.js';
import type { TrafficStore } from './traffic.js';

/** Changes kept in the history at the most; the oldest go first beyond that. */
export const HISTORY_MAX = 1000;
/** Changed fields a store remembers for its followers; one further behind reads the whole state. */
export const CHANGES_KEPT = 100_000;
/** Ended records (or grant requests) a change drops at the most, so that its cost does not grow with them. */
export const ENDED_PER_CHANGE = 10;

/** One change of one record: a field (`ban:t:…`) whose JSON object the store numbers (`{"seq":12,…}`). */
export interface RecordChange {
  readonly field: string;
  /** The record's JSON object, without `seq`; null removes the record. */
  readonly value: string | null;
  /** When the record ends (epoch ms), after which the store drops it; null for never. */
  readonly endsAt: number | null;
  /** When it applies: `'always'`, `'absent'` (no record in force), or `{ sha1 }` (the field holds that text). */
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

/** One atomic change of the state: a grant request's decision, then records in order, each as its `when` says. */
export interface StateChange {
  readonly records: readonly RecordChange[];
  readonly request?: RequestPut;
  /** The latest `performance.now()` at which the store may take the change, else it refuses it whole. */
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
 * What a follower is told: `'changes'` since its last update (null: removed), `'whole'` (every record), or
 * `'replaced'` (every record of a state that replaced the one it followed: data lost, or a failover).
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
  /** The copy's sequence number when it took the state's place; undefined: when it was found. */
  readonly forked?: number;
}

/** How an instance follows the state: updates come by themselves; `sync()` reads what changed now. */
export interface Follower {
  /** Resolves once the follower has read the state as it was at the call, or rejects when the store failed. */
  sync(): Promise<void>;
  stop(): void;
}

/** A store's runtime state, shared by its middlewares: records every instance copies, a history, grant requests. */
export interface RuntimeState {
  /** Changes records (and a grant request), atomically with their history entries. */
  change(change: StateChange): Promise<StateChangeResult>;
  /** Follows the records: `apply` gets each update; `answered` the route of the store's part after each read. */
  follow(apply: (update: StateUpdate) => void, answered?: (route: string) => void): Follower;
  /** The history, newest first. */
  history(): Promise<string[]>;
  /** Removes one entry of the history equal to `entry`, unless the store takes it after `applyBy` (see StateChange). */
  removeHistory(entry: string, applyBy?: number): Promise<boolean>;
  /** Where grant requests (rule 6) are kept, apart from the records that every instance copies. */
  readonly requests?: GrantRequestStore;
  /** Where the instances that share the state add up their traffic; none for a state in this process alone. */
  readonly traffic?: TrafficStore;
}

const SEQ = '{"seq":';

/** A record's JSON object with the store's sequence number first, as the Redis store's scripts write it. */
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
