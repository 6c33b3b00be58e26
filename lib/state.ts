// Where a store keeps what operators change at runtime (bans, grants) and its history, and how instances learn of it.

/** Changes kept in the history at the most; the oldest go first beyond that. */
export const HISTORY_MAX = 1000;

/**
 * The runtime state of a store: records (one field per ban or grant, a JSON value each) and a bounded history of
 * changes, shared by every middleware that uses the store. Declared by stores that have a place for it.
 */
export interface RuntimeState {
  /**
   * Sets `field` to `value`, or removes it when `value` is null, and drops the `expired` fields. When something
   * changed, `event` is added to the history. Resolves whether the field was there before.
   */
  change(field: string, value: string | null, event: string, expired: readonly string[]): Promise<boolean>;
  /** Every record. */
  load(): Promise<Map<string, string>>;
  /** The history, newest first. */
  history(): Promise<string[]>;
  /**
   * Calls `changed` with every record whenever another user of the state may have changed them, and once at the
   * start; returns the function that stops watching.
   */
  watch(changed: (records: Map<string, string>) => void): () => void;
  /** Where grant requests (rule 6) are kept, apart from the records that every instance mirrors. */
  readonly requests?: RequestRecords;
}

/** What {@link RequestRecords.put} did: wrote the record, found another value than expected, or found no room. */
export type PutResult = 'done' | 'conflict' | 'full';

/** Grant requests by id, one JSON value each, each change atomic: what the contact page files and operators decide. */
export interface RequestRecords {
  /**
   * Sets `id` to `value` when it holds `expected` now; with `expected` null, when `id` is absent and fewer than `max`
   * records are kept.
   */
  put(id: string, value: string, expected: string | null, max: number): Promise<PutResult>;
  get(id: string): Promise<string | undefined>;
  all(): Promise<string[]>;
  remove(ids: readonly string[]): Promise<void>;
}

/** The grant requests of the memory store, in this process. */
export class MemoryRequests implements RequestRecords {
  readonly #records = new Map<string, string>();

  put(id: string, value: string, expected: string | null, max: number): Promise<PutResult> {
    const current = this.#records.get(id);
    if (expected === null ? current !== undefined : current !== expected) return Promise.resolve('conflict');
    if (expected === null && this.#records.size >= max) return Promise.resolve('full');
    this.#records.set(id, value);
    return Promise.resolve('done');
  }

  get(id: string): Promise<string | undefined> {
    return Promise.resolve(this.#records.get(id));
  }

  all(): Promise<string[]> {
    return Promise.resolve([...this.#records.values()]);
  }

  remove(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.#records.delete(id);
    return Promise.resolve();
  }
}

/** The state of the memory store: in this process, the truth for every middleware that shares the store. */
export class MemoryState implements RuntimeState {
  readonly #records = new Map<string, string>();
  readonly #history: string[] = [];
  readonly #watchers = new Set<(records: Map<string, string>) => void>();
  readonly requests: RequestRecords = new MemoryRequests();

  change(field: string, value: string | null, event: string, expired: readonly string[]): Promise<boolean> {
    for (const key of expired) this.#records.delete(key);
    const existed = this.#records.has(field);
    if (value === null) this.#records.delete(field);
    else this.#records.set(field, value);
    if (value !== null || existed) {
      this.#history.unshift(event);
      if (this.#history.length > HISTORY_MAX) this.#history.length = HISTORY_MAX;
      for (const watcher of this.#watchers) watcher(new Map(this.#records));
    }
    return Promise.resolve(existed);
  }

  load(): Promise<Map<string, string>> {
    return Promise.resolve(new Map(this.#records));
  }

  history(): Promise<string[]> {
    return Promise.resolve([...this.#history]);
  }

  watch(changed: (records: Map<string, string>) => void): () => void {
    this.#watchers.add(changed);
    changed(new Map(this.#records));
    return () => this.#watchers.delete(changed);
  }
}
