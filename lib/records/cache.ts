// This instance's copy of the records the store's runtime state holds: the request path asks it, at once.
import { show } from '../shared/check.js';
import { RuntimeStateError } from '../shared/errors.js';
import type { OnError } from '../shared/hooks.js';
import { SweptMap } from '../shared/swept.js';
import type { ClientKind } from '../contract/keys.js';
import { HISTORY_MAX, sha1, type StateUpdate } from '../stores/state.js';
import {
  addressBan,
  type BanRecord,
  checkEvent,
  type CheckGrant,
  type AnyRecord,
  attempt,
  type EndedLogin,
  endOf,
  type EpochRecord,
  type GrantRecord,
  checkBanRecord,
  checkGrantRecord,
  checkLostRecord,
  checkResetRecord,
  checkSessionRecord,
  type LostEntry,
  objectOf,
  Problem,
  type ResetRecord,
  type Stored,
  storedBan,
  type Write,
} from './kinds.js';
import type { ForeignEntry, Grant } from './types.js';
import { digest, sameRecord, shownText, withoutSeq } from './views.js';

/** Foreign entries kept in view for `foreign()`, and those remembered as told to `onError`, at the most. */
const FOREIGN_KEPT = 1000;
const REPORTED_KEPT = 10_000;
const ADDRESS_BAN_KEYS_KEPT = 10_000;

export interface ClientKeys {
  /** `t:<sha256 of the token>`, `ip:<address>`, or what the `key` option returned. */
  readonly key: string;
  readonly kind: ClientKind;
  /** `ip:<address>`, whatever `key` is. */
  readonly ip: string;
}

/** A foreign record as `foreign()` lists it, and its text's hash: `removeForeign()` removes only that text. */
type ForeignRecord = ForeignEntry & { readonly sha1: string };

interface Known {
  readonly epoch: string | undefined;
  readonly seq: number;
  /** By field. */
  readonly records: ReadonlyMap<string, Stored<AnyRecord>>;
  readonly foreign: ReadonlySet<string>;
}

interface Cached extends Iterable<[string, Stored<AnyRecord>]> {
  get(id: string): Stored<AnyRecord> | undefined;
  add(id: string, record: Stored<AnyRecord>, now: number): unknown;
  set(id: string, record: Stored<AnyRecord>): unknown;
  delete(id: string): boolean;
  clear(): void;
}

/** A kind of record, by the prefix of its field: a new kind is a check, a cache and an entry in `#kinds`. */
interface Kind {
  check(id: string, o: Record<string, unknown>): Stored<AnyRecord>;
  /** Its records by id; a ban of an address's in the second. */
  readonly caches: readonly Cached[];
}

/** The records that a state lost or a copy brings back can be: those of clients, and lost records. */
const LOSABLE = /^(ban|grant|lost):/;

interface Replacement {
  readonly changes: readonly Write[];
  readonly message: string | undefined;
}

export class RecordCache {
  /** Ended bans stay until swept or replaced: each check reads the end. */
  readonly #bans = new SweptMap<Stored<BanRecord>>((ban) => ban.until);
  /** Apart, so that no request reads its address while no address is banned. */
  readonly #addressBans = new SweptMap<Stored<BanRecord>>((ban) => ban.until);
  readonly grants = new SweptMap<Stored<GrantRecord>>(endOf);
  readonly lost = new SweptMap<Stored<LostEntry>>(endOf);
  /** `epoch`, and the ids of the logins ended by their logout. */
  readonly logins = new SweptMap<Stored<EpochRecord | EndedLogin>>(endOf);
  readonly #resets = new SweptMap<Stored<ResetRecord>>((reset) => reset.until);
  // Each request's check would make the string again; an LRU's bookkeeping would cost as much.
  readonly #addressBanKeys = new Map<string, string>();
  readonly foreign = new Map<string, ForeignRecord>();
  readonly #reported = new Set<string>();
  /** Each load of the operator's page looks at the whole history: an entry is judged once. */
  readonly #judged = new Map<string, string | undefined>();
  readonly #kinds: ReadonlyMap<string, Kind>;
  /** Past the end of the last ban seen, no request needs a look at the bans. */
  #bansEnd = 0;
  #epoch: string | undefined;
  #copy: string | undefined;
  #seq = 0;
  loaded = false;
  /** The first read of the state, which a request waits for (within a bound) before its bans are checked. */
  ready: Promise<void> | undefined;
  /** What the cost tests count. */
  parsed = 0;

  constructor(
    checkGrant: CheckGrant,
    private readonly report: OnError,
    private readonly onReset: ((key: string) => void) | undefined,
  ) {
    this.#kinds = new Map<string, Kind>([
      ['ban', { check: checkBanRecord, caches: [this.#bans, this.#addressBans] }],
      ['grant', { check: (id, o) => checkGrantRecord(id, o, checkGrant), caches: [this.grants] }],
      ['lost', { check: (id, o) => checkLostRecord(id, o, checkGrant), caches: [this.lost] }],
      ['session', { check: checkSessionRecord, caches: [this.logins] }],
      ['reset', { check: checkResetRecord, caches: [this.#resets] }],
    ]);
  }

  /** False: no request needs identifying for bans. */
  anyBan(now: number): boolean {
    return this.#bansEnd > now && (this.#bans.size > 0 || this.#addressBans.size > 0);
  }

  /** Reads the clock only while a ban is held: most requests of most apps meet none. */
  bannedUntil(client: ClientKeys, at?: number): number | undefined {
    if (this.#bans.size === 0 && this.#addressBans.size === 0) return undefined;
    const now = at ?? Date.now();
    if (this.#bansEnd <= now) return undefined;
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

  /** By its key, else by its address: a token that `authenticate` refused is not its key, nor its grant its own. */
  grantOf(client: ClientKeys): Grant | undefined {
    if (this.grants.size === 0) return undefined;
    const now = Date.now();
    const found = this.grants.get(client.key) ?? (client.kind === 'ip' ? undefined : this.grants.get(client.ip));
    return found && (found.until === null || found.until > now) ? found.grant : undefined;
  }

  #bansFor(banKey: string): SweptMap<Stored<BanRecord>> {
    return banKey.startsWith('addr:') ? this.#addressBans : this.#bans;
  }

  banOf(banKey: string): Stored<BanRecord> | undefined {
    return this.#bansFor(banKey).get(banKey);
  }

  banned(banKey: string, now: number): boolean {
    const ban = this.banOf(banKey);
    return ban !== undefined && ban.until > now;
  }

  /** In force here before the store has it (sequence number -1): the requests in flight must find it. */
  holdRuleBan(banKey: string, ban: BanRecord): void {
    this.#bansFor(banKey).add(banKey, storedBan(ban, -1), ban.since);
    this.#bansEnd = Math.max(this.#bansEnd, ban.until);
  }

  dropHeldBan(banKey: string): Stored<BanRecord> | undefined {
    const ban = this.banOf(banKey);
    if (ban === undefined || ban.seq >= 0) return undefined;
    this.#bansFor(banKey).delete(banKey);
    return ban;
  }

  tokenEndOf(key: string): string | undefined {
    return (this.grants.get(key) ?? this.#bans.get(key))?.tokenEnd;
  }

  bansInForce(now = Date.now()): Stored<BanRecord>[] {
    const active: Stored<BanRecord>[] = [];
    for (const cache of [this.#bans, this.#addressBans])
      for (const ban of cache.values()) if (ban.until > now) active.push(ban);
    return active;
  }

  grantsInForce(now = Date.now()): Stored<GrantRecord>[] {
    return [...this.grants.values()].filter((grant) => endOf(grant) > now);
  }

  /** Both new when the store loses its data or a copy behind it takes its place. */
  stateId(): string {
    return `${this.#epoch ?? ''}/${this.#copy ?? ''}`;
  }

  get epoch(): string | undefined {
    return this.#epoch;
  }

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

  /** One field's text as read at sequence number `readAt` (null: no record). */
  put(field: string, json: string | null, readAt: number): void {
    if (field.startsWith('#')) return;
    const { kind, id, cache } = this.#place(field);
    this.foreign.delete(field);
    const cached = cache?.get(id);
    if (json === null) {
      // A version this instance wrote after that read stays.
      if (cached === undefined || cached.seq <= readAt) cache?.delete(id);
      return;
    }
    if (!kind || !cache) {
      const prefix = field.slice(0, field.indexOf(':'));
      return this.#skip(field, json, `is of a kind this version does not know (${show(prefix)})`);
    }
    this.parsed++;
    const record = attempt(() => kind.check(id, objectOf(json)));
    if (record instanceof Problem) {
      cache.delete(id);
      return this.#skip(field, json, record.message);
    }
    if (cached !== undefined && cached.seq > record.seq) return;
    cache.add(id, record, Date.now());
    if (field.startsWith('ban:')) this.#bansEnd = Math.max(this.#bansEnd, endOf(record));
    // Told at once: the counters' remembered refusals of the client are stale from then on.
    else if (field.startsWith('reset:')) this.onReset?.(id);
  }

  #place(field: string): { kind: Kind | undefined; id: string; cache: Cached | undefined } {
    const colon = field.indexOf(':');
    const kind = colon > 0 ? this.#kinds.get(field.slice(0, colon)) : undefined;
    const id = field.slice(colon + 1);
    return { kind, id, cache: kind?.caches[id.startsWith('addr:') ? kind.caches.length - 1 : 0] };
  }

  #skip(field: string, json: string, problem: string): void {
    if (this.foreign.size >= FOREIGN_KEPT) this.foreign.delete(this.foreign.keys().next().value as string);
    const entry = { id: `record ${field}`, place: 'record', field, text: shownText(json), problem } as const;
    this.foreign.set(field, { ...entry, sha1: sha1(json) });
    this.foreignFound(`record ${field}`, json, problem);
  }

  foreignFound(entry: string, json: string, problem: string): void {
    const id = `${entry}\n${digest(json)}`;
    if (this.#reported.has(id)) return;
    if (this.#reported.size >= REPORTED_KEPT) this.#reported.delete(this.#reported.values().next().value as string);
    this.#reported.add(id);
    const message = `the store's runtime state has a foreign entry, skipped: ${entry} ${problem}.`;
    this.report(new RuntimeStateError('ERR_FOREIGN_ENTRY', message, { entry }), undefined);
  }

  historyProblem(json: string): string | undefined {
    if (this.#judged.has(json)) return this.#judged.get(json);
    const event = attempt(() => checkEvent(json));
    const problem = event instanceof Problem ? event.message : undefined;
    if (this.#judged.size >= 2 * HISTORY_MAX) this.#judged.clear();
    this.#judged.set(json, problem);
    return problem;
  }

  /** But for the rule's bans only this instance has. */
  #clear(): void {
    this.#bansEnd = 0;
    for (const kind of this.#kinds.values()) {
      for (const cache of kind.caches) {
        const held = [...cache].filter(([, record]) => record.seq < 0);
        cache.clear();
        for (const [id, ban] of held) {
          cache.set(id, ban);
          this.#bansEnd = Math.max(this.#bansEnd, endOf(ban));
        }
      }
    }
    this.foreign.clear();
  }

  #known(): Known {
    const records = new Map<string, Stored<AnyRecord>>();
    for (const [prefix, kind] of this.#kinds)
      for (const cache of kind.caches) for (const [id, record] of cache) records.set(`${prefix}:${id}`, record);
    return { epoch: this.#epoch, seq: this.#seq, records, foreign: new Set(this.foreign.keys()) };
  }

  #current(field: string): Stored<AnyRecord> | undefined {
    const { id, cache } = this.#place(field);
    return cache?.get(id);
  }

  // What the new state lacks may have been lifted meanwhile: never written back, but kept as a lost record.
  // A copy behind it (the same epoch) may bring back records removed since.
  #replaced(known: Known, update: StateUpdate): Replacement {
    const now = Date.now();
    const copy = known.epoch === update.epoch;
    const lost: LostEntry[] = [];
    let ruleBans = 0;
    for (const [field, record] of known.records) {
      if (record.seq < 0 || !LOSABLE.test(field)) continue;
      const entry = 'field' in record ? record : { field, record: record as BanRecord | GrantRecord, lostAt: now };
      if (endOf(entry) <= now) continue;
      const current = this.#current(field);
      // Kept: the same version (or a newer one) on a copy; the same record written again after a loss.
      if (current && (copy ? current.seq >= record.seq : sameRecord(current, record))) continue;
      if (!('by' in record) || record.by === 'operator') lost.push(entry);
      else ruleBans++;
    }
    const changes: Write[] = [];
    if (copy) {
      // Records this instance had read past without holding them; not those written on the copy since it took over.
      const passed = Math.min(known.seq, update.forked ?? update.seq);
      for (const [field, json] of update.records) {
        if (json === null || known.records.has(field) || known.foreign.has(field)) continue;
        const seq = Number(/^\{"seq":(\d+),/.exec(json)?.[1] ?? 0);
        const current = this.#current(field);
        if (seq <= passed && current !== undefined && endOf(current) > now)
          changes.push({ field, record: null, when: { sha1: sha1(json) } });
      }
    }
    const stale = changes.length;
    for (const { field, record, lostAt } of lost) {
      // Several instances may find the same record lost: the first one's lost record stays.
      const kept: LostEntry = { field, record: withoutSeq(record), lostAt };
      changes.push({ field: `lost:${field}`, record: kept, when: 'absent' });
    }
    if (lost.length + ruleBans + stale === 0) return { changes, message: undefined };
    const what = copy ? 'replaced by a copy that is behind it (a failover)' : 'lost (a restart, a flush or a failover)';
    const parts: string[] = [];
    if (lost.length > 0)
      parts.push(`${lost.length} ban(s) and grant(s) of operators are kept as lost records, to restore or dismiss`);
    if (ruleBans > 0) parts.push(`${ruleBans} ban(s) by rule are gone`);
    if (stale > 0) parts.push(`${stale} record(s) lifted before came back with it and are removed again`);
    return { changes, message: `the store's runtime state was ${what}: ${parts.join('; ')}.` };
  }
}
