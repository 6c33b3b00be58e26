// Answers of the app's lookups (authenticate, grants), kept briefly per key, with one call for concurrent requests.
import { LRUCache } from 'lru-cache';

const KEPT = 10_000;

export class Lookups<T> {
  readonly #answers: LRUCache<string, { value: T }>;
  readonly #pending = new Map<string, Promise<T>>();

  constructor(ttlMs: number) {
    // ttlResolution 0: the default's 1 ms timer may not fire under load or a fake clock, serving expired answers.
    this.#answers = new LRUCache({ max: KEPT, ttl: ttlMs, ttlResolution: 0, perf: Date });
  }

  peek(key: string): T | undefined {
    return this.#answers.get(key)?.value;
  }

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
