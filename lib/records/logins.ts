// The operator's page's logins: bound to the logins' epoch and to the state they were made in; a logout ends its own.
import { createHash, randomBytes } from 'node:crypto';
import { MAX_DURATION_MS } from '../shared/check.js';
import type { CallBound } from '../stores/call-bound.js';
import type { Parts } from './calls.js';
import type { EndedLogin, EpochRecord } from './kinds.js';

/**
 * Where an operator's logins are ended together: a login's record of an id no login has, which older versions
 * read as one, and whose time and number bind that operator's logins.
 */
const operatorField = (name: string): string =>
  createHash('sha256').update(`operator\n${name}`).digest('base64url').slice(0, 22);

/** The logins as every instance sees them: a new epoch ("log out everywhere") or a replaced state ends them all. */
export function logins({ cache, calls }: Pick<Parts, 'cache' | 'calls'>) {
  const epoch = (): string | undefined => {
    const record = cache.logins.get('epoch');
    return record && 'epoch' in record ? record.epoch : undefined;
  };
  const newEpoch = async (when: 'absent' | 'always', bound: CallBound): Promise<string> => {
    const record: EpochRecord = { epoch: randomBytes(16).toString('base64url'), since: Date.now() };
    const result = (await calls.change([{ field: 'session:epoch', record, when }], bound)).records[0];
    // Another instance's epoch, written first, is the one: the store answers it.
    const stored = result?.stored === undefined ? undefined : (JSON.parse(result.stored) as Partial<EpochRecord>);
    return typeof stored?.epoch === 'string' ? stored.epoch : record.epoch;
  };
  return {
    stateId: () => cache.stateId(),
    epoch,
    ended(id: string): boolean {
      const record = id === 'epoch' ? undefined : cache.logins.get(id);
      return record !== undefined && 'until' in record && record.until > Date.now();
    },
    epochNow: (): Promise<string> =>
      calls.bounded('limitsAdmin', async (bound) => {
        await calls.read(bound);
        return epoch() ?? newEpoch('absent', bound);
      }),
    endAll: (): Promise<string> => calls.bounded('limitsAdmin', (bound) => newEpoch('always', bound)),
    /** What an operator's logins are bound to: '' until they are first ended. */
    operatorEpoch(name: string): string {
      const record = cache.logins.get(operatorField(name));
      return record && 'endedAt' in record ? `${record.endedAt}.${record.seq}` : '';
    },
    /** Every login of one operator, on every instance. */
    endOperator: (name: string): Promise<void> =>
      calls.bounded('limitsAdmin', async (bound) => {
        const now = Date.now();
        const record: EndedLogin = { id: operatorField(name), endedAt: now, until: now + MAX_DURATION_MS };
        await calls.change([{ field: `session:${record.id}`, record }], bound);
      }),
    end: (id: string, until: number): Promise<void> =>
      calls.bounded('limitsAdmin', async (bound) => {
        const now = Date.now();
        if (until <= now) return;
        const record: EndedLogin = { id, endedAt: now, until };
        await calls.change([{ field: `session:${id}`, record }], bound);
      }),
  };
}
