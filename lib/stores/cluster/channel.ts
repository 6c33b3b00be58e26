// A process's channel to the cluster's primary: a turn's calls in one message, answers by id, each call bounded.
import cluster from 'node:cluster';
import { TooLate } from '../call-bound.js';
import type { Follower, StateUpdate } from '../state.js';
import { type Call, type Calls, LATE, reportMalformed, TAG, tagged, updateIn, type Update } from './messages.js';
import { hubOf, Peer } from './primary.js';

/** Calls that may wait for the primary at once; beyond, a call fails at once (its request gets `onFailure`). */
const MAX_PENDING = 100_000;
/** How often calls the primary has not answered in their time are dropped. */
const SWEEP_MS = 1000;
/** How often a follower whose first read failed reads again: a change reaches it within this once it answers. */
const RETRY_MS = 1000;

interface CallWaiting {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly until: number;
}

function failure(why: string): Error {
  return new Error(`listing-limits: the cluster's primary ${why}`);
}

export class Channel {
  #id = 0;
  readonly #pending = new Map<number, CallWaiting>();
  #out: Call[] = [];
  #sweep: NodeJS.Timeout | undefined;
  readonly #followers = new Map<string, Set<(update: StateUpdate) => void>>();

  constructor(private readonly transmit: (message: Calls, failed: (error: Error) => void) => void) {}

  /** Sends a call with the turn's others; it rejects when the primary fails it or has not answered within `ms`. */
  call(prefix: string, op: string, args: unknown[], ms: number): Promise<unknown> {
    if (this.#pending.size >= MAX_PENDING) return Promise.reject(failure(`has ${MAX_PENDING} calls unanswered`));
    const id = ++this.#id;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, until: Date.now() + ms });
      if (this.#out.push([id, prefix, op, ...args]) === 1) setImmediate(() => this.#flush());
      this.#sweep ??= setInterval(() => this.#dropLate(), SWEEP_MS).unref();
    });
  }

  #flush(): void {
    const calls = this.#out;
    this.#out = [];
    this.transmit({ [TAG]: 1, calls }, (error) => {
      for (const [id] of calls) this.#settle(id)?.reject(failure(`could not be reached (${error.message})`));
    });
  }

  #settle(id: number): CallWaiting | undefined {
    const pending = this.#pending.get(id);
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#sweep = void clearInterval(this.#sweep);
    return pending;
  }

  #dropLate(): void {
    const now = Date.now();
    for (const [id, pending] of this.#pending) {
      if (pending.until <= now) this.#settle(id)?.reject(failure('did not answer in time'));
    }
  }

  /** Every call waiting fails at once: the channel closed. */
  closed(): void {
    for (const id of [...this.#pending.keys()]) this.#settle(id)?.reject(failure('is gone: the IPC channel closed'));
  }

  /** Takes the primary's answers and updates in order; what is not as it must be is skipped. */
  receive(message: unknown): void {
    if (!tagged(message)) return;
    const { out } = message;
    if (!Array.isArray(out)) return reportMalformed('the primary', 'no list of answers');
    for (const item of out as unknown[]) {
      if (Array.isArray(item) && typeof item[0] === 'string') this.#update(item as Update);
      else if (Array.isArray(item) && typeof item[0] === 'number' && (item[1] === 0 || item[1] === 1)) {
        const pending = this.#settle(item[0]);
        if (item[1] === 1) pending?.resolve(item[2]);
        else pending?.reject(item[2] === LATE ? new TooLate() : failure(`failed: ${String(item[2]).slice(0, 200)}`));
      } else reportMalformed('the primary', 'an answer without its id');
    }
  }

  #update(item: Update): void {
    const update = updateIn(item);
    if (!update) return reportMalformed('the primary', 'a malformed update of the state');
    for (const apply of this.#followers.get(item[0]) ?? []) apply(update);
  }

  /** Follows a prefix's state: its whole first, then each change as the primary tells it. */
  follow(
    prefix: string,
    apply: (update: StateUpdate) => void,
    answered: (() => void) | undefined,
    ms: number,
  ): Follower {
    let following = false;
    let reading: Promise<void> | undefined;
    const listener = (update: StateUpdate) => following && apply(update);
    const listeners = this.#followers.get(prefix) ?? new Set();
    this.#followers.set(prefix, listeners.add(listener));
    const read = async (): Promise<void> => {
      const whole = !following;
      const answer = await this.call(prefix, whole ? 'follow' : 'sync', [], ms);
      if (whole) {
        const update = Array.isArray(answer) ? updateIn(answer as Update) : undefined;
        if (!update) throw failure('answered a malformed state');
        following = true;
        apply(update);
      }
      answered?.();
    };
    const sync = () => (reading ??= read().finally(() => (reading = undefined)));
    // A follower that could not read the state at first reads it as soon as the primary answers.
    const retry = setInterval(() => {
      if (following) clearInterval(retry);
      else sync().catch(() => {});
    }, RETRY_MS).unref();
    return { sync, stop: () => void (listeners.delete(listener), clearInterval(retry)) };
  }
}

let channel: Channel | undefined;

/** This process's channel: over IPC in a worker, else to the hub in this process (a primary, or a lone process). */
export function channelOf(): Channel {
  if (channel) return channel;
  if (cluster.isWorker && typeof process.send === 'function') {
    const send = process.send.bind(process);
    const made = new Channel((message, failed) => {
      if (!process.connected) return failed(new Error('the IPC channel is closed'));
      send(message, undefined, undefined, (error: Error | null) => error && failed(error));
    });
    process.on('message', (message: unknown) => made.receive(message));
    process.on('disconnect', () => made.closed());
    return (channel = made);
  }
  const hub = hubOf();
  const peer = new Peer((message) => made.receive(message));
  const made: Channel = new Channel((message) => hub.handle(peer, message, 'this process'));
  return (channel = made);
}
