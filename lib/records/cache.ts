// This instance's cache of the records the store's runtime state holds: what it knows of them, read at once.
import { show } from '../shared/check.js';
import { RuntimeStateError } from '../shared/errors.js';
import type { OnError } from '../shared/hooks.js';
import { SweptMap } from '../shared/swept.js';
import type { ClientKind } from '../contract/keys.js';
import { type RecordChange, sha1, type StateUpdate } from '../stores/state.js';
import {
  addressBan,
  type BanRecord,
  type CheckGrant,
  type EndedLogin,
  type EpochRecord,
  type GrantRecord,
  type LostEntry,
  Problem,
  type ResetRecord,
  type Stored,
  storedBan,
} from './kinds.js';
import { type Kind, type KindCache, recordKinds } from './fields.js';
import type { Grant } from './types.js';
import { digest, endOf, sameRecord, shownText, withoutSeq } from './views.js';

/** Foreign entries of the records kept in view for `foreign()` at the most; beyond, the oldest go. */
const FOREIGN_KEPT = 1000;
/** Foreign entries remembered as told to `onError`, so that each is told once; beyond, the oldest go. */
const REPORTED_KEPT = 10_000;
/** How many addresses' ban keys the cache remembers at the most: see `#addressBanKeys`. */
const ADDRESS_BAN_KEYS_KEPT = 10_000;

/** A request's client as the records are asked about it: its key, how it was identified, and its address's key. */
export interface ClientKeys {
  /** Storage key: `t:<sha256 of the token>`, `ip:<address>`, or what the `key` option returned. */
  readonly key: string;
  readonly kind: ClientKind;
  /** `ip:<address>`: the key of the client's address, whatever `key` is. */
  readonly ip: string;
}

/** An entry of the records that this instance does not apply: its text as shown, its SHA-1, and why. */
interface ForeignRecord {
  readonly shown: string;
  /** What a removal expects the field to hold still, so that only the entry as it was read is removed. */
  readonly sha1: string;
  readonly problem: string;
}

/** What this instance knew when the state it followed was replaced. */
interface Known {
  readonly epoch: string | undefined;
  readonly seq: number;
  readonly records: ReadonlyMap<string, Stored<BanRecord | GrantRecord | LostEntry>>;
  /** Every field it held, of every kind. */
  readonly fields: ReadonlySet<string>;
  readonly foreign: ReadonlySet<string>;
}

/**
 * What to do about a state that replaced the one this instance followed: the changes to write (lost records kept,
 * records lifted before removed again), and what to tell `onError`.
 */
export interface Replacement {
  readonly changes: readonly RecordChange[];
  readonly message: string | undefined;
}

/**
 * The records of the store's runtime state as this instance knows them: one map per kind, filled by the updates the
 * store's follower brings and by the answers to this instance's own changes, each record numbered by the store. The
 * request path asks it whether a client is banned and what its grant is, at once and without a store command; the
 * operators' calls read it after a read of the store.
 */
export class RecordCache {
  /** Client key → ban. Ended bans stay until swept or replaced; each check reads the end. */
  readonly #bans = new SweptMap<Stored<BanRecord>>((ban) => ban.until);
  /** `addr:<address key>` → ban of an address: apart, so that no request reads its address while none is banned. */
  readonly #addressBans = new SweptMap<Stored<BanRecord>>((ban) => ban.until);
  readonly #grants = new SweptMap<Stored<GrantRecord>>((grant) => grant.until ?? Infinity);
  /** Field of the record lost → the lost record. */
  readonly #lost = new SweptMap<Stored<LostEntry>>((lost) => endOf(lost.record));
  /** `epoch` → the epoch of the operators' logins; a login's id → that login, ended by its logout. */
  readonly #logins = new SweptMap<Stored<EpochRecord | EndedLogin>>((r) => ('until' in r ? r.until : Infinity));
  /** Client key → the last reset of its counters. */
  readonly #resets = new SweptMap<Stored<ResetRecord>>((reset) => reset.until);
  /**
   * Address key → `addr:<address key>`, for the addresses of the last requests (all forgotten at 10,000): each
   * request's check would make that string again. A plain map rather than `remembered()`'s LRU, whose bookkeeping
   * costs as much as making the string.
   */
  readonly #addressBanKeys = new Map<string, string>();
  /** Field → an entry of the records that is not a record this instance applies. */
  readonly #foreign = new Map<string, ForeignRecord>();
  readonly #reported = new Set<string>();
  readonly #kinds: ReadonlyMap<string, Kind>;
  readonly #report: OnError;
  /** When the last ban this instance has seen ends: past it (or with none), no request needs a look at the bans. */
  #bansEnd = 0;
  /** The epoch, copy mark and sequence number of the last update applied. */
  #epoch: string | undefined;
  #copy: string | undefined;
  #seq = 0;
  /** Whether an update of the store has been applied: the state has been read once. */
  loaded = false;
  /**
   * Until the state has been read once (or the first read's bound has passed): that first read, which a request waits
   * for before its bans are checked. Set by the follower of the store.
   */
  ready: Promise<void> | undefined;
  /** Entries of the records parsed and checked by this instance, in all: what the cost tests count. @internal */
  parsed = 0;

  constructor(options: {
    readonly checkGrant: CheckGrant;
    readonly report: OnError;
    /** Told the key of each reset of a client's counters the cache reads (this instance's own included). */
    readonly onReset?: (key: string) => void;
  }) {
    this.#report = options.report;
    const bans = (id: string) => (id.startsWith('addr:') ? this.#addressBans : this.#bans);
    // A reset read is told at once: the counters' remembered refusals of the client are stale from then on.
    const resets: KindCache = {
      get: (id) => this.#resets.get(id),
      add: (id, record, now) => {
        this.#resets.add(id, record as Stored<ResetRecord>, now);
        options.onReset?.(id);
      },
      delete: (id) => this.#resets.delete(id),
    };
    const caches = { bans, grants: this.#grants, lost: this.#lost, logins: this.#logins, resets };
    this.#kinds = recordKinds(caches, options.checkGrant);
  }

  /** Whether any ban may be in force: false means no request needs identifying for bans. */
  anyBan(now: number): boolean {
    return this.#bansEnd > now && (this.#bans.size > 0 || this.#addressBans.size > 0);
  }

  /** The end of the ban that holds for `client` (its own, or its address's), or undefined. */
  bannedUntil(client: ClientKeys, now: number): number | undefined {
    if (!this.anyBan(now)) return undefined;
    const own = this.#bans.get(client.key);
    let until = own && own.until > now ? own.until : undefined;
    if (this.#addressBans.size > 0) {
      const address = this.#addressBans.get(this.#addressBanKey(client.ip));
      if (address && address.until > now) until = Math.max(until ?? 0, address.until);
    }
    return until;
  }

  #addressBanKey(ip: string): string {
    let key = this.#addressBanKeys.get(ip);
    if (key === undefined) {
      if (this.#addressBanKeys.size >= ADDRESS_BAN_KEYS_KEPT) this.#addressBanKeys.clear();
      key = addressBan(ip);
      this.#addressBanKeys.set(ip, key);
    }
    return key;
  }

  /**
   * The grant given at runtime to the client as identified: by its key (its token's, its address's for a client
   * counted by address, or a custom key), else by its address. A token that `authenticate` refused is not the
   * client's key, so a grant of that token does not apply.
   */
  grantOf(client: ClientKeys): Grant | undefined {
    if (this.#grants.size === 0) return undefined;
    const now = Date.now();
    const found = this.#grants.get(client.key) ?? (client.kind === 'ip' ? undefined : this.#grants.get(client.ip));
    return found && (found.until === null || found.until > now) ? found.grant : undefined;
  }

  /** The ban stored as `banKey` (`addr:…` for an address's), in force or not, as far as this instance knows. */
  banOf(banKey: string): Stored<BanRecord> | undefined {
    return (banKey.startsWith('addr:') ? this.#addressBans : this.#bans).get(banKey);
  }

  /** The bans of a client key, in force or not: its own, and its address's (that of an `ip:` key's address). */
  bansOfKey(key: string): readonly (Stored<BanRecord> | undefined)[] {
    return [this.#bans.get(key), this.#addressBans.get(addressBan(key))];
  }

  /** Whether the ban stored as `banKey` is in force, as far as this instance knows. */
  banned(banKey: string, now: number): boolean {
    const ban = this.banOf(banKey);
    return ban !== undefined && ban.until > now;
  }

  /**
   * A rule's ban this instance decided, in force here at once, before the store has it (its sequence number -1):
   * the requests in flight with the one that banned must find it.
   */
  holdRuleBan(banKey: string, ban: BanRecord): void {
    (banKey.startsWith('addr:') ? this.#addressBans : this.#bans).add(banKey, storedBan(ban, -1), ban.since);
    this.#bansEnd = Math.max(this.#bansEnd, ban.until);
  }

  /** Lifts a rule's ban only this instance holds (the store could not take it); answers it, or undefined for none. */
  dropHeldBan(banKey: string): Stored<BanRecord> | undefined {
    const ban = this.banOf(banKey);
    if (ban === undefined || ban.seq >= 0) return undefined;
    (banKey.startsWith('addr:') ? this.#addressBans : this.#bans).delete(banKey);
    return ban;
  }

  /** The runtime grant of a client key, in force or not. */
  grantRecordOf(key: string): Stored<GrantRecord> | undefined {
    return this.#grants.get(key);
  }

  /** What the pages show of a client key's token, as its grant or its own ban keeps it; undefined when none does. */
  tokenEndOf(key: string): string | undefined {
    return (this.#grants.get(key) ?? this.#bans.get(key))?.tokenEnd;
  }

  /** The bans in force, the clients' and the addresses'. */
  bansInForce(now = Date.now()): Stored<BanRecord>[] {
    const active: Stored<BanRecord>[] = [];
    for (const cache of [this.#bans, this.#addressBans])
      for (const ban of cache.values()) if (ban.until > now) active.push(ban);
    return active;
  }

  /** The runtime grants in force. */
  grantsInForce(now = Date.now()): Stored<GrantRecord>[] {
    const active: Stored<GrantRecord>[] = [];
    for (const grant of this.#grants.values()) if (grant.until === null || grant.until > now) active.push(grant);
    return active;
  }

  /** How many bans are in force, as far as this instance knows. */
  countBansInForce(): number {
    const now = Date.now();
    let n = 0;
    for (const cache of [this.#bans, this.#addressBans]) for (const ban of cache.values()) if (ban.until > now) n++;
    return n;
  }

  /** How many runtime grants are in force, as far as this instance knows. */
  countGrantsInForce(): number {
    const now = Date.now();
    let n = 0;
    for (const grant of this.#grants.values()) if (grant.until === null || grant.until > now) n++;
    return n;
  }

  /** The lost record kept in the field `lost:<id>`. */
  lostOf(id: string): Stored<LostEntry> | undefined {
    return this.#lost.get(id);
  }

  /** The lost records kept, ended ones too. */
  lostRecords(): IterableIterator<Stored<LostEntry>> {
    return this.#lost.values();
  }

  /** The entries of the records this instance skips, by field. */
  foreignRecords(): ReadonlyMap<string, ForeignRecord> {
    return this.#foreign;
  }

  /** The entry of `field` was removed from the store: it is no longer in view. */
  foreignRemoved(field: string): void {
    this.#foreign.delete(field);
  }

  /** The record `session:<id>`: the logins' epoch (`epoch`), or a login ended by its logout. */
  loginRecordOf(id: string): Stored<EpochRecord | EndedLogin> | undefined {
    return this.#logins.get(id);
  }

  /**
   * Which state this instance follows: its epoch and copy mark, both new when the store loses its data or a copy
   * behind it takes its place.
   */
  stateId(): string {
    return `${this.#epoch ?? ''}/${this.#copy ?? ''}`;
  }

  /** The epoch of the last update applied: a change whose answer has another one found the state replaced. */
  get epoch(): string | undefined {
    return this.#epoch;
  }

  /**
   * Applies an update of the store: what changed, or every record (the first read, a follower that fell behind, or a
   * state that replaced the one it followed). For a replaced state, answers what to do about it.
   */
  apply(update: StateUpdate): Replacement | undefined {
    const known = update.kind === 'replaced' ? this.#known() : undefined;
    if (update.kind !== 'changes') this.#clear();
    for (const [field, json] of update.records) this.put(field, json, update.seq);
    this.#epoch = update.epoch;
    this.#copy = update.copy;
    this.#seq = update.seq;
    this.loaded = true;
    return known && this.#replaced(known, update);
  }

  /** Applies one field's text as read at sequence number `readAt` (null: no record). */
  put(field: string, json: string | null, readAt: number): void {
    if (field.startsWith('#')) return;
    const colon = field.indexOf(':');
    const kind = colon > 0 ? this.#kinds.get(field.slice(0, colon)) : undefined;
    const id = field.slice(colon + 1);
    this.#foreign.delete(field);
    if (json === null) {
      const cache = kind?.cache(id);
      const cached = cache?.get(id);
      // A version this instance wrote after that read stays.
      if (cached !== undefined && cached.seq > readAt) return;
      cache?.delete(id);
      return;
    }
    if (!kind)
      return this.#skip(field, json, `is of a kind this version does not know (${show(field.slice(0, colon))})`);
    const cache = kind.cache(id);
    let record: { readonly seq: number };
    try {
      this.parsed++;
      record = kind.check(id, json);
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      cache.delete(id);
      return this.#skip(field, json, error.message);
    }
    const cached = cache.get(id);
    if (cached !== undefined && cached.seq > record.seq) return;
    cache.add(id, record, Date.now());
    if (field.startsWith('ban:')) this.#bansEnd = Math.max(this.#bansEnd, (record as Stored<BanRecord>).until);
  }

  /** Keeps a foreign entry in view and tells `onError` of it, once. */
  #skip(field: string, json: string, problem: string): void {
    if (this.#foreign.size >= FOREIGN_KEPT) this.#foreign.delete(this.#foreign.keys().next().value as string);
    this.#foreign.set(field, { shown: shownText(json), sha1: sha1(json), problem });
    this.foreignFound(`record ${field}`, json, problem);
  }

  /** Tells `onError` of a foreign entry of the state (`record <field>`, or `history`), once. */
  foreignFound(entry: string, json: string, problem: string): void {
    const id = `${entry}\n${digest(json)}`;
    if (this.#reported.has(id)) return;
    if (this.#reported.size >= REPORTED_KEPT) this.#reported.delete(this.#reported.values().next().value as string);
    this.#reported.add(id);
    const message = `the store's runtime state has a foreign entry, skipped: ${entry} ${problem}.`;
    this.#report(new RuntimeStateError('ERR_FOREIGN_ENTRY', message, { entry }), undefined);
  }

  /** Empties the cache, but for the rule's bans that only this instance has (the store could not be written). */
  #clear(): void {
    for (const cache of [this.#bans, this.#addressBans]) {
      const held = [...cache].filter(([, ban]) => ban.seq < 0);
      cache.clear();
      for (const [id, ban] of held) cache.set(id, ban);
    }
    this.#grants.clear();
    this.#lost.clear();
    this.#logins.clear();
    this.#resets.clear();
    this.#foreign.clear();
    this.#bansEnd = 0;
    for (const cache of [this.#bans, this.#addressBans]) {
      for (const ban of cache.values()) this.#bansEnd = Math.max(this.#bansEnd, ban.until);
    }
  }

  #known(): Known {
    const records = new Map<string, Stored<BanRecord | GrantRecord | LostEntry>>();
    for (const [id, ban] of this.#bans) records.set(`ban:${id}`, ban);
    for (const [id, ban] of this.#addressBans) records.set(`ban:${id}`, ban);
    for (const [id, grant] of this.#grants) records.set(`grant:${id}`, grant);
    for (const [id, lost] of this.#lost) records.set(`lost:${id}`, lost);
    const fields = new Set(records.keys());
    for (const id of this.#logins.keys()) fields.add(`session:${id}`);
    for (const id of this.#resets.keys()) fields.add(`reset:${id}`);
    return { epoch: this.#epoch, seq: this.#seq, records, fields, foreign: new Set(this.#foreign.keys()) };
  }

  /** Whether `json`, the text of `field`, is a record of a kind this instance applies that is in force at `now`. */
  #inForce(field: string, json: string, now: number): boolean {
    const colon = field.indexOf(':');
    const kind = this.#kinds.get(field.slice(0, colon));
    if (!kind) return false;
    try {
      return kind.end(kind.check(field.slice(colon + 1), json)) > now;
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      return false;
    }
  }

  /**
   * The state was replaced: the store lost its data (a restart without persistence, a flush, a failover to an empty
   * replica), or a copy behind it took its place. The new state is the truth; what this instance knew and it lacks is
   * never written back, since it may have been lifted meanwhile. An operator's ban or grant the store lost is kept
   * as a lost record, for an operator to restore or dismiss; a rule's ban is gone. A copy behind the state (the same
   * epoch) may bring back records that were removed after it: those whose sequence number this instance had passed
   * without holding them are removed again.
   */
  #replaced(known: Known, update: StateUpdate): Replacement {
    const now = Date.now();
    const copy = known.epoch === update.epoch;
    const lost: Stored<LostEntry>[] = [];
    let ruleBans = 0;
    for (const [field, record] of known.records) {
      if (record.seq < 0) continue;
      const entry = 'field' in record ? record : { field, record, lostAt: now, seq: record.seq };
      if (endOf(entry.record) <= now) continue;
      const json = update.records.get(field);
      if (json !== undefined && json !== null) {
        const kind = this.#kinds.get(field.slice(0, field.indexOf(':')));
        const id = field.slice(field.indexOf(':') + 1);
        const current = kind?.cache(id).get(id);
        // Kept: the same version (or a newer one) on a copy; the same record written again after a loss.
        const same = copy ? current && current.seq >= record.seq : current && sameRecord(current, record);
        if (same) continue;
      }
      if ('field' in record || this.#kinds.get(field.slice(0, field.indexOf(':')))?.operators(record)) lost.push(entry);
      else ruleBans++;
    }
    const stale: [string, string][] = [];
    if (copy) {
      // Records in force that this instance did not hold, though it had read past the change that wrote them; but
      // not those written on the copy since it took over, whatever their number.
      const passed = Math.min(known.seq, update.forked ?? update.seq);
      for (const [field, json] of update.records) {
        if (json === null || known.fields.has(field) || known.foreign.has(field)) continue;
        const seq = Number(/^\{"seq":(\d+),/.exec(json)?.[1] ?? 0);
        if (seq <= passed && this.#inForce(field, json, now)) stale.push([field, json]);
      }
    }
    const changes: RecordChange[] = stale.map(([field, json]) => ({
      field,
      value: null,
      endsAt: null,
      when: { sha1: sha1(json) },
      event: undefined,
      now,
    }));
    for (const entry of lost) {
      const value = JSON.stringify({ field: entry.field, record: withoutSeq(entry.record), lostAt: entry.lostAt });
      const endsAt = endOf(entry.record) === Infinity ? null : endOf(entry.record);
      // Several instances may find the same record lost: the first one's lost record stays.
      changes.push({ field: `lost:${entry.field}`, value, endsAt, when: 'absent', event: undefined, now });
    }
    if (lost.length + ruleBans + stale.length === 0) return { changes, message: undefined };
    const what = copy ? 'replaced by a copy that is behind it (a failover)' : 'lost (a restart, a flush or a failover)';
    const parts: string[] = [];
    if (lost.length > 0)
      parts.push(`${lost.length} ban(s) and grant(s) of operators are kept as lost records, to restore or dismiss`);
    if (ruleBans > 0) parts.push(`${ruleBans} ban(s) by rule are gone`);
    if (stale.length > 0) parts.push(`${stale.length} record(s) lifted before came back with it and are removed again`);
    return { changes, message: `the store's runtime state was ${what}: ${parts.join('; ')}.` };
  }
}
