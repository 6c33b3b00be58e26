// The bans of the records: a rule's, in force here at once and written until the store takes it; an operator's.
import type { Request } from 'express';
import { Checker } from '../shared/check.js';
import { RuntimeStateError } from '../shared/errors.js';
import type { OnError } from '../shared/hooks.js';
import { kindOfKey } from '../contract/keys.js';
import type { RecordCache } from './cache.js';
import type { StateCalls } from './calls.js';
import type { KeyOf } from './client-keys.js';
import { addressBan, type BanRecord, checkText, type Stored } from './kinds.js';
import { PendingBans } from './pending-bans.js';
import type { ActiveBan } from './types.js';
import { activeBan, banEvent, eventOf, listPage } from './views.js';

/**
 * The bans of one middleware, each one record of the store's runtime state: the rule's (option `ban`), decided by a
 * request, and the operators' (`ban()`, the operator's page). A change is written to the store first and applies
 * here when the store has it; only a rule's ban applies here at once, and stays here alone when the store cannot be
 * written, written again until it takes it (see PendingBans).
 */
export class Bans {
  readonly #pending: PendingBans;

  constructor(
    private readonly cache: RecordCache,
    private readonly calls: StateCalls,
    private readonly keyOf: KeyOf,
    private readonly report: OnError,
  ) {
    this.#pending = new PendingBans(
      (banKey, ban, req) => this.#writeRuleBan(banKey, ban, req),
      (banKey) => cache.banOf(banKey)?.seq === -1,
    );
  }

  /**
   * A rule's ban, decided by a request: in force here at once, then written unless a ban of the key is in force in
   * the store already (another instance's, which then replaces this one here). Resolves whether this wrote it. A ban
   * the store could not take holds here, and is written again until the store takes it; the failure goes to
   * `onError`, once.
   */
  rule(banKey: string, ban: BanRecord, req: Request): Promise<boolean> {
    this.cache.holdRuleBan(banKey, ban);
    return this.#writeRuleBan(banKey, ban, req).then(
      (taken) => taken,
      (error: unknown) => {
        const message =
          `a rule's ban of ${ban.key} could not be written to the store; it holds on this instance, and is written ` +
          'again until the store takes it.';
        this.report(new RuntimeStateError('ERR_STATE_WRITE', message, { cause: error }), req);
        this.#pending.keep(banKey, ban, req);
        return false;
      },
    );
  }

  #writeRuleBan(banKey: string, ban: BanRecord, req: Request | undefined): Promise<boolean> {
    const change = { field: `ban:${banKey}`, value: JSON.stringify(ban), endsAt: ban.until, when: 'absent' } as const;
    return this.calls
      .change([{ change, event: banEvent(ban) }], req, undefined)
      .then((result) => result.records[0]?.changed === true);
  }

  /** The store answers again: the rules' bans it could not take are written now. */
  storeAnswered(): void {
    this.#pending.answered();
  }

  /** An operator's ban; `known`: the end of the client's token when the caller knows it (from its grant request). */
  async ban(client: unknown, options: unknown, known = ''): Promise<boolean> {
    const check = new Checker('limits.ban');
    const { key, kind, address, tokenEnd: end } = this.keyOf(check, client);
    const o = check.options(options, 'options', '{ duration, reason }');
    check.unknownKeys(o, ['duration', 'reason'], (k) => `options.${k}`);
    const duration = check.seconds(o.duration, 'options.duration');
    const reason = o.reason === undefined ? 'operator' : checkText(check, o.reason, 'options.reason');
    this.calls.writable(check);
    return this.calls.bounded('limits.ban', async (bound) => {
      const since = Date.now();
      const tokenEnd = end || known || undefined;
      const ban: BanRecord = { key, kind, reason, since, until: since + duration, by: 'operator', tokenEnd };
      const field = `ban:${address ? addressBan(key) : key}`;
      const change = { field, value: JSON.stringify(ban), endsAt: ban.until, when: 'always' } as const;
      await this.calls.change([{ change, event: banEvent(ban) }], undefined, bound);
      return true;
    });
  }

  /**
   * Lifts the bans of a key (its own and its address's), both in one change of the store. Resolves whether the store
   * had one in force (or this instance had one the store could not take).
   */
  unban(key: string): Promise<boolean> {
    return this.calls.bounded('limits.unban', async (bound) => {
      const at = Date.now();
      let lifted = false;
      const changes = [key, addressBan(key)].map((banKey) => {
        const known = this.cache.banOf(banKey);
        const event = eventOf('unban', key, known?.kind ?? (banKey === key ? kindOfKey(key) : 'ip'), at);
        return { change: { field: `ban:${banKey}`, value: null, endsAt: null, when: 'always' } as const, event };
      });
      const result = await this.calls.change(changes, undefined, bound);
      for (const banKey of [key, addressBan(key)]) {
        // A rule's ban only this instance has: the store had none to lift.
        const held = this.cache.dropHeldBan(banKey);
        if (held) {
          this.#pending.forget(banKey);
          if (held.until > at) lifted = true;
        }
      }
      return lifted || result.records.some((done) => done.changed);
    });
  }

  /** The key to unban: a key as `onBan` reported it, or a client. */
  unbanKey(client: unknown): string {
    if (typeof client === 'string' && client !== '') return client;
    return this.keyOf(new Checker('limits.unban'), client).key;
  }

  /** The bans in force, rules' and operators', as the store has them now. */
  async list(): Promise<ActiveBan[]> {
    return (await this.page(0, Infinity, 'limits.bans')).bans;
  }

  /**
   * The bans in force from `offset` (or, past the last, from the start of the last `limit` of them), at most `limit`,
   * in the order of `list()`; where they start, and how many are in force.
   */
  async page(
    offset: number,
    limit: number,
    source = 'limitsAdmin',
  ): Promise<{ total: number; offset: number; bans: ActiveBan[] }> {
    await this.calls.synced(source);
    const { total, from, rows } = listPage(this.cache.bansInForce(), offset, limit, activeBan);
    return { total, offset: from, bans: rows };
  }

  /** The bans in force of one client key: its own, and for an `ip:` key its address's. */
  async of(key: string): Promise<ActiveBan[]> {
    await this.calls.synced('limitsAdmin');
    const now = Date.now();
    return this.cache
      .bansOfKey(key)
      .filter((ban): ban is Stored<BanRecord> => ban !== undefined && ban.until > now)
      .map(activeBan);
  }

  /** Stops writing again the rules' bans the store has not taken. */
  close(): void {
    this.#pending.close();
  }
}
