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
}

/** The state of the memory store: in this process, the truth for every middleware that shares the store. */
export class MemoryState implements RuntimeState {
  readonly #records = new Map<string, string>();
  readonly #history: string[] = [];
  readonly #watchers = new Set<(records: Map<string, string>) => void>();

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
