// The history of changes of bans and grants, as the store keeps the last of them; and the foreign entries of the state.
import { Checker, show } from '../shared/check.js';
import { HISTORY_MAX } from '../stores/state.js';
import type { Parts } from './calls.js';
import type { ChangeEvent, ForeignEntry } from './types.js';
import { attempt, checkEvent, Problem } from './kinds.js';
import { digest, shownText } from './views.js';

const historyId = (json: string): string => `history ${digest(json)}`;

export function historyMethods({ cache, calls }: Parts) {
  return {
    /** The changes since `since`, at most `limit`; an entry that is no change is a foreign entry. */
    async history(options?: unknown): Promise<ChangeEvent[]> {
      const check = new Checker('limits.history');
      const o = check.options(options, 'options', '{ since, limit }');
      check.unknownKeys(o, ['since', 'limit'], (k) => `options.${k}`);
      const since: unknown = o.since instanceof Date ? o.since.getTime() : o.since;
      if (since !== undefined && (typeof since !== 'number' || !Number.isFinite(since)))
        check.invalid('options.since', `must be a Date or epoch milliseconds; got ${show(o.since)}.`);
      const limit = o.limit === undefined ? HISTORY_MAX : check.count(o.limit, 'options.limit');
      const events: ChangeEvent[] = [];
      for (const json of await calls.bounded('limits.history', (bound) => bound.race(calls.state.history()))) {
        const event = attempt(() => checkEvent(json));
        if (event instanceof Problem) {
          cache.foreignFound('history', json, event.message);
          continue;
        }
        if (since !== undefined && event.at.getTime() < (since as number)) break;
        events.push(event);
        if (events.length === limit) break;
      }
      return events;
    },
    foreign: (): Promise<ForeignEntry[]> =>
      calls.bounded('limits.foreign', async (bound) => {
        await calls.read(bound);
        const entries: ForeignEntry[] = [...cache.foreign.values()]
          .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
          .map(({ sha1: _sha1, ...entry }) => entry);
        for (const json of await bound.race(calls.state.history())) {
          const problem = cache.historyProblem(json);
          if (problem !== undefined)
            entries.push({ id: historyId(json), place: 'history', field: undefined, text: shownText(json), problem });
        }
        return entries;
      }),
    removeForeign(id: unknown): Promise<boolean> {
      return calls.bounded('limits.removeForeign', async (bound) => {
        if (typeof id !== 'string') return false;
        if (id.startsWith('record ')) {
          const field = id.slice('record '.length);
          const found = cache.foreign.get(field);
          if (!found) return false;
          const write = { field, record: null, when: { sha1: found.sha1 } };
          const removed = (await calls.change([write], bound)).records[0]?.changed === true;
          if (removed) cache.foreign.delete(field);
          return removed;
        }
        if (id.startsWith('history ')) {
          const json = (await bound.race(calls.state.history())).find((entry) => historyId(entry) === id);
          if (json === undefined || cache.historyProblem(json) === undefined) return false;
          return bound.race(calls.state.removeHistory(json, bound.applyBy));
        }
        return false;
      });
    },
  };
}
