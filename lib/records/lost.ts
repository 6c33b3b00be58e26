// The lost records: an operator's ban or grant the store lost (a restart, a flush, a failover), to restore or dismiss.
import type { Parts } from './calls.js';
import { Checker } from '../shared/check.js';
import { byOption, endOf } from './kinds.js';
import type { LostRecord } from './types.js';
import { banEvent, grantEvent, lostRecord } from './views.js';

export function lostMethods({ cache, calls }: Parts) {
  return {
    async lost(): Promise<LostRecord[]> {
      await calls.synced('limits.lost');
      const now = Date.now();
      return [...cache.lost.values()]
        .filter((lost) => endOf(lost.record) > now)
        .sort((a, b) => a.lostAt - b.lostAt || (a.field < b.field ? -1 : 1))
        .map(lostRecord);
    },
    /** The record applied again and the lost one forgotten, in one change; false when it has ended or is gone. */
    restoreLost(id: unknown, options?: unknown): Promise<boolean> {
      const operator = byOption(new Checker('limits.restoreLost'), options);
      return calls.bounded('limits.restoreLost', async (bound) => {
        await calls.read(bound);
        const lost = typeof id === 'string' ? cache.lost.get(id) : undefined;
        if (!lost) return false;
        const now = Date.now();
        const record = lost.record;
        const dismiss = { field: `lost:${lost.field}`, record: null };
        if (endOf(record) <= now) {
          await calls.change([dismiss], bound);
          return false;
        }
        const event = 'by' in record ? banEvent(record) : grantEvent(record);
        // The event says who restored it; the record, who made it.
        const restored = { ...event, at: new Date(now), operator: operator ?? event.operator };
        await calls.change([{ field: lost.field, record, event: restored }, dismiss], bound);
        return true;
      });
    },
    dismissLost(id: unknown): Promise<boolean> {
      return calls.bounded('limits.dismissLost', async (bound) => {
        if (typeof id !== 'string' || id === '') return false;
        return (await calls.change([{ field: `lost:${id}`, record: null }], bound)).records[0]?.changed === true;
      });
    },
  };
}
