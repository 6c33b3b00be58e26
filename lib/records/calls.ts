// How the operators' calls reach the store's runtime state: each within one bound, its reads and changes in the cache.
import type { Request } from 'express';
import type { Checker } from '../shared/check.js';
import { RuntimeStateError } from '../shared/errors.js';
import { observe, type OnError } from '../shared/hooks.js';
import { bounded, type CallBound, withBound } from '../stores/call-bound.js';
import type { RecordChange, RequestPut, RuntimeState, StateChangeResult } from '../stores/state.js';
import type { RecordCache } from './cache.js';
import type { ChangeEvent } from './types.js';
import { eventText } from './views.js';

/** A change of a record with the history's entry for it (none without `event`), as the operators' calls make them. */
export interface EventChange {
  readonly change: Omit<RecordChange, 'event' | 'now'>;
  readonly event?: ChangeEvent;
}

/** How the cache follows the store, as far as a call needs it: whether it does, and a read of what changed now. */
interface Following {
  readonly active: boolean;
  sync(): Promise<void>;
}

/**
 * The store's runtime state as the operators' calls use it. A call runs within one bound (see CallBound): it settles
 * within `callTimeoutMs`, or rejects with `ERR_STORE_UNAVAILABLE`, and a change of it that reaches the store later is
 * refused. A read brings the cache up to date with the store; a change is written to the store first, and the cache
 * takes the store's answer.
 */
export class StateCalls {
  constructor(
    readonly state: RuntimeState,
    private readonly cache: RecordCache,
    private readonly following: Following,
    private readonly context: {
      /** False for a store with no runtime state of its own: nothing it holds is shared by another instance. */
      readonly shared: boolean;
      /** The longest an operator's call waits for the store in all; undefined for a store in this process. */
      readonly callTimeoutMs: number | undefined;
      readonly onChange: ((event: ChangeEvent, req: Request | undefined) => unknown) | undefined;
      readonly report: OnError;
    },
  ) {}

  /** Runs an operator's call `source` (`limits.ban`) within the store's bound; within a page's load, within its own. */
  bounded<T>(source: string, run: (bound: CallBound) => Promise<T>): Promise<T> {
    return bounded(source, this.context.callTimeoutMs, run);
  }

  /** Runs `next` (the rest of a page's load) within one bound for all its store calls. */
  withBound(source: string, next: () => void): void {
    withBound(source, this.context.callTimeoutMs, next);
  }

  /** Tells `onError` of an error met by an operator's call (a page's) that the caller answered itself. */
  report(error: unknown, req: Request | undefined): void {
    this.context.report(error, req);
  }

  /** Refuses a change of bans and grants where the store keeps no state: it would hold on this instance only. */
  writable(check: Checker): void {
    if (!this.context.shared) {
      check.fail(
        'ERR_UNSUPPORTED_STORE',
        'options.store',
        'keeps no state of bans and grants (a custom store): a change made here would hold on this instance only. ' +
          'Use memoryStore() or redisStore(), or ban and grant through the `ban` and `grants` options.',
      );
    }
  }

  /** Reads what changed in the store now, within `bound` (a custom store's state is this process's: none to read). */
  async read(bound: CallBound): Promise<void> {
    if (this.context.shared && this.following.active) await bound.race(this.following.sync());
  }

  /** Reads what changed in the store now, within the bound of the call `source` (or of the one under way). */
  synced(source: string): Promise<void> {
    return this.bounded(source, (bound) => this.read(bound));
  }

  /**
   * Writes changes, in one step of the store (with a grant request's decision before them, when there is one); the
   * cache takes the store's answer (or, when the state's epoch changed, reads it whole). Within a call's `bound`, the
   * store refuses the change when it takes it too late.
   */
  async write(
    records: readonly RecordChange[],
    bound: CallBound | undefined,
    request?: RequestPut,
  ): Promise<StateChangeResult> {
    const change = this.state.change({ records, request, applyBy: bound?.applyBy });
    const result = await (bound ? bound.race(change, (late) => this.#lateChange(bound, late)) : change);
    const epoch = result.records[0]?.epoch;
    if (epoch !== undefined && epoch !== this.cache.epoch && this.following.active) {
      // Done: the store has it. Reading the state whole is only for this copy, which the next read brings anyway.
      const sync = this.following.sync();
      await (bound ? bound.race(sync) : sync).catch(() => {});
      if (this.following.active) return result;
    }
    records.forEach((c, i) => {
      const done = result.records[i];
      if (done) this.cache.put(c.field, done.stored ?? null, done.seq);
    });
    return result;
  }

  /**
   * Writes changes of bans and grants, with their history entries (a change without an event has none), and tells
   * `onChange` of each that applied.
   */
  async change(
    changes: readonly EventChange[],
    req: Request | undefined,
    bound: CallBound | undefined,
    request?: RequestPut,
  ): Promise<StateChangeResult> {
    const now = Date.now();
    const records = changes.map(({ change, event }) => ({
      ...change,
      event: event && eventText(event),
      now: event ? event.at.getTime() : now,
    }));
    const result = await this.write(records, bound, request);
    result.records.forEach((done, i) => {
      const event = changes[i]?.event;
      if (done.changed && event) observe(this.context.onChange, event, req, this.context.report);
    });
    return result;
  }

  /**
   * A change the store took in time but answered after the call's bound, when the call had said it made none: every
   * instance applies it (it is in the store), and `onError` is told which call it was.
   */
  #lateChange(bound: CallBound, result: StateChangeResult): void {
    if (result.records.some((done) => done.changed) || result.request !== undefined) this.lateChange(bound);
  }

  /** Tells `onError` that a change of the call `bound` bounds, which it said it had not made, was taken after all. */
  lateChange(bound: CallBound): void {
    const message =
      `${bound.source} was refused as the store did not answer in time, but the store had taken its change: it ` +
      'holds on every instance.';
    this.context.report(new RuntimeStateError('ERR_STATE_WRITE', message), undefined);
  }
}
