// The cache of the store's runtime state one middleware keeps: its records, how it follows the store's changes.
import type { Request } from 'express';
import { show } from '../shared/check.js';
import { RuntimeStateError } from '../shared/errors.js';
import { observe, type OnError } from '../shared/hooks.js';
import type { ClientKind, IpKey } from '../contract/keys.js';
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
} from './kinds.js';
import { MemoryState } from '../stores/memory/state.js';
import {
  type Follower,
  type RecordChange,
  type RequestPut,
  type RuntimeState,
  sha1,
  type StateChangeResult,
  type StateUpdate,
} from '../stores/state.js';
import { bounded, type CallBound, withBound } from '../stores/call-bound.js';
import { SweptMap } from '../shared/swept.js';
import type { ChangeEvent, Grant } from './types.js';
import { digest, endOf, eventText, withoutSeq, sameRecord, shownText } from './views.js';
import { type Kind, type KindCache, recordKinds } from './fields.js';

/** Foreign entries of the records kept in view for `foreign()` at the most; beyond, the oldest go. */
const FOREIGN_KEPT = 1000;
/** Foreign entries remembered as told to `onError`, so that each is told once; beyond, the oldest go. */
const REPORTED_KEPT = 10_000;

/** A request's client as the records are asked about it: its key, how it was identified, and its address's key. */
export interface ClientKeys {
  /** Storage key: `t:<sha256 of the token>`, `ip:<address>`, or what the `key` option returned. */
  readonly key: string;
  readonly kind: ClientKind;
  /** `ip:<address>`: the key of the client's address, whatever `key` is. */
  readonly ip: string;
}

/** What the runtime records need of the other features: how addresses are keyed, and how a grant is checked. */
interface RecordsContext {
  readonly ipOf: IpKey;
  readonly checkGrant: CheckGrant;
  readonly onChange: ((event: ChangeEvent, req: Request | undefined) => unknown) | undefined;
  readonly report: OnError;
  /** The longest the first read of the state holds requests up (the store's `timeoutMs`, else a second). */
  readonly firstReadMs: number;
  /** The longest an operator's call waits for the store in all; undefined for a store in this process. */
  readonly callTimeoutMs?: number;
  /** Told each time a read of the state was answered, with the route of the store's part that answered. */
  readonly answered?: (route: string) => void;
  /** Told the key of each reset of a client's counters this instance reads (its own included). */
  readonly onReset?: (key: string) => void;
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

/** How many addresses' ban keys a cache remembers at the most: see `#addressBanKeys`. */
const ADDRESS_BAN_KEYS_KEPT = 10_000;

/** The cache of the runtime state that {@link RuntimeRecords} keeps: its records, and how it follows the store. */
export class RecordCache {
  protected readonly _state: RuntimeState;
  /** False for a store with no runtime state of its own: the cache then holds this process's rule bans only. */
  protected readonly _shared: boolean;
  protected readonly _context: RecordsContext;
  /** Client key → ban. Ended bans stay until swept or replaced; each check reads the end. */
  protected readonly _bans = new SweptMap<Stored<BanRecord>>((ban) => ban.until);
  /** `addr:<address key>` → ban of an address: apart, so that no request reads its address while none is banned. */
  protected readonly _addressBans = new SweptMap<Stored<BanRecord>>((ban) => ban.until);
  protected readonly _grants = new SweptMap<Stored<GrantRecord>>((grant) => grant.until ?? Infinity);
  /** Field of the record lost → the lost record. */
  protected readonly _lost = new SweptMap<Stored<LostEntry>>((lost) => endOf(lost.record));
  /** `epoch` → the epoch of the operators' logins; a login's id → that login, ended by its logout. */
  protected readonly _logins = new SweptMap<Stored<EpochRecord | EndedLogin>>((r) =>
    'until' in r ? r.until : Infinity,
  );
  /**
   * Address key → `addr:<address key>`, for the addresses of the last requests (all forgotten at 10,000): each
   * request's check would make that string again. A plain map rather than `remembered()`'s LRU, whose bookkeeping
   * costs as much as making the string.
   */
  readonly #addressBanKeys = new Map<string, string>();
  /** Client key → the last reset of its counters. */
  readonly #resets = new SweptMap<Stored<ResetRecord>>((reset) => reset.until);
  /**
   * Field → an entry of the records that is not a record this instance applies: its text as shown, and its SHA-1,
   * by which it is removed only as it was read.
   */
  protected readonly _foreign = new Map<
    string,
    { readonly shown: string; readonly sha1: string; readonly problem: string }
  >();
  readonly #reported = new Set<string>();
  /** Entries of the history as `foreign()` judged them (undefined: a change), at most twice the history's. */
  protected readonly _judged = new Map<string, string | undefined>();
  readonly #kinds: ReadonlyMap<string, Kind>;
  /** When the last ban this instance has seen ends: past it (or with none), no request needs a look at the bans. */
  protected _bansEnd = 0;
  /** The epoch, copy mark and sequence number of the last update applied. */
  protected _epoch: string | undefined;
  protected _copy: string | undefined;
  #seq = 0;
  #loaded = false;
  protected _follower: Follower | undefined;
  #ready: Promise<void> | undefined;
  /** Entries of the records parsed and checked by this instance, in all: what the cost tests count. @internal */
  parsed = 0;

  constructor(state: RuntimeState | undefined, context: RecordsContext) {
    this._state = state ?? new MemoryState();
    this._shared = state !== undefined;
    this._context = context;
    const bans = (id: string) => (id.startsWith('addr:') ? this._addressBans : this._bans);
    // A reset read is told at once: the counters' remembered refusals of the client are stale from then on.
    const resets: KindCache = {
      get: (id) => this.#resets.get(id),
      add: (id, record, now) => {
        this.#resets.add(id, record as Stored<ResetRecord>, now);
        context.onReset?.(id);
      },
      delete: (id) => this.#resets.delete(id),
    };
    this.#kinds = recordKinds(
      { bans, grants: this._grants, lost: this._lost, logins: this._logins, resets },
      context.checkGrant,
    );
  }

  /** Starts following the state: once the middleware is made, so that a configuration that fails leaves nothing. */
  start(): void {
    if (this._follower) return;
    this._follower = this._state.follow(
      (update) => this.#apply(update),
      (route) => {
        this._context.answered?.(route);
        this._answered();
      },
    );
    if (this.#loaded) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this._context.firstReadMs);
      timer.unref?.();
    });
    const first = this._follower.sync().catch(() => {});
    this.#ready = Promise.race([first, bound]).then(() => {
      clearTimeout(timer);
      this.#ready = undefined;
    });
  }

  /**
   * Until the state has been read once (or `firstReadMs` has passed): the first read, which a request waits for
   * before its bans are checked.
   */
  get ready(): Promise<void> | undefined {
    return this.#ready;
  }

  #apply(update: StateUpdate): void {
    const known = update.kind === 'replaced' ? this.#known() : undefined;
    if (update.kind !== 'changes') this.#reset();
    for (const [field, json] of update.records) this.#put(field, json, update.seq);
    this._epoch = update.epoch;
    this._copy = update.copy;
    this.#seq = update.seq;
    this.#loaded = true;
    if (known) this.#replaced(known, update).catch((error: unknown) => this._context.report(error, undefined));
  }

  /** Applies one field's text as read at sequence number `readAt` (null: no record). */
  #put(field: string, json: string | null, readAt: number): void {
    if (field.startsWith('#')) return;
    const colon = field.indexOf(':');
    const kind = colon > 0 ? this.#kinds.get(field.slice(0, colon)) : undefined;
    const id = field.slice(colon + 1);
    this._foreign.delete(field);
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
    if (field.startsWith('ban:')) this._bansEnd = Math.max(this._bansEnd, (record as Stored<BanRecord>).until);
  }

  /** Keeps a foreign entry in view and tells `onError` of it, once. */
  #skip(field: string, json: string, problem: string): void {
    if (this._foreign.size >= FOREIGN_KEPT) this._foreign.delete(this._foreign.keys().next().value as string);
    this._foreign.set(field, { shown: shownText(json), sha1: sha1(json), problem });
    this._foreignFound(`record ${field}`, json, problem);
  }

  protected _foreignFound(entry: string, json: string, problem: string): void {
    const id = `${entry}\n${digest(json)}`;
    if (this.#reported.has(id)) return;
    if (this.#reported.size >= REPORTED_KEPT) this.#reported.delete(this.#reported.values().next().value as string);
    this.#reported.add(id);
    const message = `the store's runtime state has a foreign entry, skipped: ${entry} ${problem}.`;
    this._context.report(new RuntimeStateError('ERR_FOREIGN_ENTRY', message, { entry }), undefined);
  }

  /** Empties the cache, but for the rule's bans that only this instance has (the store could not be written). */
  #reset(): void {
    for (const cache of [this._bans, this._addressBans]) {
      const local = [...cache].filter(([, ban]) => ban.seq < 0);
      cache.clear();
      for (const [id, ban] of local) cache.set(id, ban);
    }
    this._grants.clear();
    this._lost.clear();
    this._logins.clear();
    this.#resets.clear();
    this._foreign.clear();
    this._bansEnd = 0;
    for (const cache of [this._bans, this._addressBans]) {
      for (const ban of cache.values()) this._bansEnd = Math.max(this._bansEnd, ban.until);
    }
  }

  #known(): Known {
    const records = new Map<string, Stored<BanRecord | GrantRecord | LostEntry>>();
    for (const [id, ban] of this._bans) records.set(`ban:${id}`, ban);
    for (const [id, ban] of this._addressBans) records.set(`ban:${id}`, ban);
    for (const [id, grant] of this._grants) records.set(`grant:${id}`, grant);
    for (const [id, lost] of this._lost) records.set(`lost:${id}`, lost);
    const fields = new Set(records.keys());
    for (const id of this._logins.keys()) fields.add(`session:${id}`);
    for (const id of this.#resets.keys()) fields.add(`reset:${id}`);
    return { epoch: this._epoch, seq: this.#seq, records, fields, foreign: new Set(this._foreign.keys()) };
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
  async #replaced(known: Known, update: StateUpdate): Promise<void> {
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
    if (changes.length > 0) await this._write(changes, undefined);
    if (lost.length + ruleBans + stale.length === 0) return;
    const what = copy ? 'replaced by a copy that is behind it (a failover)' : 'lost (a restart, a flush or a failover)';
    const parts: string[] = [];
    if (lost.length > 0)
      parts.push(`${lost.length} ban(s) and grant(s) of operators are kept as lost records, to restore or dismiss`);
    if (ruleBans > 0) parts.push(`${ruleBans} ban(s) by rule are gone`);
    if (stale.length > 0) parts.push(`${stale.length} record(s) lifted before came back with it and are removed again`);
    const message = `the store's runtime state was ${what}: ${parts.join('; ')}.`;
    this._context.report(new RuntimeStateError('ERR_STATE_LOST', message), undefined);
  }

  /**
   * Runs an operator's call within the store's bound (see CallBound): it settles within `callTimeoutMs`, or rejects
   * with `ERR_STORE_UNAVAILABLE`, and a change of it that reaches the store later is refused.
   */
  bounded<T>(source: string, run: (bound: CallBound) => Promise<T>): Promise<T> {
    return bounded(source, this._context.callTimeoutMs, run);
  }

  /** The store answered a read of the state: what waits for it may go on. */
  protected _answered(): void {}

  /** Runs `next` (the rest of a page's load) within one bound for all its store calls. */
  withBound(source: string, next: () => void): void {
    withBound(source, this._context.callTimeoutMs, next);
  }

  /** Tells `onError` of an error met by an operator's call (a page's) that the caller answered itself. */
  report(error: unknown, req: Request | undefined): void {
    this._context.report(error, req);
  }

  /**
   * Writes changes, in one step of the store (with a grant request's decision before them, when there is one); the
   * cache takes the store's answer (or, when the state's epoch changed, reads it whole). Within a call's `bound`, the
   * store refuses the change when it takes it too late.
   */
  protected async _write(
    records: readonly RecordChange[],
    bound: CallBound | undefined,
    request?: RequestPut,
  ): Promise<StateChangeResult> {
    const change = this._state.change({ records, request, applyBy: bound?.applyBy });
    const result = await (bound ? bound.race(change, (late) => this.#lateChange(bound, late)) : change);
    const epoch = result.records[0]?.epoch;
    if (epoch !== undefined && epoch !== this._epoch && this._follower) {
      // Done: the store has it. Reading the state whole is only for this copy, which the next read brings anyway.
      const sync = this._follower.sync();
      await (bound ? bound.race(sync) : sync).catch(() => {});
      if (this._follower) return result;
    }
    records.forEach((c, i) => {
      const done = result.records[i];
      if (done) this.#put(c.field, done.stored ?? null, done.seq);
    });
    return result;
  }

  /**
   * A change the store took in time but answered after the call's bound, when the call had said it made none: every
   * instance applies it (it is in the store), and `onError` is told which call it was.
   */
  #lateChange(bound: CallBound, result: StateChangeResult): void {
    if (result.records.some((done) => done.changed) || result.request !== undefined) this.lateChange(bound);
  }

  /** Tells `onError` that a change of the call `bound` bounds, which it said it had not made, was taken after all. */
  lateChange(bound: CallBound): void {
    const message =
      `${bound.source} was refused as the store did not answer in time, but the store had taken its change: it ` +
      'holds on every instance.';
    this._context.report(new RuntimeStateError('ERR_STATE_WRITE', message), undefined);
  }

  /**
   * Writes changes of bans and grants, with their history entries (a change without an event has none), and tells
   * `onChange` of each that applied.
   */
  protected async _change(
    changes: readonly { readonly change: Omit<RecordChange, 'event' | 'now'>; readonly event?: ChangeEvent }[],
    req: Request | undefined,
    bound: CallBound | undefined,
    request?: RequestPut,
  ): Promise<StateChangeResult> {
    const now = Date.now();
    const records = changes.map(({ change, event }) => ({
      ...change,
      event: event && eventText(event),
      now: event ? event.at.getTime() : now,
    }));
    const result = await this._write(records, bound, request);
    result.records.forEach((done, i) => {
      const event = changes[i]?.event;
      if (done.changed && event) observe(this._context.onChange, event, req, this._context.report);
    });
    return result;
  }

  /** How many bans are in force, as far as this instance knows. */
  activeBans(): number {
    const now = Date.now();
    let n = 0;
    for (const cache of [this._bans, this._addressBans]) for (const ban of cache.values()) if (ban.until > now) n++;
    return n;
  }

  /** How many runtime grants are in force, as far as this instance knows. */
  activeGrants(): number {
    const now = Date.now();
    let n = 0;
    for (const grant of this._grants.values()) if (grant.until === null || grant.until > now) n++;
    return n;
  }

  /** Whether any ban may be in force: false means no request needs identifying for bans. */
  anyBan(now: number): boolean {
    return this._bansEnd > now && (this._bans.size > 0 || this._addressBans.size > 0);
  }

  /** The end of the ban that holds for `client` (its own, or its address's), or undefined. */
  bannedUntil(client: ClientKeys, now: number): number | undefined {
    if (!this.anyBan(now)) return undefined;
    const own = this._bans.get(client.key);
    let until = own && own.until > now ? own.until : undefined;
    if (this._addressBans.size > 0) {
      const address = this._addressBans.get(this.#addressBanKey(client.ip));
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

  /** Whether the ban stored as `banKey` is in force, as far as this instance knows. */
  banned(banKey: string, now: number): boolean {
    const ban = (banKey.startsWith('addr:') ? this._addressBans : this._bans).get(banKey);
    return ban !== undefined && ban.until > now;
  }

  /**
   * The grant given at runtime to the client as identified: by its key (its token's, its address's for a client
   * counted by address, or a custom key), else by its address. A token that `authenticate` refused is not the
   * client's key, so a grant of that token does not apply.
   */
  grantOf(client: ClientKeys): Grant | undefined {
    if (this._grants.size === 0) return undefined;
    const now = Date.now();
    const found = this._grants.get(client.key) ?? (client.kind === 'ip' ? undefined : this._grants.get(client.ip));
    return found && (found.until === null || found.until > now) ? found.grant : undefined;
  }
}
