// The cluster store's messages over node:cluster's IPC channel: tagged, batched a turn at a time, checked on receipt.
import { once } from '../../shared/once.js';
import type { Counts } from '../counter.js';
import type { StateUpdate } from '../state.js';

/** The member that marks this package's messages: the app's own messages have none and are left alone. */
export const TAG = 'listing-limits/cluster';

/** A worker's call: its id (per worker), the store's prefix, the operation and its arguments. */
export type Call = [id: number, prefix: string, op: string, ...args: unknown[]];

/** The primary's answer to a call: its id, and the value, or the error's text. */
export type PrimaryReply = [id: number, ok: 1, value: unknown] | [id: number, ok: 0, error: string];

/** A change of a prefix's state, as every following worker is told it: records as `[field, text or null]`. */
export type Update = [prefix: string, kind: StateUpdate['kind'], epoch: string, seq: number, records: unknown];

/** What a worker sends in one turn. */
export interface Calls {
  readonly [TAG]: 1;
  readonly calls: Call[];
}

/** What the primary sends a worker in one turn: answers and updates in the order they came (an answer's id leads). */
export interface Answers {
  readonly [TAG]: 1;
  readonly out: (PrimaryReply | Update)[];
}

/** The answer a worker gets to a change the primary took after its `applyBy`. */
export const LATE = 'late';

/** Whether a message is this package's: anything else on the channel is the app's. */
export function tagged(message: unknown): message is Record<string, unknown> {
  return typeof message === 'object' && message !== null && (message as Record<string, unknown>)[TAG] === 1;
}

/** A message of this package that is not as it must be: skipped, and told once per process. */
export const reportMalformed = once((from: string, why: string) =>
  process.emitWarning(
    `listing-limits: a message of the cluster store from ${from} was skipped (${why}); later ones are skipped ` +
      'silently.',
    { code: 'LISTING_LIMITS_CLUSTER_MESSAGE' },
  ),
);

/** Counts as a message carries them: `[count, resetAt, …]`, a window without end as -1. */
export function countsOut(counts: Counts): number[] {
  const flat: number[] = [];
  for (const { count, resetAt } of counts) flat.push(count, resetAt === Infinity ? -1 : resetAt);
  return flat;
}

/** Counts read from a message, `n` limits; undefined for anything else. */
export function countsIn(value: unknown, n: number): Counts | undefined {
  if (!Array.isArray(value) || value.length !== 2 * n || !value.every((v) => typeof v === 'number')) return undefined;
  const counts = [];
  for (let i = 0; i < value.length; i += 2) {
    const resetAt = value[i + 1] as number;
    counts.push({ count: value[i] as number, resetAt: resetAt === -1 ? Infinity : resetAt });
  }
  return counts;
}

/** A state update read from a message; undefined for anything else. */
export function updateIn(update: Update): StateUpdate | undefined {
  const [, kind, epoch, seq, records] = update;
  if (kind !== 'changes' && kind !== 'whole' && kind !== 'replaced') return undefined;
  if (typeof epoch !== 'string' || !Number.isSafeInteger(seq) || !Array.isArray(records)) return undefined;
  const map = new Map<string, string | null>();
  for (const entry of records as unknown[]) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') return undefined;
    if (typeof entry[1] !== 'string' && entry[1] !== null) return undefined;
    map.set(entry[0], entry[1] as string | null);
  }
  return { kind, epoch, seq, records: map };
}

/** A state update as a message carries it. */
export function updateOut(prefix: string, update: StateUpdate): Update {
  return [prefix, update.kind, update.epoch ?? '', update.seq, [...update.records]];
}
