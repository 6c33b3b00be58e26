// The foreign entries of the store's runtime state: written by something else, or another version; skipped, listed.
import type { CallBound } from '../stores/call-bound.js';
import type { RecordCache } from './cache.js';
import type { StateCalls } from './calls.js';
import type { History } from './history.js';
import type { ForeignEntry } from './types.js';
import { digest, shownText } from './views.js';

/**
 * The entries of the store's runtime state that no instance of this version applies, the records' and the history's:
 * each told to `onError` once (by the cache, or the history), listed until an operator removes it.
 */
export class ForeignEntries {
  constructor(
    private readonly cache: RecordCache,
    private readonly calls: StateCalls,
    private readonly history: History,
  ) {}

  /** The entries this instance skips, records first, then the history's. */
  list(): Promise<ForeignEntry[]> {
    return this.calls.bounded('limits.foreign', (bound) => this.#list(bound));
  }

  async #list(bound: CallBound): Promise<ForeignEntry[]> {
    await this.calls.read(bound);
    const entries: ForeignEntry[] = [...this.cache.foreignRecords()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([field, { shown: text, problem }]) => ({ id: `record ${field}`, place: 'record', field, text, problem }));
    for (const json of await bound.race(this.calls.state.history())) {
      const problem = this.history.problemOf(json);
      if (problem !== undefined)
        entries.push({
          id: `history ${digest(json)}`,
          place: 'history',
          field: undefined,
          text: shownText(json),
          problem,
        });
    }
    return entries;
  }

  /** Removes an entry `list()` listed, if it is still as listed; resolves whether it was there. */
  remove(id: unknown): Promise<boolean> {
    return this.calls.bounded('limits.removeForeign', async (bound) => {
      if (typeof id !== 'string') return false;
      if (id.startsWith('record ')) {
        const field = id.slice('record '.length);
        const found = this.cache.foreignRecords().get(field);
        if (!found) return false;
        const change = { field, value: null, endsAt: null, when: { sha1: found.sha1 }, event: undefined };
        const removed = (await this.calls.write([{ ...change, now: Date.now() }], bound)).records[0]?.changed === true;
        if (removed) this.cache.foreignRemoved(field);
        return removed;
      }
      if (id.startsWith('history ')) {
        const json = (await bound.race(this.calls.state.history())).find((entry) => `history ${digest(entry)}` === id);
        if (json === undefined || this.history.problemOf(json) === undefined) return false;
        return bound.race(this.calls.state.removeHistory(json, bound.applyBy));
      }
      return false;
    });
  }
}
