// The records of the store's runtime state (bans, grants, lost records, logins, resets): this instance's cache of them.
import { randomBytes } from 'node:crypto';
import type { Request } from 'express';
import ipaddr from 'ipaddr.js';
import { Checker, isPlainObject, MAX_DURATION_MS, show } from '../../shared/check.js';
import { RuntimeStateError } from '../../shared/errors.js';
import { tokenEnd, tokenKey } from '../keys.js';
import {
  addressBan,
  type BanRecord,
  checkEvent,
  checkText,
  type EndedLogin,
  type EpochRecord,
  type GrantRecord,
  LONGEST_TEXT,
  Problem,
  type ResetRecord,
  type Stored,
  storedBan,
} from './records.js';
import { HISTORY_MAX } from '../../stores/state.js';
import type { ActiveBan, ActiveGrant, ChangeEvent, ClientKind, ForeignEntry, Grant, LostRecord } from '../types.js';
import { RecordCache } from './record-cache.js';
import {
  digest,
  kindOf,
  banEvent,
  eventOf,
  grantEvent,
  page,
  activeBan,
  activeGrant,
  endOf,
  isBan,
  shown,
} from './record-views.js';

export { addressBan, type BanRecord };

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

  /**
   * The key of a client named as an operator knows it, and what the pages show of its token: the end of a token
   * given, else the one a record of the key keeps ('' when none does). Throws ListingLimitsError naming the field.
   */
  keyOf(check: Checker, client: unknown): { key: string; kind: ClientKind; address: boolean; tokenEnd: string } {
    const fields = isPlainObject(client) ? Object.keys(client) : [];
    if (fields.length !== 1 || !['token', 'ip', 'key'].includes(fields[0] as string)) {
      check.invalid('client', `must be { token }, { ip } or { key }; got ${show(fields.length ? fields : client)}.`);
    }
    const c = client as { token?: unknown; ip?: unknown; key?: unknown };
    const field = fields[0] as string;
    const value = c[field as keyof typeof c];
    if (typeof value !== 'string' || value === '')
      check.invalid(
        `client.${field}`,
        `must be a non-empty string; got ${field === 'token' ? typeof value : show(value)}.`,
      );
    if (field === 'token') return { key: tokenKey(value), kind: 'token', address: false, tokenEnd: tokenEnd(value) };
    if (field === 'ip') {
      if (!ipaddr.isValid(value)) check.invalid('client.ip', `must be an IP address; got ${show(value)}.`);
      return { key: this._context.ipOf(value), kind: 'ip', address: true, tokenEnd: '' };
    }
    if (value.length > LONGEST_TEXT)
      check.invalid('client.key', `must be at most ${LONGEST_TEXT} characters; got ${value.length}.`);
    const known = this._grants.get(value)?.tokenEnd ?? this._bans.get(value)?.tokenEnd ?? '';
    return { key: value, kind: kindOf(value), address: false, tokenEnd: known };
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
   * the store already (another instance's, which then replaces this one here). Resolves whether this wrote it; a
   * ban the store could not take stays here alone until it ends, and the failure goes to `onError`.
   */
  ruleBan(banKey: string, ban: BanRecord, req: Request): Promise<boolean> {
    (banKey.startsWith('addr:') ? this._addressBans : this._bans).add(banKey, storedBan(ban, -1), ban.since);
    this._bansEnd = Math.max(this._bansEnd, ban.until);
    return this._change(
      { field: `ban:${banKey}`, value: JSON.stringify(ban), endsAt: ban.until, when: 'absent' },
      banEvent(ban),
      req,
    ).then(
      (result) => result.changed,
      (error: unknown) => {
        const message = `a rule's ban of ${ban.key} could not be written to the store; it holds on this instance only.`;
        this._context.report(new RuntimeStateError('ERR_STATE_WRITE', message, { cause: error }), req);
        return false;
      },
    );
  }

  /**
   * An operator's ban. `known`: what the pages show of the client's token when the caller knows it and the client
   * names no token (a ban by key of a client whose grant request shows it).
   */
  async banClient(client: unknown, options: unknown, known = ''): Promise<boolean> {
    const check = new Checker('limits.ban');
    const { key, kind, address, tokenEnd: end } = this.keyOf(check, client);
    const o = check.options(options, 'options', '{ duration, reason }');
    check.unknownKeys(o, ['duration', 'reason'], (k) => `options.${k}`);
    const duration = check.seconds(o.duration, 'options.duration');
    const reason = o.reason === undefined ? 'operator' : checkText(check, o.reason, 'options.reason');
    this.#writable(check);
    const since = Date.now();
    const ban: BanRecord = {
      key,
      kind,
      reason,
      since,
      until: since + duration,
      by: 'operator',
      tokenEnd: end || known || undefined,
    };
    const field = `ban:${address ? addressBan(key) : key}`;
    await this._change(
      { field, value: JSON.stringify(ban), endsAt: ban.until, when: 'always' },
      banEvent(ban),
      undefined,
    );
    return true;
  }

  /** Lifts the bans of a key (its own and its address's). Resolves whether the store had one in force. */
  async unban(key: string): Promise<boolean> {
    const at = Date.now();
    let lifted = false;
    for (const banKey of [key, addressBan(key)]) {
      const cache = banKey.startsWith('addr:') ? this._addressBans : this._bans;
      const known = cache.get(banKey);
      // A rule's ban only this instance has: the store cannot lift it.
      if (known && known.seq < 0) {
        cache.delete(banKey);
        if (known.until > at) lifted = true;
      }
      const event = eventOf('unban', key, known?.kind ?? (banKey === key ? kindOf(key) : 'ip'), at);
      const result = await this._change(
        { field: `ban:${banKey}`, value: null, endsAt: null, when: 'always' },
        event,
        undefined,
      );
      if (result.changed) lifted = true;
    }
    return lifted;
  }

  /** The key to unban: a key as `onBan` reported it, or a client. */
  unbanKey(client: unknown): string {
    if (typeof client === 'string' && client !== '') return client;
    return this.keyOf(new Checker('limits.unban'), client).key;
  }

  /** An operator's grant; `known` as for {@link banClient} (the end of the token of the request it approves). */
  async grant(client: unknown, grant: unknown, options: unknown, known = ''): Promise<boolean> {
    const check = new Checker('limits.grant');
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
    await this._change(
      { field: `grant:${key}`, value: JSON.stringify(record), endsAt: until, when: 'always' },
      grantEvent(record),
      undefined,
    );
    return true;
  }

  async revoke(client: unknown): Promise<boolean> {
    const check = new Checker('limits.revoke');
    const { key, kind } = this.keyOf(check, client);
    this.#writable(check);
    const event = eventOf('revoke', key, kind, Date.now());
    const result = await this._change(
      { field: `grant:${key}`, value: null, endsAt: null, when: 'always' },
      event,
      undefined,
    );
    return result.changed;
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
  async loginsEpoch(): Promise<string> {
    const epoch = this.loginEpoch();
    if (epoch !== undefined) return epoch;
    return this.#newEpoch('absent');
  }

  /** Ends every login made before, on every instance: a new epoch. */
  endLogins(): Promise<string> {
    return this.#newEpoch('always');
  }

  async #newEpoch(when: 'absent' | 'always'): Promise<string> {
    const now = Date.now();
    const record: EpochRecord = { epoch: randomBytes(16).toString('base64url'), since: now };
    const change = { field: 'session:epoch', value: JSON.stringify(record), endsAt: null, when, event: undefined };
    const result = await this._write({ ...change, now });
    // Another instance's epoch, written first, is the one: the store answers it.
    const stored = result.stored === undefined ? undefined : (JSON.parse(result.stored) as Partial<EpochRecord>);
    return typeof stored?.epoch === 'string' ? stored.epoch : record.epoch;
  }

  /** Ends one login on every instance, until `until`, when it would have ended by itself. */
  async endLogin(id: string, until: number): Promise<void> {
    const now = Date.now();
    if (until <= now) return;
    const record: EndedLogin = { id, endedAt: now, until };
    const change = { field: `session:${id}`, value: JSON.stringify(record), endsAt: until, when: 'always' } as const;
    await this._write({ ...change, event: undefined, now });
  }

  /**
   * Tells every instance that a client's counters were cleared, so that each forgets the refusals it remembers of
   * it; kept for `windowMs`, the longest window a remembered refusal can last.
   */
  async resetClient(key: string, windowMs: number): Promise<void> {
    const at = Date.now();
    const record: ResetRecord = { key, at, until: at + windowMs };
    const change = {
      field: `reset:${key}`,
      value: JSON.stringify(record),
      endsAt: record.until,
      when: 'always',
    } as const;
    await this._write({ ...change, event: undefined, now: at });
  }

  /** Reads what changed in the store now (a custom store's state is this process's: nothing to read). */
  async sync(): Promise<void> {
    if (this._shared) await this._follower?.sync();
  }

  /** The bans in force, rules' and operators', as the store has them now. */
  async bans(): Promise<ActiveBan[]> {
    return (await this.bansPage(0, Infinity)).bans;
  }

  async grants(): Promise<ActiveGrant[]> {
    return (await this.grantsPage(0, Infinity)).grants;
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
  async bansPage(offset: number, limit: number): Promise<{ total: number; offset: number; bans: ActiveBan[] }> {
    await this.sync();
    const { total, from, rows } = page(this.#activeBans(), offset, limit, activeBan);
    return { total, offset: from, bans: rows };
  }

  /** Grants in force, as {@link bansPage} pages the bans. */
  async grantsPage(offset: number, limit: number): Promise<{ total: number; offset: number; grants: ActiveGrant[] }> {
    await this.sync();
    const { total, from, rows } = page(this.#activeGrants(), offset, limit, activeGrant);
    return { total, offset: from, grants: rows };
  }

  /** The bans in force of one client key: its own, and for an `ip:` key its address's. */
  async bansOf(key: string): Promise<ActiveBan[]> {
    await this.sync();
    const now = Date.now();
    const found = [this._bans.get(key), this._addressBans.get(addressBan(key))];
    return found.filter((ban): ban is Stored<BanRecord> => ban !== undefined && ban.until > now).map(activeBan);
  }

  /** The runtime grant in force of one client key. */
  async grantOfKey(key: string): Promise<ActiveGrant | undefined> {
    await this.sync();
    const grant = this._grants.get(key);
    return grant && (grant.until === null || grant.until > Date.now()) ? activeGrant(grant) : undefined;
  }

  /** The operators' bans and grants the store lost, oldest loss first. */
  async lost(): Promise<LostRecord[]> {
    await this.sync();
    const now = Date.now();
    return [...this._lost.values()]
      .filter((lost) => endOf(lost.record) > now)
      .sort((a, b) => a.lostAt - b.lostAt || (a.field < b.field ? -1 : 1))
      .map((lost): LostRecord => {
        const r = lost.record;
        const since = new Date(r.since);
        const base = { id: lost.field, key: r.key, lostAt: new Date(lost.lostAt) };
        if (isBan(r)) return { ...base, kind: 'ban', ban: activeBan({ ...r, seq: 0 }), grant: undefined };
        const until = r.until === null ? undefined : new Date(r.until);
        const grant = {
          key: r.key,
          grant: r.grant,
          since,
          until,
          note: r.note ?? undefined,
          tokenEnd: r.tokenEnd ?? '',
        };
        return { ...base, kind: 'grant', ban: undefined, grant };
      });
  }

  /** Applies again an operator's ban or grant the store lost; resolves false when it has ended or is gone. */
  async restoreLost(id: unknown): Promise<boolean> {
    await this.sync();
    const lost = typeof id === 'string' ? this._lost.get(id) : undefined;
    if (!lost) return false;
    const now = Date.now();
    const record = lost.record;
    if (endOf(record) > now) {
      const value = JSON.stringify(record);
      const event = isBan(record) ? banEvent(record) : grantEvent(record);
      await this._change(
        { field: lost.field, value, endsAt: record.until, when: 'always' },
        { ...event, at: new Date(now) },
        undefined,
      );
    }
    await this.dismissLost(lost.field);
    return endOf(record) > now;
  }

  /** Forgets a lost record. */
  async dismissLost(id: unknown): Promise<boolean> {
    if (typeof id !== 'string' || id === '') return false;
    const change = { field: `lost:${id}`, value: null, endsAt: null, when: 'always', event: undefined } as const;
    return (await this._write({ ...change, now: Date.now() })).changed;
  }

  /** The entries of the store's runtime state this instance skips, records first, then the history's. */
  async foreign(): Promise<ForeignEntry[]> {
    await this.sync();
    const entries: ForeignEntry[] = [...this._foreign]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([field, { shown: text, problem }]) => ({ id: `record ${field}`, place: 'record', field, text, problem }));
    for (const json of await this._state.history()) {
      const problem = this.#eventProblem(json);
      if (problem !== undefined)
        entries.push({ id: `history ${digest(json)}`, place: 'history', field: undefined, text: shown(json), problem });
    }
    return entries;
  }

  /** Removes an entry `foreign()` listed, if it is still as listed; resolves whether it was there. */
  async removeForeign(id: unknown): Promise<boolean> {
    if (typeof id !== 'string') return false;
    if (id.startsWith('record ')) {
      const field = id.slice('record '.length);
      const found = this._foreign.get(field);
      if (!found) return false;
      const change = { field, value: null, endsAt: null, when: { sha1: found.sha1 }, event: undefined };
      const removed = (await this._write({ ...change, now: Date.now() })).changed;
      if (removed) this._foreign.delete(field);
      return removed;
    }
    if (id.startsWith('history ')) {
      const json = (await this._state.history()).find((entry) => `history ${digest(entry)}` === id);
      return json !== undefined && this.#eventProblem(json) !== undefined && this._state.removeHistory(json);
    }
    return false;
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
    const o = check.options(options, 'options', '{ since, limit }');
    check.unknownKeys(o, ['since', 'limit'], (k) => `options.${k}`);
    const given: unknown = o.since instanceof Date ? o.since.getTime() : o.since;
    if (given !== undefined && (typeof given !== 'number' || !Number.isFinite(given)))
      check.invalid('options.since', `must be a Date or epoch milliseconds; got ${show(o.since)}.`);
    const since = given as number | undefined;
    const limit = o.limit === undefined ? HISTORY_MAX : check.count(o.limit, 'options.limit');
    const events: ChangeEvent[] = [];
    for (const json of await this._state.history()) {
      let event: ChangeEvent;
      try {
        event = checkEvent(json);
      } catch (error) {
        if (!(error instanceof Problem)) throw error;
        this._foreignFound('history', json, error.message);
        continue;
      }
      if (since !== undefined && event.at.getTime() < since) break;
      events.push(event);
      if (events.length === limit) break;
    }
    return events;
  }

  /** Stops following the state (the Redis store's reads). */
  close(): void {
    this._follower?.stop();
    this._follower = undefined;
  }
}
