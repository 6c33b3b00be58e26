// The memory store's runtime state: in this process, the truth for every middleware that shares the store.
import { SweptMap } from '../../shared/swept.js';
import {
  type ChangeResult,
  type Follower,
  HISTORY_MAX,
  newEpoch,
  type RecordChange,
  type RuntimeState,
  sha1,
  stamped,
  type StateChange,
  type StateChangeResult,
  type StateUpdate,
} from '../state.js';
import { MemoryGrantRequests } from './grant-requests.js';

/** A record as the memory state keeps it. */
interface KeptRecord {
  readonly text: string;
  readonly endsAt: number;
}

/** The memory store's state: each change told to every follower at once; ended records swept a few at a time. */
export class MemoryState implements RuntimeState {
  readonly #records = new SweptMap<KeptRecord>((kept) => kept.endsAt);
  readonly #history: string[] = [];
  readonly #followers = new Set<(update: StateUpdate) => void>();
  readonly #epoch = newEpoch();
  #seq = 0;
  readonly requests = new MemoryGrantRequests();

  change(change: StateChange): Promise<StateChangeResult> {
    const { request } = change;
    const written =
      request && this.requests.putNow(request.id, request.value, request.expected, request.meta, request.now);
    if (request && written === undefined) return Promise.resolve({ records: [], request: undefined });
    return Promise.resolve({ records: change.records.map((c) => this.#change(c)), request: written });
  }

  #change(c: RecordChange): ChangeResult {
    const kept = this.#records.get(c.field);
    const active = kept !== undefined && kept.endsAt > c.now;
    const applies =
      typeof c.when === 'object'
        ? kept !== undefined && sha1(kept.text) === c.when.sha1
        : c.when === 'absent'
          ? !active
          : c.value !== null || active;
    const before = active ? kept.text : undefined;
    if (!applies) return { changed: false, before, stored: kept?.text, seq: this.#seq, epoch: this.#epoch };
    const seq = ++this.#seq;
    let stored: string | undefined;
    if (c.value === null) this.#records.delete(c.field);
    else {
      stored = stamped(c.value, seq);
      this.#records.add(c.field, { text: stored, endsAt: c.endsAt ?? Infinity }, c.now);
    }
    if (c.event !== undefined) {
      this.#history.unshift(c.event);
      if (this.#history.length > HISTORY_MAX) this.#history.length = HISTORY_MAX;
    }
    const update: StateUpdate = {
      kind: 'changes',
      epoch: this.#epoch,
      seq,
      records: new Map([[c.field, stored ?? null]]),
    };
    for (const follower of this.#followers) follower(update);
    return { changed: true, before, stored, seq, epoch: this.#epoch };
  }

  follow(apply: (update: StateUpdate) => void): Follower {
    this.#followers.add(apply);
    const records = new Map<string, string>();
    for (const [field, kept] of this.#records) records.set(field, kept.text);
    apply({ kind: 'whole', epoch: this.#epoch, seq: this.#seq, records });
    return { sync: () => Promise.resolve(), stop: () => void this.#followers.delete(apply) };
  }

  history(): Promise<string[]> {
    return Promise.resolve([...this.#history]);
  }

  removeHistory(entry: string): Promise<boolean> {
    const at = this.#history.indexOf(entry);
    if (at >= 0) this.#history.splice(at, 1);
    return Promise.resolve(at >= 0);
  }
}
