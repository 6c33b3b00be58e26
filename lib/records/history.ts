// The history of changes of bans and grants, as the store keeps the last of them; and the foreign entries of the state.
import { Checker, show } from '../shared/check.js';
import type { CallBound } from '../stores/call-bound.js';
import { HISTORY_MAX } from '../stores/state.js';
import type { Parts } from './calls.js';
import type { ChangeEvent, ForeignEntry } from './types.js';
import { attempt, checkEvent, Problem } from './kinds.js';
import { digest, shownText } from './views.js';

function historyOptions(options: unknown): { since: number | undefined; limit: number } {
  const check = new Checker('limits.history');
  const o = check.options(options, 'options', '{ since, limit }');
  check.unknownKeys(o, ['since', 'limit'], (k) => `options.${k}`);
  const given: unknown = o.since instanceof Date ? o.since.getTime() : o.since;
  if (given !== undefined && (typeof given !== 'number' || !Number.isFinite(given)))
    check.invalid('options.since', `must be a Date or epoch milliseconds; got ${show(o.since)}.`);
  const limit = o.limit === undefined ? HISTORY_MAX : check.count(o.limit, 'options.limit');
  return { since: given as number | undefined, limit };
}

/** The changes since `since`, at most `limit`; an entry that is no change is told to `foreign`. */
function changesOf(
  texts: readonly string[],
  { since, limit }: { since: number | undefined; limit: number },
  foreign: (json: string, problem: string) => void,
): ChangeEvent[] {
  const events: ChangeEvent[] = [];
  for (const json of texts) {
    const event = attempt(() => checkEvent(json));
    if (event instanceof Problem) {
      foreign(json, event.message);
      continue;
    }
    if (since !== undefined && event.at.getTime() < since) break;
    events.push(event);
    if (events.length === limit) break;
  }
  return events;
}

async function foreignEntries({ cache, calls }: Parts, bound: CallBound): Promise<ForeignEntry[]> {
  await calls.read(bound);
  const entries: ForeignEntry[] = [...cache.foreign]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([field, { shown: text, problem }]) => ({ id: `record ${field}`, place: 'record', field, text, problem }));
  for (const json of await bound.race(calls.state.history())) {
    const problem = cache.historyProblem(json);
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

export function historyMethods(parts: Parts) {
  const { cache, calls } = parts;
  return {
    async history(options?: unknown): Promise<ChangeEvent[]> {
      const checked = historyOptions(options);
      const texts = await calls.bounded('limits.history', (bound) => bound.race(calls.state.history()));
      return changesOf(texts, checked, (json, problem) => cache.foreignFound('history', json, problem));
    },
    foreign: (): Promise<ForeignEntry[]> => calls.bounded('limits.foreign', (bound) => foreignEntries(parts, bound)),
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
          const json = (await bound.race(calls.state.history())).find((entry) => `history ${digest(entry)}` === id);
          if (json === undefined || cache.historyProblem(json) === undefined) return false;
          return bound.race(calls.state.removeHistory(json, bound.applyBy));
        }
        return false;
      });
    },
  };
}
