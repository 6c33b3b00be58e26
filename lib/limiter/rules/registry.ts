// The records of the store's runtime state (bans, grants, lost records, logins, resets): this instance's cache of them.
import { createHash, randomBytes } from 'node:crypto';
import type { Request } from 'express';
import ipaddr from 'ipaddr.js';
import { Checker, isPlainObject, MAX_DURATION_MS, show } from '../../shared/check.js';
import { RuntimeStateError } from '../../shared/errors.js';
import { observe, type OnError } from '../../shared/hooks.js';
import type { Client, IpKey } from '../identify.js';
import { tokenKey } from '../keys.js';
import {
  addressBan,
  type BanRecord,
  checkBan,
  checkEvent,
  type CheckGrant,
  checkGrantRecord,
  checkLost,
  checkReset,
  checkSession,
  type EndedLogin,
  type EpochRecord,
  type GrantRecord,
  LONGEST_TEXT,
  type LostEntry,
  Problem,
  type ResetRecord,
  type Stored,
} from './records.js';
import {
  type ChangeResult,
  type Follower,
  HISTORY_MAX,
  MemoryState,
  type RecordChange,
  type RuntimeState,
  sha1,
  type StateUpdate,
} from '../../stores/state.js';
import { SweptMap } from '../../shared/swept.js';
import type { ActiveBan, ActiveGrant, ChangeEvent, ClientKind, ForeignEntry, Grant, LostRecord } from '../types.js';

export { addressBan, type BanRecord };

/** Foreign entries of the records kept in view for `foreign()` at the most; beyond, the oldest go. */
const FOREIGN_KEPT = 1000;
/** Foreign entries remembered as told to `onError`, so that each is told once; beyond, the oldest go. */
const REPORTED_KEPT = 10_000;
/** The longest text of a foreign entry shown. */
const SHOWN_TEXT = 200;

/** What the registry needs of the other features: how addresses are keyed, and how a grant is checked. */
export interface RegistryContext {
  readonly ipOf: IpKey;
  readonly checkGrant: CheckGrant;
  readonly onChange: ((event: ChangeEvent, req: Request | undefined) => unknown) | undefined;
  readonly report: OnError;
  /** The longest the first read of the state holds requests up (the store's `timeoutMs`, else a second). */
  readonly firstReadMs: number;
  /** Told the key of each reset of a client's counters this instance reads (its own included). */
  readonly onReset?: (key: string) => void;
}

/** Where this instance keeps the records of a kind, by the id of their field. */
interface KindCache {
  get(id: string): { readonly seq: number } | undefined;
  add(id: string, record: { readonly seq: number }, now: number): unknown;
  delete(id: string): boolean;
}

/** A kind of record: how an entry of it is checked, and where this instance keeps its records. */
interface Kind {
  check(id: string, text: string): { readonly seq: number };
  cache(id: string): KindCache;
  /** Whether a record of it is an operator's: kept as a lost record when the store loses it. */
  operators(record: unknown): boolean;
}

function kindOf(key: string): ClientKind {
  return key.startsWith('t:') ? 'token' : key.startsWith('ip:') ? 'ip' : 'custom';
}

function text(check: Checker, value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > LONGEST_TEXT) {
    check.invalid(field, `must be a non-empty string of at most ${LONGEST_TEXT} characters; got ${show(value)}.`);
  }
  return value;
}

/** The order of the lists: oldest first, then by key. */
function byTimeAndKey(a: { since: number; key: string }, b: { since: number; key: string }): number {
  return a.since - b.since || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

function endOf(record: BanRecord | GrantRecord): number {
  return record.until ?? Infinity;
}

function isBan(record: BanRecord | GrantRecord): record is BanRecord {
  return 'by' in record;
}

/** A record as the store is given it: without the sequence number the store adds. */
function plain<R extends object>(record: Stored<R> | R): R {
  const { seq: _seq, ...rest } = record as R & { seq?: number };
  return rest as R;
}

function sameRecord(a: object, b: object): boolean {
  return JSON.stringify(plain(a)) === JSON.stringify(plain(b));
}

/** A text as the lists show it: cut to SHOWN_TEXT characters. */
function shown(json: string): string {
  return json.length > SHOWN_TEXT ? `${json.slice(0, SHOWN_TEXT)}…` : json;
}

function digest(value: string): string {
  return createHash('sha256').update(value).digest('base64url').slice(0, 16);
}

/**
 * The first `n` of `items` in the lists' order (oldest first, then by key), sorted: each item is compared with the
 * last kept and put in place only when it comes before, so that the first page of 10,000 costs about 10,000
 * comparisons, not a sort of them all.
 */
function first<T extends { since: number; key: string }>(items: readonly T[], n: number): T[] {
  if (n >= items.length) return [...items].sort(byTimeAndKey);
  const kept: T[] = [];
  for (const item of items) {
    if (kept.length === n && byTimeAndKey(item, kept[n - 1] as T) >= 0) continue;
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byTimeAndKey(kept[mid] as T, item) <= 0) lo = mid + 1;
      else hi = mid;
    }
    kept.splice(lo, 0, item);
    if (kept.length > n) kept.pop();
  }
  return kept;
}

/** Where a page of `limit` rows from `offset` starts in a list of `total`: the last page's start, past the last. */
function pageStart(offset: number, limit: number, total: number): number {
  return offset < total || total === 0 ? offset : Math.floor((total - 1) / limit) * limit;
}

function activeBan(ban: Stored<BanRecord>): ActiveBan {
  return { ...plain(ban), since: new Date(ban.since), until: new Date(ban.until) };
}

function activeGrant(grant: Stored<GrantRecord>): ActiveGrant {
  return {
    key: grant.key,
    grant: grant.grant,
    since: new Date(grant.since),
    until: grant.until === null ? undefined : new Date(grant.until),
    note: grant.note ?? undefined,
  };
}

function eventText(event: ChangeEvent): string {
  return JSON.stringify({ ...event, at: event.at.getTime(), until: event.until?.getTime() });
}

/** A change with nothing of it but the action, client and time set. */
function eventOf(action: ChangeEvent['action'], key: string, kind: ClientKind, at: number): ChangeEvent {
  return {
    action,
    key,
    kind,
    by: 'operator',
    at: new Date(at),
    reason: undefined,
    until: undefined,
    grant: undefined,
    note: undefined,
  };
}

function banEvent(ban: BanRecord): ChangeEvent {
  const event = eventOf('ban', ban.key, ban.kind, ban.since);
  return { ...event, by: ban.by, reason: ban.reason, until: new Date(ban.until) };
}

function grantEvent(grant: GrantRecord): ChangeEvent {
  const event = eventOf('grant', grant.key, kindOf(grant.key), grant.since);
  const until = grant.until === null ? undefined : new Date(grant.until);
  return { ...event, until, grant: grant.grant, note: grant.note ?? undefined };
}

/** What this instance knew when the state it followed was replaced. */
interface Known {
  readonly epoch: string | undefined;
  readonly seq: number;
  readonly records: ReadonlyMap<string, Stored<BanRecord | GrantRecord | LostEntry>>;
  readonly foreign: ReadonlySet<string>;
}

/**
 * The bans, grants, lost records, logins and resets of one middleware. The store's runtime state holds them, one
 * record each, and numbers every change; this instance keeps a cache of them that follows those changes (at once
 * with the memory store, every 250 ms with the Redis store, reading only what changed), and the request path reads
 * only the cache, synchronously. A change made here is written to the store first and applies here when the store
 * has it; only a rule's ban applies here at once (the requests in flight with the one that banned must find it), and
 * stays here alone when the store cannot be written.
 */
export class Registry {
  readonly #state: RuntimeState;
  /** False for a store with no runtime state of its own: the cache then holds this process's rule bans only. */
  readonly #shared: boolean;
  readonly #context: RegistryContext;
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
   * Field → an entry of the records that is not a record this instance applies: its text as shown, and its SHA-1,
   * by which it is removed only as it was read.
   */
  readonly #foreign = new Map<string, { readonly shown: string; readonly sha1: string; readonly problem: string }>();
  readonly #reported = new Set<string>();
  /** Entries of the history as `foreign()` judged them (undefined: a change), at most twice the history's. */
  readonly #judged = new Map<string, string | undefined>();
  readonly #kinds: ReadonlyMap<string, Kind>;
  /** When the last ban this instance has seen ends: past it (or with none), no request needs a look at the bans. */
  #bansEnd = 0;
  /** The epoch, copy mark and sequence number of the last update applied. */
  #epoch: string | undefined;
  #copy: string | undefined;
  #seq = 0;
  #loaded = false;
  #follower: Follower | undefined;
  #ready: Promise<void> | undefined;
  /** Entries of the records parsed and checked by this instance, in all: what the cost tests count. @internal */
  parsed = 0;

  constructor(state: RuntimeState | undefined, context: RegistryContext) {
    this.#state = state ?? new MemoryState();
    this.#shared = state !== undefined;
    this.#context = context;
    const bans = (id: string) => (id.startsWith('addr:') ? this.#addressBans : this.#bans);
    // A reset read is told at once: the counters' remembered refusals of the client are stale from then on.
    const resets: KindCache = {
      get: (id) => this.#resets.get(id),
      add: (id, record, now) => {
        this.#resets.add(id, record as Stored<ResetRecord>, now);
        context.onReset?.(id);
      },
      delete: (id) => this.#resets.delete(id),
    };
    // The kinds of record, by the prefix of their field: a new kind is a check, a cache and a line here. Logins and
    // resets are no operator's ban or grant: a store that loses them loses nothing to restore (logins then end, as
    // their epoch is gone).
    this.#kinds = new Map<string, Kind>([
      ['ban', { check: checkBan, cache: bans, operators: (ban) => (ban as BanRecord).by === 'operator' }],
      [
        'grant',
        {
          check: (id, json) => checkGrantRecord(id, json, context.checkGrant),
          cache: () => this.#grants,
          operators: () => true,
        },
      ],
      [
        'lost',
        {
          check: (id, json) => checkLost(id, json, context.checkGrant),
          cache: () => this.#lost,
          operators: () => true,
        },
      ],
      ['session', { check: checkSession, cache: () => this.#logins, operators: () => false }],
      ['reset', { check: checkReset, cache: () => resets, operators: () => false }],
    ]);
  }

  /** Starts following the state: once the middleware is made, so that a configuration that fails leaves nothing. */
  start(): void {
    if (this.#follower) return;
    this.#follower = this.#state.follow((update) => this.#apply(update));
    if (this.#loaded) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.#context.firstReadMs);
      timer.unref?.();
    });
    const first = this.#follower.sync().catch(() => {});
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
    this.#epoch = update.epoch;
    this.#copy = update.copy;
    this.#seq = update.seq;
    this.#loaded = true;
    if (known) this.#replaced(known, update).catch((error: unknown) => this.#context.report(error, undefined));
  }

  /** Applies one field's text as read at sequence number `readAt` (null: no record). */
  #put(field: string, json: string | null, readAt: number): void {
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
    this.#foreign.set(field, { shown: shown(json), sha1: sha1(json), problem });
    this.#foreignFound(`record ${field}`, json, problem);
  }

  #foreignFound(entry: string, json: string, problem: string): void {
    const id = `${entry}\n${digest(json)}`;
    if (this.#reported.has(id)) return;
    if (this.#reported.size >= REPORTED_KEPT) this.#reported.delete(this.#reported.values().next().value as string);
    this.#reported.add(id);
    const message = `the store's runtime state has a foreign entry, skipped: ${entry} ${problem}.`;
    this.#context.report(new RuntimeStateError('ERR_FOREIGN_ENTRY', message, { entry }), undefined);
  }

  /** Empties the cache, but for the rule's bans that only this instance has (the store could not be written). */
  #reset(): void {
    for (const cache of [this.#bans, this.#addressBans]) {
      const local = [...cache].filter(([, ban]) => ban.seq < 0);
      cache.clear();
      for (const [id, ban] of local) cache.set(id, ban);
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
    return { epoch: this.#epoch, seq: this.#seq, records, foreign: new Set(this.#foreign.keys()) };
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
      for (const [field, json] of update.records) {
        if (json === null || known.records.has(field) || known.foreign.has(field)) continue;
        const seq = Number(/^\{"seq":(\d+),/.exec(json)?.[1] ?? 0);
        if (seq <= known.seq) stale.push([field, json]);
      }
    }
    for (const [field, json] of stale) {
      await this.#write({ field, value: null, endsAt: null, when: { sha1: sha1(json) }, event: undefined, now });
    }
    for (const entry of lost) {
      const value = JSON.stringify({ field: entry.field, record: plain(entry.record), lostAt: entry.lostAt });
      const endsAt = endOf(entry.record) === Infinity ? null : endOf(entry.record);
      // Several instances may find the same record lost: the first one's lost record stays.
      await this.#write({ field: `lost:${entry.field}`, value, endsAt, when: 'absent', event: undefined, now });
    }
    if (lost.length + ruleBans + stale.length === 0) return;
    const what = copy ? 'replaced by a copy that is behind it (a failover)' : 'lost (a restart, a flush or a failover)';
    const parts: string[] = [];
    if (lost.length > 0)
      parts.push(`${lost.length} ban(s) and grant(s) of operators are kept as lost records, to restore or dismiss`);
    if (ruleBans > 0) parts.push(`${ruleBans} ban(s) by rule are gone`);
    if (stale.length > 0) parts.push(`${stale.length} record(s) lifted before came back with it and are removed again`);
    const message = `the store's runtime state was ${what}: ${parts.join('; ')}.`;
    this.#context.report(new RuntimeStateError('ERR_STATE_LOST', message), undefined);
  }

  /** Writes a change; the cache takes the store's answer (or, when the state's epoch changed, reads it whole). */
  async #write(change: RecordChange): Promise<ChangeResult> {
    const result = await this.#state.change(change);
    if (result.epoch !== this.#epoch) {
      await this.#follower?.sync().catch(() => {});
      if (this.#follower) return result;
    }
    this.#put(change.field, result.stored ?? null, result.seq);
    return result;
  }

  /** Writes a change of a ban or grant, with its history entry, and tells `onChange` when it applied. */
  async #change(
    change: Omit<RecordChange, 'event' | 'now'>,
    event: ChangeEvent,
    req: Request | undefined,
  ): Promise<ChangeResult> {
    const result = await this.#write({ ...change, event: eventText(event), now: event.at.getTime() });
    if (result.changed) observe(this.#context.onChange, event, req, this.#context.report);
    return result;
  }

  /** How many bans are in force, as far as this instance knows. */
  activeBans(): number {
    const now = Date.now();
    let n = 0;
    for (const cache of [this.#bans, this.#addressBans]) for (const ban of cache.values()) if (ban.until > now) n++;
    return n;
  }

  /** How many runtime grants are in force, as far as this instance knows. */
  activeGrants(): number {
    const now = Date.now();
    let n = 0;
    for (const grant of this.#grants.values()) if (grant.until === null || grant.until > now) n++;
    return n;
  }

  /** Whether any ban may be in force: false means no request needs identifying for bans. */
  anyBan(now: number): boolean {
    return this.#bansEnd > now && (this.#bans.size > 0 || this.#addressBans.size > 0);
  }

  /** The end of the ban that holds for `client` (its own, or its address's), or undefined. */
  bannedUntil(client: Client, now: number): number | undefined {
    if (!this.anyBan(now)) return undefined;
    const own = this.#bans.get(client.key);
    let until = own && own.until > now ? own.until : undefined;
    if (this.#addressBans.size > 0) {
      const address = this.#addressBans.get(addressBan(client.ip));
      if (address && address.until > now) until = Math.max(until ?? 0, address.until);
    }
    return until;
  }

  /** Whether the ban stored as `banKey` is in force, as far as this instance knows. */
  banned(banKey: string, now: number): boolean {
    const ban = (banKey.startsWith('addr:') ? this.#addressBans : this.#bans).get(banKey);
    return ban !== undefined && ban.until > now;
  }

  /**
   * The grant given at runtime to the client as identified: by its key (its token's, its address's for a client
   * counted by address, or a custom key), else by its address. A token that `authenticate` refused is not the
   * client's key, so a grant of that token does not apply.
   */
  grantOf(client: Client): Grant | undefined {
    if (this.#grants.size === 0) return undefined;
    const now = Date.now();
    const found = this.#grants.get(client.key) ?? (client.kind === 'ip' ? undefined : this.#grants.get(client.ip));
    return found && (found.until === null || found.until > now) ? found.grant : undefined;
  }

  /** Checks a grant as `grant()` does. Throws ListingLimitsError naming `field`. */
  checkGrant(check: Checker, grant: unknown, field: string): Grant {
    return this.#context.checkGrant(check, grant, field);
  }

  /** The key of a client named as an operator knows it. Throws ListingLimitsError naming the field. */
  keyOf(check: Checker, client: unknown): { key: string; kind: ClientKind; address: boolean } {
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
    if (field === 'token') return { key: tokenKey(value), kind: 'token', address: false };
    if (field === 'ip') {
      if (!ipaddr.isValid(value)) check.invalid('client.ip', `must be an IP address; got ${show(value)}.`);
      return { key: this.#context.ipOf(value), kind: 'ip', address: true };
    }
    if (value.length > LONGEST_TEXT)
      check.invalid('client.key', `must be at most ${LONGEST_TEXT} characters; got ${value.length}.`);
    return { key: value, kind: kindOf(value), address: false };
  }

  #writable(check: Checker): void {
    if (!this.#shared) {
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
    (banKey.startsWith('addr:') ? this.#addressBans : this.#bans).add(banKey, { ...ban, seq: -1 }, ban.since);
    this.#bansEnd = Math.max(this.#bansEnd, ban.until);
    return this.#change(
      { field: `ban:${banKey}`, value: JSON.stringify(ban), endsAt: ban.until, when: 'absent' },
      banEvent(ban),
      req,
    ).then(
      (result) => result.changed,
      (error: unknown) => {
        const message = `a rule's ban of ${ban.key} could not be written to the store; it holds on this instance only.`;
        this.#context.report(new RuntimeStateError('ERR_STATE_WRITE', message, { cause: error }), req);
        return false;
      },
    );
  }

  /** An operator's ban. */
  async banClient(client: unknown, options: unknown): Promise<boolean> {
    const check = new Checker('limits.ban');
    const { key, kind, address } = this.keyOf(check, client);
    const o = check.options(options, 'options', '{ duration, reason }');
    check.unknownKeys(o, ['duration', 'reason'], (k) => `options.${k}`);
    const duration = check.seconds(o.duration, 'options.duration');
    const reason = text(check, o.reason, 'options.reason') ?? 'operator';
    this.#writable(check);
    const since = Date.now();
    const ban: BanRecord = { key, kind, reason, since, until: since + duration, by: 'operator' };
    const field = `ban:${address ? addressBan(key) : key}`;
    await this.#change(
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
      const cache = banKey.startsWith('addr:') ? this.#addressBans : this.#bans;
      const known = cache.get(banKey);
      // A rule's ban only this instance has: the store cannot lift it.
      if (known && known.seq < 0) {
        cache.delete(banKey);
        if (known.until > at) lifted = true;
      }
      const event = eventOf('unban', key, known?.kind ?? (banKey === key ? kindOf(key) : 'ip'), at);
      const result = await this.#change(
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

  async grant(client: unknown, grant: unknown, options: unknown): Promise<boolean> {
    const check = new Checker('limits.grant');
    const { key } = this.keyOf(check, client);
    const checked = this.#context.checkGrant(check, grant, 'grant');
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
    const note = text(check, o.note, 'options.note') ?? null;
    this.#writable(check);
    const record: GrantRecord = { key, grant: checked, since, until, note };
    await this.#change(
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
    const result = await this.#change(
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
    return `${this.#epoch ?? ''}/${this.#copy ?? ''}`;
  }

  /** The epoch of the operators' logins, as far as this instance knows; undefined while the store has none. */
  loginEpoch(): string | undefined {
    const record = this.#logins.get('epoch');
    return record && 'epoch' in record ? record.epoch : undefined;
  }

  /** Whether the login `id` was ended by its logout, as far as this instance knows. */
  loginEnded(id: string): boolean {
    const record = id === 'epoch' ? undefined : this.#logins.get(id);
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
    const result = await this.#write({ ...change, now });
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
    await this.#write({ ...change, event: undefined, now });
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
    await this.#write({ ...change, event: undefined, now: at });
  }

  /** Reads what changed in the store now (a custom store's state is this process's: nothing to read). */
  async sync(): Promise<void> {
    if (this.#shared) await this.#follower?.sync();
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
    for (const cache of [this.#bans, this.#addressBans])
      for (const ban of cache.values()) if (ban.until > now) active.push(ban);
    return active;
  }

  #activeGrants(): Stored<GrantRecord>[] {
    const now = Date.now();
    const active: Stored<GrantRecord>[] = [];
    for (const grant of this.#grants.values()) if (grant.until === null || grant.until > now) active.push(grant);
    return active;
  }

  /**
   * Bans in force from `offset` (or, past the last, from the start of the last `limit` of them), at most `limit`, in
   * the order of `bans()`; where they start, and how many are in force.
   */
  async bansPage(offset: number, limit: number): Promise<{ total: number; offset: number; bans: ActiveBan[] }> {
    await this.sync();
    const active = this.#activeBans();
    const from = pageStart(offset, limit, active.length);
    return {
      total: active.length,
      offset: from,
      bans: first(active, from + limit)
        .slice(from)
        .map(activeBan),
    };
  }

  /** Grants in force, as {@link bansPage} pages the bans. */
  async grantsPage(offset: number, limit: number): Promise<{ total: number; offset: number; grants: ActiveGrant[] }> {
    await this.sync();
    const active = this.#activeGrants();
    const from = pageStart(offset, limit, active.length);
    return {
      total: active.length,
      offset: from,
      grants: first(active, from + limit)
        .slice(from)
        .map(activeGrant),
    };
  }

  /** The bans in force of one client key: its own, and for an `ip:` key its address's. */
  async bansOf(key: string): Promise<ActiveBan[]> {
    await this.sync();
    const now = Date.now();
    const found = [this.#bans.get(key), this.#addressBans.get(addressBan(key))];
    return found.filter((ban): ban is Stored<BanRecord> => ban !== undefined && ban.until > now).map(activeBan);
  }

  /** The runtime grant in force of one client key. */
  async grantOfKey(key: string): Promise<ActiveGrant | undefined> {
    await this.sync();
    const grant = this.#grants.get(key);
    return grant && (grant.until === null || grant.until > Date.now()) ? activeGrant(grant) : undefined;
  }

  /** The operators' bans and grants the store lost, oldest loss first. */
  async lost(): Promise<LostRecord[]> {
    await this.sync();
    const now = Date.now();
    return [...this.#lost.values()]
      .filter((lost) => endOf(lost.record) > now)
      .sort((a, b) => a.lostAt - b.lostAt || (a.field < b.field ? -1 : 1))
      .map((lost): LostRecord => {
        const r = lost.record;
        const since = new Date(r.since);
        const base = { id: lost.field, key: r.key, lostAt: new Date(lost.lostAt) };
        if (isBan(r)) return { ...base, kind: 'ban', ban: { ...r, since, until: new Date(r.until) }, grant: undefined };
        const until = r.until === null ? undefined : new Date(r.until);
        const grant = { key: r.key, grant: r.grant, since, until, note: r.note ?? undefined };
        return { ...base, kind: 'grant', ban: undefined, grant };
      });
  }

  /** Applies again an operator's ban or grant the store lost; resolves false when it has ended or is gone. */
  async restoreLost(id: unknown): Promise<boolean> {
    await this.sync();
    const lost = typeof id === 'string' ? this.#lost.get(id) : undefined;
    if (!lost) return false;
    const now = Date.now();
    const record = lost.record;
    if (endOf(record) > now) {
      const value = JSON.stringify(record);
      const event = isBan(record) ? banEvent(record) : grantEvent(record);
      await this.#change(
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
    return (await this.#write({ ...change, now: Date.now() })).changed;
  }

  /** The entries of the store's runtime state this instance skips, records first, then the history's. */
  async foreign(): Promise<ForeignEntry[]> {
    await this.sync();
    const entries: ForeignEntry[] = [...this.#foreign]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([field, { shown: text, problem }]) => ({ id: `record ${field}`, place: 'record', field, text, problem }));
    for (const json of await this.#state.history()) {
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
      const found = this.#foreign.get(field);
      if (!found) return false;
      const change = { field, value: null, endsAt: null, when: { sha1: found.sha1 }, event: undefined };
      const removed = (await this.#write({ ...change, now: Date.now() })).changed;
      if (removed) this.#foreign.delete(field);
      return removed;
    }
    if (id.startsWith('history ')) {
      const json = (await this.#state.history()).find((entry) => `history ${digest(entry)}` === id);
      return json !== undefined && this.#eventProblem(json) !== undefined && this.#state.removeHistory(json);
    }
    return false;
  }

  #eventProblem(json: string): string | undefined {
    // Each load of the operator's page looks at the whole history: an entry is judged once.
    if (this.#judged.has(json)) return this.#judged.get(json);
    let problem: string | undefined;
    try {
      checkEvent(json);
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      problem = error.message;
    }
    if (this.#judged.size >= 2 * HISTORY_MAX) this.#judged.clear();
    this.#judged.set(json, problem);
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
    for (const json of await this.#state.history()) {
      let event: ChangeEvent;
      try {
        event = checkEvent(json);
      } catch (error) {
        if (!(error instanceof Problem)) throw error;
        this.#foreignFound('history', json, error.message);
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
    this.#follower?.stop();
    this.#follower = undefined;
  }
}
