// The history of the records: the changes of bans and grants, newest first, as the store keeps the last of them.
import { Checker, show } from '../shared/check.js';
import { HISTORY_MAX } from '../stores/state.js';
import type { RecordCache } from './cache.js';
import type { StateCalls } from './calls.js';
import { checkEvent, Problem } from './kinds.js';
import type { ChangeEvent } from './types.js';
import { changesOf } from './views.js';

/** The history of the changes of bans and grants, in the store's runtime state, at most the last HISTORY_MAX. */
export class History {
  /** Entries of the history as judged (undefined: a change; else why not), at most twice the history's. */
  readonly #judged = new Map<string, string | undefined>();

  constructor(
    private readonly cache: RecordCache,
    private readonly calls: StateCalls,
  ) {}

  /** The changes, newest first: since a time, at most `limit` of them. Entries that are not changes are skipped. */
  async list(options: unknown): Promise<ChangeEvent[]> {
    const check = new Checker('limits.history');
    const checked = this.#options(check, options);
    const texts = await this.calls.bounded('limits.history', (bound) => bound.race(this.calls.state.history()));
    return changesOf(texts, checked, (json, problem) => this.cache.foreignFound('history', json, problem));
  }

  #options(check: Checker, options: unknown): { since: number | undefined; limit: number } {
    const o = check.options(options, 'options', '{ since, limit }');
    check.unknownKeys(o, ['since', 'limit'], (k) => `options.${k}`);
    const given: unknown = o.since instanceof Date ? o.since.getTime() : o.since;
    if (given !== undefined && (typeof given !== 'number' || !Number.isFinite(given)))
      check.invalid('options.since', `must be a Date or epoch milliseconds; got ${show(o.since)}.`);
    const since = given as number | undefined;
    const limit = o.limit === undefined ? HISTORY_MAX : check.count(o.limit, 'options.limit');
    return { since, limit };
  }

  /** Why an entry of the history is not a change this version reads; undefined for a change. */
  problemOf(json: string): string | undefined {
    // Each load of the operator's page looks at the whole history: an entry is judged once.
    if (this.#judged.has(json)) return this.#judged.get(json);
    let problem: string | undefined;
    try {
      checkEvent(json);
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      problem = error.message;
    }
    if (this.#judged.size >= 2 * HISTORY_MAX) this.#judged.clear();
    this.#judged.set(json, problem);
    return problem;
  }
}
