// The operators' logins in the records: the epoch every login is bound to, and the logins ended by their logout.
import { randomBytes } from 'node:crypto';
import type { CallBound } from '../stores/call-bound.js';
import type { RecordCache } from './cache.js';
import type { StateCalls } from './calls.js';
import type { EndedLogin, EpochRecord } from './kinds.js';

/**
 * The operator's page's logins, as every instance sees them: a login is bound to the logins' epoch and to the state
 * it was made in, so that a new epoch ("log out everywhere") or a state that replaced the one it was made in ends
 * every login made before; a logout ends its own, on every instance.
 */
export class Logins {
  constructor(
    private readonly cache: RecordCache,
    private readonly calls: StateCalls,
  ) {}

  /**
   * Which state this instance follows: its epoch and copy mark, both new when the store loses its data or a copy
   * behind it takes its place. Logins are bound to it, so that none outlives a state that was replaced.
   */
  stateId(): string {
    return this.cache.stateId();
  }

  /** The epoch of the logins, as far as this instance knows; undefined while the store has none. */
  epoch(): string | undefined {
    const record = this.cache.loginRecordOf('epoch');
    return record && 'epoch' in record ? record.epoch : undefined;
  }

  /** Whether the login `id` was ended by its logout, as far as this instance knows. */
  ended(id: string): boolean {
    const record = id === 'epoch' ? undefined : this.cache.loginRecordOf(id);
    return record !== undefined && 'until' in record && record.until > Date.now();
  }

  /** The epoch a login is made in now: the store's, or a new one when it has none (a first login, or after a loss). */
  epochNow(): Promise<string> {
    return this.calls.bounded('limitsAdmin', async (bound) => {
      await this.calls.read(bound);
      return this.epoch() ?? this.#newEpoch('absent', bound);
    });
  }

  /** Ends every login made before, on every instance: a new epoch. */
  endAll(): Promise<string> {
    return this.calls.bounded('limitsAdmin', (bound) => this.#newEpoch('always', bound));
  }

  async #newEpoch(when: 'absent' | 'always', bound: CallBound): Promise<string> {
    const now = Date.now();
    const record: EpochRecord = { epoch: randomBytes(16).toString('base64url'), since: now };
    const change = { field: 'session:epoch', value: JSON.stringify(record), endsAt: null, when, event: undefined };
    const result = (await this.calls.write([{ ...change, now }], bound)).records[0];
    // Another instance's epoch, written first, is the one: the store answers it.
    const stored = result?.stored === undefined ? undefined : (JSON.parse(result.stored) as Partial<EpochRecord>);
    return typeof stored?.epoch === 'string' ? stored.epoch : record.epoch;
  }

  /** Ends one login on every instance, until `until`, when it would have ended by itself. */
  end(id: string, until: number): Promise<void> {
    return this.calls.bounded('limitsAdmin', async (bound) => {
      const now = Date.now();
      if (until <= now) return;
      const record: EndedLogin = { id, endedAt: now, until };
      const change = { field: `session:${id}`, value: JSON.stringify(record), endsAt: until, when: 'always' } as const;
      await this.calls.write([{ ...change, event: undefined, now }], bound);
    });
  }
}
