// The lost records: an operator's ban or grant the store lost, kept for an operator to restore or dismiss.
import type { RecordCache } from './cache.js';
import type { StateCalls } from './calls.js';
import type { LostRecord } from './types.js';
import { banEvent, endOf, grantEvent, isBan, lostRecord } from './views.js';

/**
 * The operators' bans and grants that an instance knew and the store lost (a restart without persistence, a flush, a
 * failover): never applied again by themselves, kept until they would have ended.
 */
export class LostRecords {
  constructor(
    private readonly cache: RecordCache,
    private readonly calls: StateCalls,
  ) {}

  /** The operators' bans and grants the store lost, oldest loss first. */
  async list(): Promise<LostRecord[]> {
    await this.calls.synced('limits.lost');
    const now = Date.now();
    return [...this.cache.lostRecords()]
      .filter((lost) => endOf(lost.record) > now)
      .sort((a, b) => a.lostAt - b.lostAt || (a.field < b.field ? -1 : 1))
      .map(lostRecord);
  }

  /**
   * Applies again an operator's ban or grant the store lost, and forgets the lost record, in one change of the store;
   * resolves false when it has ended or is gone.
   */
  restore(id: unknown): Promise<boolean> {
    return this.calls.bounded('limits.restoreLost', async (bound) => {
      await this.calls.read(bound);
      const lost = typeof id === 'string' ? this.cache.lostOf(id) : undefined;
      if (!lost) return false;
      const now = Date.now();
      const record = lost.record;
      const dismiss = { change: { field: `lost:${lost.field}`, value: null, endsAt: null, when: 'always' } as const };
      if (endOf(record) <= now) {
        await this.calls.change([dismiss], undefined, bound);
        return false;
      }
      const event = isBan(record) ? banEvent(record) : grantEvent(record);
      const change = {
        field: lost.field,
        value: JSON.stringify(record),
        endsAt: record.until,
        when: 'always',
      } as const;
      await this.calls.change([{ change, event: { ...event, at: new Date(now) } }, dismiss], undefined, bound);
      return true;
    });
  }

  /** Forgets a lost record. */
  dismiss(id: unknown): Promise<boolean> {
    return this.calls.bounded('limits.dismissLost', async (bound) => {
      if (typeof id !== 'string' || id === '') return false;
      const change = { field: `lost:${id}`, value: null, endsAt: null, when: 'always', event: undefined } as const;
      return (await this.calls.write([{ ...change, now: Date.now() }], bound)).records[0]?.changed === true;
    });
  }
}
