// How the records reach the store's runtime state: the cache follows it; each operator's call runs within one bound.
import type { Request } from 'express';
import type { Checker } from '../shared/check.js';
import { RuntimeStateError } from '../shared/errors.js';
import { observe, type OnError } from '../shared/hooks.js';
import { bounded, type CallBound, withBound } from '../stores/call-bound.js';
import type { Follower, RequestPut, RuntimeState, StateChangeResult } from '../stores/state.js';
import type { RecordCache } from './cache.js';
import type { KeyOf } from './client-keys.js';
import { type CheckGrant, endOf, type Write } from './kinds.js';
import type { ChangeEvent } from './types.js';
import { eventText } from './views.js';

export interface Parts {
  readonly cache: RecordCache;
  readonly calls: StateCalls;
  readonly keyOf: KeyOf;
  readonly checkGrant: CheckGrant;
}

export interface CallsContext {
  /** False for a custom store: what it holds is this process's alone. */
  readonly shared: boolean;
  readonly callTimeoutMs?: number;
  readonly firstReadMs: number;
  readonly onChange: ((event: ChangeEvent, req: Request | undefined) => unknown) | undefined;
  readonly report: OnError;
  readonly answered: (route: string) => void;
}

// A change is written to the store first, and the cache takes its answer. A call settles within `callTimeoutMs`,
// and a change the store takes later is refused (see CallBound).
export class StateCalls {
  #follower: Follower | undefined;

  constructor(
    readonly state: RuntimeState,
    private readonly cache: RecordCache,
    private readonly context: CallsContext,
  ) {}

  /** Once the middleware is made, so that a configuration that fails leaves nothing running. */
  start(): void {
    if (this.#follower) return;
    this.#follower = this.state.follow((update) => {
      const replaced = this.cache.apply(update);
      if (replaced) this.#replaced(replaced.changes, replaced.message).catch((e: unknown) => this.report(e, undefined));
    }, this.context.answered);
    if (this.cache.loaded) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.context.firstReadMs);
      timer.unref?.();
    });
    const first = this.#follower.sync().catch(() => {});
    this.cache.ready = Promise.race([first, bound]).then(() => {
      clearTimeout(timer);
      this.cache.ready = undefined;
    });
  }

  stop(): void {
    this.#follower?.stop();
    this.#follower = undefined;
  }

  async #replaced(changes: readonly Write[], message: string | undefined): Promise<void> {
    if (changes.length > 0) await this.change(changes, undefined);
    if (message !== undefined) this.report(new RuntimeStateError('ERR_STATE_LOST', message), undefined);
  }

  /** Runs an operator's call `source` (`limits.ban`) within the store's bound; within a page's load, within its own. */
  bounded<T>(source: string, run: (bound: CallBound) => Promise<T>): Promise<T> {
    return bounded(source, this.context.callTimeoutMs, run);
  }

  withBound(source: string, next: () => void): void {
    withBound(source, this.context.callTimeoutMs, next);
  }

  report(error: unknown, req: Request | undefined): void {
    this.context.report(error, req);
  }

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

  async read(bound: CallBound): Promise<void> {
    if (this.context.shared && this.#follower) await bound.race(this.#follower.sync());
  }

  synced(source: string): Promise<void> {
    return this.bounded(source, (bound) => this.read(bound));
  }

  /** Written to the store, whose answer the cache takes; `onChange` is told of each change that applied. */
  async change(
    changes: readonly Write[],
    bound: CallBound | undefined,
    req?: Request,
    request?: RequestPut,
  ): Promise<StateChangeResult> {
    const now = Date.now();
    // A record ends, and the store drops it, when its record says.
    const records = changes.map(({ field, record, when = 'always', event }) => ({
      field,
      value: record && JSON.stringify(record),
      endsAt: record && endOf(record) < Infinity ? endOf(record) : null,
      when,
      event: event && eventText(event),
      now: event ? event.at.getTime() : now,
    }));
    const change = this.state.change({ records, request, applyBy: bound?.applyBy });
    const result = await (bound ? bound.race(change, (late) => this.#lateChange(bound, late)) : change);
    const epoch = result.records[0]?.epoch;
    let synced = false;
    if (epoch !== undefined && epoch !== this.cache.epoch && this.#follower) {
      // Done: the store has it. Reading the state whole is only for this copy, which the next read brings anyway.
      const sync = this.#follower.sync();
      await (bound ? bound.race(sync) : sync).catch(() => {});
      synced = this.#follower !== undefined;
    }
    records.forEach((c, i) => {
      const done = result.records[i];
      if (done && !synced) this.cache.put(c.field, done.stored ?? null, done.seq);
    });
    result.records.forEach((done, i) => {
      const event = changes[i]?.event;
      if (done.changed && event) observe(this.context.onChange, event, req, this.context.report);
    });
    return result;
  }

  #lateChange(bound: CallBound, result: StateChangeResult): void {
    if (result.records.some((done) => done.changed) || result.request !== undefined) this.lateChange(bound);
  }

  /** A change the call said it had not made (its bound ended) was taken after all: it holds on every instance. */
  lateChange(bound: CallBound): void {
    const message =
      `${bound.source} was refused as the store did not answer in time, but the store had taken its change: it ` +
      'holds on every instance.';
    this.context.report(new RuntimeStateError('ERR_STATE_WRITE', message), undefined);
  }
}
