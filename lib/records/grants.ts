// The grants of the records: made at runtime by an operator (`grant()`, a grant request's approval), until revoked.
import { Checker, MAX_DURATION_MS, show } from '../shared/check.js';
import type { CallBound } from '../stores/call-bound.js';
import type { RequestPut } from '../stores/state.js';
import type { RecordCache } from './cache.js';
import type { EventChange, StateCalls } from './calls.js';
import type { KeyOf } from './client-keys.js';
import { type CheckGrant, checkText, type GrantRecord } from './kinds.js';
import type { ActiveGrant } from './types.js';
import { activeGrant, eventOf, grantEvent, listPage } from './views.js';

/**
 * The grants made at runtime of one middleware, each one record of the store's runtime state, which win over the
 * `grants` option. A change is written to the store first and applies here when the store has it.
 */
export class RuntimeGrants {
  constructor(
    private readonly cache: RecordCache,
    private readonly calls: StateCalls,
    private readonly keyOf: KeyOf,
    private readonly checkGrant: CheckGrant,
  ) {}

  /** A grant made at runtime, checked: its field's change and its history entry. */
  #grantChange(check: Checker, client: unknown, grant: unknown, options: unknown, known: string): EventChange {
    const { key, tokenEnd: end } = this.keyOf(check, client);
    const checked = this.checkGrant(check, grant, 'grant');
    const o = check.options(options, 'options', '{ until, note }');
    check.unknownKeys(o, ['until', 'note'], (k) => `options.${k}`);
    const since = Date.now();
    let until: number | null = null;
    if (o.until !== undefined) {
      const at: unknown = o.until instanceof Date ? o.until.getTime() : o.until;
      if (typeof at !== 'number' || !Number.isSafeInteger(at) || at <= since || at - since > MAX_DURATION_MS) {
        check.invalid(
          'options.until',
          `must be a Date (or epoch milliseconds) in the future, at most one year ahead; got ${show(o.until)}.`,
        );
      }
      until = at as number;
    }
    const note = o.note === undefined ? null : checkText(check, o.note, 'options.note');
    this.calls.writable(check);
    const record: GrantRecord = { key, grant: checked, since, until, note, tokenEnd: end || known || undefined };
    const change = { field: `grant:${key}`, value: JSON.stringify(record), endsAt: until, when: 'always' } as const;
    return { change, event: grantEvent(record) };
  }

  grant(client: unknown, grant: unknown, options: unknown): Promise<boolean> {
    const change = this.#grantChange(new Checker('limits.grant'), client, grant, options, '');
    return this.calls.bounded('limits.grant', async (bound) => {
      await this.calls.change([change], undefined, bound);
      return true;
    });
  }

  /**
   * A grant given with a grant request's decision, in one change of the store: the grant is given only when the
   * request still holds `request.expected`. Resolves the request's text as written, or undefined when it did not.
   * `known`: the end of the request's token, which the grant keeps for the pages.
   */
  withDecision(
    check: Checker,
    grant: unknown,
    options: unknown,
    request: RequestPut,
    known: string,
  ): Promise<string | undefined> {
    const change = this.#grantChange(check, { key: request.meta.key }, grant, options, known);
    const run = async (bound: CallBound) => (await this.calls.change([change], undefined, bound, request)).request;
    return this.calls.bounded(check.source, run);
  }

  revoke(client: unknown): Promise<boolean> {
    const check = new Checker('limits.revoke');
    const { key, kind } = this.keyOf(check, client);
    this.calls.writable(check);
    return this.calls.bounded('limits.revoke', async (bound) => {
      const event = eventOf('revoke', key, kind, Date.now());
      const change = { field: `grant:${key}`, value: null, endsAt: null, when: 'always' } as const;
      const result = await this.calls.change([{ change, event }], undefined, bound);
      return result.records[0]?.changed === true;
    });
  }

  /** The grants made at runtime in force, as the store has them now. */
  async list(): Promise<ActiveGrant[]> {
    return (await this.page(0, Infinity, 'limits.grants')).grants;
  }

  /** The grants in force from `offset`, at most `limit`, as `Bans.page()` pages the bans. */
  async page(
    offset: number,
    limit: number,
    source = 'limitsAdmin',
  ): Promise<{ total: number; offset: number; grants: ActiveGrant[] }> {
    await this.calls.synced(source);
    const { total, from, rows } = listPage(this.cache.grantsInForce(), offset, limit, activeGrant);
    return { total, offset: from, grants: rows };
  }

  /** The grant in force of one client key. */
  async of(key: string): Promise<ActiveGrant | undefined> {
    await this.calls.synced('limitsAdmin');
    const grant = this.cache.grantRecordOf(key);
    return grant && (grant.until === null || grant.until > Date.now()) ? activeGrant(grant) : undefined;
  }
}
