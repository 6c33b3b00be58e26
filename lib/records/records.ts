// The records of the store's runtime state (bans, grants, lost records, logins, resets): this instance's cache of them.
import { randomBytes } from 'node:crypto';
import type { Request } from 'express';
import { Checker, MAX_DURATION_MS, show } from '../shared/check.js';
import { RuntimeStateError } from '../shared/errors.js';
import {
  addressBan,
  type BanRecord,
  checkEvent,
  checkText,
  type EndedLogin,
  type EpochRecord,
  type GrantRecord,
  Problem,
  type ResetRecord,
  type Stored,
  storedBan,
} from './kinds.js';
import { kindOfKey } from '../contract/keys.js';
import { HISTORY_MAX, type RequestPut } from '../stores/state.js';
import type { CallBound } from '../stores/call-bound.js';
import type { ActiveBan, ActiveGrant, ChangeEvent, ForeignEntry, Grant, LostRecord } from './types.js';
import { RecordCache } from './cache.js';
import { type ClientKeyOf, clientKeyOf } from './client-keys.js';
import { PendingBans } from './pending-bans.js';
import {
  digest,
  banEvent,
  eventOf,
  grantEvent,
  listPage,
  activeBan,
  activeGrant,
  endOf,
  isBan,
  shownText,
  lostRecord,
  changesOf,
} from './views.js';

/**
 * The bans, grants, lost records, logins and resets of one middleware. The store's runtime state holds them, one
 * record each, and numbers every change; this instance keeps a cache of them that follows those changes (at once
 * with the memory store, every 250 ms with the Redis store, reading only what changed), and the request path reads
 * only the cache, synchronously. A change made here is written to the store first and applies here when the store
 * has it; only a rule's ban applies here at once (the requests in flight with the one that banned must find it), and
 * stays here alone when the store cannot be written.
 */
export class RuntimeRecords extends RecordCache {
  /** Checks a grant as `grant()` does. Throws ListingLimitsError naming `field`. */
  checkGrant(check: Checker, grant: unknown, field: string): Grant {
    return this._context.checkGrant(check, grant, field);
  }

  /** The key of a client named as an operator knows it (clientKeyOf). Throws ListingLimitsError naming the field. */
  keyOf(check: Checker, client: unknown): ClientKeyOf {
    return clientKeyOf(check, client, this._context.ipOf, (key) => this._grants.get(key) ?? this._bans.get(key));
  }

  #writable(check: Checker): void {
    if (!this._shared) {
      check.fail(
        'ERR_UNSUPPORTED_STORE',
        'options.store',
        'keeps no state of bans and grants (a custom store): a change made here would hold on this instance only. ' +
          'Use memoryStore() or redisStore(), or ban and grant through the `ban` and `grants` options.',
      );
    }
  }

  /**
   * A rule's ban, decided by a request: in force here at once, then written unless a ban of the key is in force in
   * the store already (another instance's, which then replaces this one here). Resolves whether this wrote it. A ban
   * the store could not take holds here, and is written again until the store takes it (see PendingBans); the failure
   * goes to `onError`, once.
   */
  ruleBan(banKey: string, ban: BanRecord, req: Request): Promise<boolean> {
    (banKey.startsWith('addr:') ? this._addressBans : this._bans).add(banKey, storedBan(ban, -1), ban.since);
    this._bansEnd = Math.max(this._bansEnd, ban.until);
    return this.#writeRuleBan(banKey, ban, req).then(
      (taken) => taken,
      (error: unknown) => {
        const message =
          `a rule's ban of ${ban.key} could not be written to the store; it holds on this instance, and is written ` +
          'again until the store takes it.';
        this._context.report(new RuntimeStateError('ERR_STATE_WRITE', message, { cause: error }), req);
        this.#pending.keep(banKey, ban, req);
        return false;
      },
    );
  }

  /** Rules' bans the store could not take yet, written again until it takes them. */
  readonly #pending = new PendingBans(
    (banKey, ban, req) => this.#writeRuleBan(banKey, ban, req),
    (banKey) => (banKey.startsWith('addr:') ? this._addressBans : this._bans).get(banKey)?.seq === -1,
  );

  /** The store answers again: the rules' bans it could not take are written now. */
  protected override _answered(): void {
    this.#pending.answered();
  }

  #writeRuleBan(banKey: string, ban: BanRecord, req: Request | undefined): Promise<boolean> {
    const change = { field: `ban:${banKey}`, value: JSON.stringify(ban), endsAt: ban.until, when: 'absent' } as const;
    return this._change([{ change, event: banEvent(ban) }], req, undefined).then(
      (result) => result.records[0]?.changed === true,
    );
  }

  /** An operator's ban; `known`: the end of the client's token when the caller knows it (from its grant request). */
  async banClient(client: unknown, options: unknown, known = ''): Promise<boolean> {
    const check = new Checker('limits.ban');
    const { key, kind, address, tokenEnd: end } = this.keyOf(check, client);
    const o = check.options(options, 'options', '{ duration, reason }');
    check.unknownKeys(o, ['duration', 'reason'], (k) => `options.${k}`);
    const duration = check.seconds(o.duration, 'options.duration');
    const reason = o.reason === undefined ? 'operator' : checkText(check, o.reason, 'options.reason');
    this.#writable(check);
    return this.bounded('limits.ban', async (bound) => {
      const since = Date.now();
      const tokenEnd = end || known || undefined;
      const ban: BanRecord = { key, kind, reason, since, until: since + duration, by: 'operator', tokenEnd };
      const field = `ban:${address ? addressBan(key) : key}`;
      const change = { field, value: JSON.stringify(ban), endsAt: ban.until, when: 'always' } as const;
      await this._change([{ change, event: banEvent(ban) }], undefined, bound);
      return true;
    });
  }

  /**
   * Lifts the bans of a key (its own and its address's), both in one change of the store. Resolves whether the store
   * had one in force.
   */
  unban(key: string): Promise<boolean> {
    return this.bounded('limits.unban', async (bound) => {
      const at = Date.now();
      let lifted = false;
      const changes = [key, addressBan(key)].map((banKey) => {
        const cache = banKey.startsWith('addr:') ? this._addressBans : this._bans;
        const known = cache.get(banKey);
        const event = eventOf('unban', key, known?.kind ?? (banKey === key ? kindOfKey(key) : 'ip'), at);
        return { change: { field: `ban:${banKey}`, value: null, endsAt: null, when: 'always' } as const, event };
      });
      const result = await this._change(changes, undefined, bound);
      for (const banKey of [key, addressBan(key)]) {
        const cache = banKey.startsWith('addr:') ? this._addressBans : this._bans;
        const known = cache.get(banKey);
        // A rule's ban only this instance has: the store had none to lift.
        if (known && known.seq < 0) {
          cache.delete(banKey);
          this.#pending.forget(banKey);
          if (known.until > at) lifted = true;
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

  /** A grant made at runtime, checked: its field's change and its history entry. */
  #grantChange(check: Checker, client: unknown, grant: unknown, options: unknown, known: string) {
    const { key, tokenEnd: end } = this.keyOf(check, client);
    const checked = this._context.checkGrant(check, grant, 'grant');
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
    this.#writable(check);
    const record: GrantRecord = { key, grant: checked, since, until, note, tokenEnd: end || known || undefined };
    const change = { field: `grant:${key}`, value: JSON.stringify(record), endsAt: until, when: 'always' } as const;
    return { change, event: grantEvent(record) };
  }

  grant(client: unknown, grant: unknown, options: unknown): Promise<boolean> {
    const change = this.#grantChange(new Checker('limits.grant'), client, grant, options, '');
    return this.bounded('limits.grant', async (bound) => {
      await this._change([change], undefined, bound);
      return true;
    });
  }

  /**
   * A grant given with a grant request's decision, in one change of the store: the grant is given only when the
   * request still holds `request.expected`. Resolves the request's text as written, or undefined when it did not.
   * `known`: the end of the request's token, which the grant keeps for the pages.
   */
  grantWithDecision(check: Checker, grant: unknown, options: unknown, request: RequestPut, known: string) {
    const change = this.#grantChange(check, { key: request.meta.key }, grant, options, known);
    const run = async (bound: CallBound) => (await this._change([change], undefined, bound, request)).request;
    return this.bounded(check.source, run);
  }

  revoke(client: unknown): Promise<boolean> {
    const check = new Checker('limits.revoke');
    const { key, kind } = this.keyOf(check, client);
    this.#writable(check);
    return this.bounded('limits.revoke', async (bound) => {
      const event = eventOf('revoke', key, kind, Date.now());
      const change = { field: `grant:${key}`, value: null, endsAt: null, when: 'always' } as const;
      const result = await this._change([{ change, event }], undefined, bound);
      return result.records[0]?.changed === true;
    });
  }

  /**
   * Which state this instance follows: its epoch and copy mark, both new when the store loses its data or a copy
   * behind it takes its place. Logins are bound to it, so that none outlives a state that was replaced.
   */
  stateId(): string {
    return `${this._epoch ?? ''}/${this._copy ?? ''}`;
  }

  /** The epoch of the operators' logins, as far as this instance knows; undefined while the store has none. */
  loginEpoch(): string | undefined {
    const record = this._logins.get('epoch');
    return record && 'epoch' in record ? record.epoch : undefined;
  }

  /** Whether the login `id` was ended by its logout, as far as this instance knows. */
  loginEnded(id: string): boolean {
    const record = id === 'epoch' ? undefined : this._logins.get(id);
    return record !== undefined && 'until' in record && record.until > Date.now();
  }

  /** The epoch a login is made in now: the store's, or a new one when it has none (a first login, or after a loss). */
  loginsEpoch(): Promise<string> {
    return this.bounded('limitsAdmin', async (bound) => {
      await this.#read(bound);
      return this.loginEpoch() ?? this.#newEpoch('absent', bound);
    });
  }

  /** Ends every login made before, on every instance: a new epoch. */
  endLogins(): Promise<string> {
    return this.bounded('limitsAdmin', (bound) => this.#newEpoch('always', bound));
  }

  async #newEpoch(when: 'absent' | 'always', bound: CallBound): Promise<string> {
    const now = Date.now();
    const record: EpochRecord = { epoch: randomBytes(16).toString('base64url'), since: now };
    const change = { field: 'session:epoch', value: JSON.stringify(record), endsAt: null, when, event: undefined };
    const result = (await this._write([{ ...change, now }], bound)).records[0];
    // Another instance's epoch, written first, is the one: the store answers it.
    const stored = result?.stored === undefined ? undefined : (JSON.parse(result.stored) as Partial<EpochRecord>);
    return typeof stored?.epoch === 'string' ? stored.epoch : record.epoch;
  }

  /** Ends one login on every instance, until `until`, when it would have ended by itself. */
  endLogin(id: string, until: number): Promise<void> {
    return this.bounded('limitsAdmin', async (bound) => {
      const now = Date.now();
      if (until <= now) return;
      const record: EndedLogin = { id, endedAt: now, until };
      const change = { field: `session:${id}`, value: JSON.stringify(record), endsAt: until, when: 'always' } as const;
      await this._write([{ ...change, event: undefined, now }], bound);
    });
  }

  /**
   * Tells every instance that a client's counters were cleared, so that each forgets the refusals it remembers of
   * it; kept for `windowMs`, the longest window a remembered refusal can last.
   */
  async resetClient(key: string, windowMs: number, bound: CallBound): Promise<void> {
    const at = Date.now();
    const record: ResetRecord = { key, at, until: at + windowMs };
    const change = {
      field: `reset:${key}`,
      value: JSON.stringify(record),
      endsAt: record.until,
      when: 'always',
    } as const;
    await this._write([{ ...change, event: undefined, now: at }], bound);
  }

  /** Reads what changed in the store now (a custom store's state is this process's: nothing to read). */
  sync(): Promise<void> {
    return this.#synced('limits.sync');
  }

  /** Reads what changed in the store now, within the bound of the call `source` (or of the one under way). */
  #synced(source: string): Promise<void> {
    return this.bounded(source, (bound) => this.#read(bound));
  }

  async #read(bound: CallBound): Promise<void> {
    if (this._shared && this._follower) await bound.race(this._follower.sync());
  }

  /** The bans in force, rules' and operators', as the store has them now. */
  async bans(): Promise<ActiveBan[]> {
    return (await this.bansPage(0, Infinity, 'limits.bans')).bans;
  }

  async grants(): Promise<ActiveGrant[]> {
    return (await this.grantsPage(0, Infinity, 'limits.grants')).grants;
  }

  #activeBans(): Stored<BanRecord>[] {
    const now = Date.now();
    const active: Stored<BanRecord>[] = [];
    for (const cache of [this._bans, this._addressBans])
      for (const ban of cache.values()) if (ban.until > now) active.push(ban);
    return active;
  }

  #activeGrants(): Stored<GrantRecord>[] {
    const now = Date.now();
    const active: Stored<GrantRecord>[] = [];
    for (const grant of this._grants.values()) if (grant.until === null || grant.until > now) active.push(grant);
    return active;
  }

  /**
   * Bans in force from `offset` (or, past the last, from the start of the last `limit` of them), at most `limit`, in
   * the order of `bans()`; where they start, and how many are in force.
   */
  async bansPage(
    offset: number,
    limit: number,
    source = 'limitsAdmin',
  ): Promise<{ total: number; offset: number; bans: ActiveBan[] }> {
    await this.#synced(source);
    const { total, from, rows } = listPage(this.#activeBans(), offset, limit, activeBan);
    return { total, offset: from, bans: rows };
  }

  /** Grants in force, as {@link bansPage} pages the bans. */
  async grantsPage(
    offset: number,
    limit: number,
    source = 'limitsAdmin',
  ): Promise<{ total: number; offset: number; grants: ActiveGrant[] }> {
    await this.#synced(source);
    const { total, from, rows } = listPage(this.#activeGrants(), offset, limit, activeGrant);
    return { total, offset: from, grants: rows };
  }

  /** The bans in force of one client key: its own, and for an `ip:` key its address's. */
  async bansOf(key: string): Promise<ActiveBan[]> {
    await this.#synced('limitsAdmin');
    const now = Date.now();
    const found = [this._bans.get(key), this._addressBans.get(addressBan(key))];
    return found.filter((ban): ban is Stored<BanRecord> => ban !== undefined && ban.until > now).map(activeBan);
  }

  /** The runtime grant in force of one client key. */
  async grantOfKey(key: string): Promise<ActiveGrant | undefined> {
    await this.#synced('limitsAdmin');
    const grant = this._grants.get(key);
    return grant && (grant.until === null || grant.until > Date.now()) ? activeGrant(grant) : undefined;
  }

  /** The operators' bans and grants the store lost, oldest loss first. */
  async lost(): Promise<LostRecord[]> {
    await this.#synced('limits.lost');
    const now = Date.now();
    return [...this._lost.values()]
      .filter((lost) => endOf(lost.record) > now)
      .sort((a, b) => a.lostAt - b.lostAt || (a.field < b.field ? -1 : 1))
      .map(lostRecord);
  }

  /**
   * Applies again an operator's ban or grant the store lost, and forgets the lost record, in one change of the store;
   * resolves false when it has ended or is gone.
   */
  restoreLost(id: unknown): Promise<boolean> {
    return this.bounded('limits.restoreLost', async (bound) => {
      await this.#read(bound);
      const lost = typeof id === 'string' ? this._lost.get(id) : undefined;
      if (!lost) return false;
      const now = Date.now();
      const record = lost.record;
      const dismiss = { change: { field: `lost:${lost.field}`, value: null, endsAt: null, when: 'always' } as const };
      if (endOf(record) <= now) {
        await this._change([dismiss], undefined, bound);
        return false;
      }
      const event = isBan(record) ? banEvent(record) : grantEvent(record);
      const change = {
        field: lost.field,
        value: JSON.stringify(record),
        endsAt: record.until,
        when: 'always',
      } as const;
      await this._change([{ change, event: { ...event, at: new Date(now) } }, dismiss], undefined, bound);
      return true;
    });
  }

  /** Forgets a lost record. */
  dismissLost(id: unknown): Promise<boolean> {
    return this.bounded('limits.dismissLost', async (bound) => {
      if (typeof id !== 'string' || id === '') return false;
      const change = { field: `lost:${id}`, value: null, endsAt: null, when: 'always', event: undefined } as const;
      return (await this._write([{ ...change, now: Date.now() }], bound)).records[0]?.changed === true;
    });
  }

  /** The entries of the store's runtime state this instance skips, records first, then the history's. */
  foreign(): Promise<ForeignEntry[]> {
    return this.bounded('limits.foreign', (bound) => this.#foreign(bound));
  }

  async #foreign(bound: CallBound): Promise<ForeignEntry[]> {
    await this.#read(bound);
    const entries: ForeignEntry[] = [...this._foreign]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([field, { shown: text, problem }]) => ({ id: `record ${field}`, place: 'record', field, text, problem }));
    for (const json of await bound.race(this._state.history())) {
      const problem = this.#eventProblem(json);
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

  /** Removes an entry `foreign()` listed, if it is still as listed; resolves whether it was there. */
  removeForeign(id: unknown): Promise<boolean> {
    return this.bounded('limits.removeForeign', async (bound) => {
      if (typeof id !== 'string') return false;
      if (id.startsWith('record ')) {
        const field = id.slice('record '.length);
        const found = this._foreign.get(field);
        if (!found) return false;
        const change = { field, value: null, endsAt: null, when: { sha1: found.sha1 }, event: undefined };
        const removed = (await this._write([{ ...change, now: Date.now() }], bound)).records[0]?.changed === true;
        if (removed) this._foreign.delete(field);
        return removed;
      }
      if (id.startsWith('history ')) {
        const json = (await bound.race(this._state.history())).find((entry) => `history ${digest(entry)}` === id);
        if (json === undefined || this.#eventProblem(json) === undefined) return false;
        return bound.race(this._state.removeHistory(json, bound.applyBy));
      }
      return false;
    });
  }

  #eventProblem(json: string): string | undefined {
    // Each load of the operator's page looks at the whole history: an entry is judged once.
    if (this._judged.has(json)) return this._judged.get(json);
    let problem: string | undefined;
    try {
      checkEvent(json);
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      problem = error.message;
    }
    if (this._judged.size >= 2 * HISTORY_MAX) this._judged.clear();
    this._judged.set(json, problem);
    return problem;
  }

  /** The changes, newest first: since a time, at most `limit` of them. Entries that are not changes are skipped. */
  async history(options: unknown): Promise<ChangeEvent[]> {
    const check = new Checker('limits.history');
    const checked = this.#historyOptions(check, options);
    const texts = await this.bounded('limits.history', (bound) => bound.race(this._state.history()));
    return changesOf(texts, checked, (json, problem) => this._foreignFound('history', json, problem));
  }

  #historyOptions(check: Checker, options: unknown): { since: number | undefined; limit: number } {
    const o = check.options(options, 'options', '{ since, limit }');
    check.unknownKeys(o, ['since', 'limit'], (k) => `options.${k}`);
    const given: unknown = o.since instanceof Date ? o.since.getTime() : o.since;
    if (given !== undefined && (typeof given !== 'number' || !Number.isFinite(given)))
      check.invalid('options.since', `must be a Date or epoch milliseconds; got ${show(o.since)}.`);
    const since = given as number | undefined;
    const limit = o.limit === undefined ? HISTORY_MAX : check.count(o.limit, 'options.limit');
    return { since, limit };
  }

  /** Stops following the state (the Redis store's reads), and writing again the rules' bans the store has not taken. */
  close(): void {
    this._follower?.stop();
    this._follower = undefined;
    this.#pending.close();
  }
}
