// Answers of the app's lookups (authenticate, grants), kept briefly per key, with one call for concurrent requests.
import { LRUCache } from 'lru-cache';

/** Keys whose answers are kept at the most; the least recently used go first. */
const KEPT = 10_000;

/**
 * Answers of one lookup, by key: an answer is kept for `ttlMs`, and requests that ask for a key while it is being
 * looked up share that one call, so that a flood of one key costs one call. A failed call is not kept.
 */
export class Lookups<T> {
  readonly #answers: LRUCache<string, { value: T }>;
  readonly #pending = new Map<string, Promise<T>>();

  constructor(ttlMs: number) {
    // ttlResolution 0: read the clock on every check. The default keeps a read for 1 ms by a timer, which a busy
    // process (or a test's fake clock) can leave unfired, so that an expired answer would still be served.
    this.#answers = new LRUCache({ max: KEPT, ttl: ttlMs, ttlResolution: 0, perf: Date });
  }

  /** The kept answer for `key`, if there is one; nothing is asked. */
  peek(key: string): T | undefined {
    return this.#answers.get(key)?.value;
  }

  /** The kept answer for `key` at once, or `ask()`'s answer (shared with every request waiting for it). */
  get(key: string, ask: () => T | Promise<T>): T | Promise<T> {
    const kept = this.#answers.get(key);
    if (kept) return kept.value;
    let asked = this.#pending.get(key);
    if (!asked) {
      asked = Promise.resolve()
        .then(ask)
        .then((value) => {
          this.#answers.set(key, { value });
          return value;
        })
        .finally(() => this.#pending.delete(key));
      this.#pending.set(key, asked);
    }
    return asked;
  }
}
