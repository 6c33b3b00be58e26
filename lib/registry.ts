// Bans and grants as operators and rules change them: kept in the store's runtime state, mirrored in this process.
import type { Request } from 'express';
import ipaddr from 'ipaddr.js';
import { Checker, isPlainObject, MAX_DURATION_MS, show } from './check.js';
import type { Client, IpKey } from './identify.js';
import { observe, type OnError } from './hooks.js';
import { tokenKey } from './keys.js';
import { HISTORY_MAX, MemoryState, type RuntimeState } from './state.js';
import type { ActiveBan, ActiveGrant, ChangeEvent, ClientKind, Grant } from './types.js';

/** The key of an address's ban (token rotation, or an operator's ban of `{ ip }`), apart from the IP client's own. */
export const addressBan = (ip: string): string => `addr:${ip}`;

const BAN = 'ban:';
const GRANT = 'grant:';
const LONGEST_TEXT = 500;

interface BanRecord {
  readonly key: string;
  readonly kind: ClientKind;
  readonly reason: string;
  readonly since: number;
  readonly until: number;
  readonly by: 'rule' | 'operator';
}

interface GrantRecord {
  readonly key: string;
  readonly grant: Grant;
  readonly since: number;
  readonly until: number | null;
  readonly note: string | null;
}

/** What the registry needs of the other features: how addresses are keyed, and how a grant is checked. */
export interface RegistryContext {
  readonly ipOf: IpKey;
  readonly checkGrant: (check: Checker, grant: unknown, field: string) => Grant;
  readonly onChange: ((event: ChangeEvent, req: Request | undefined) => unknown) | undefined;
  readonly report: OnError;
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

function parse<T>(json: string): T | undefined {
  try {
    return JSON.parse(json) as T;
  } catch {
    return undefined;
  }
}

/**
 * The bans and grants of one middleware. Every change goes to the store's runtime state, which every instance
 * sharing the store reads (the memory store's at once, the Redis store's every half second), and is applied to this
 * process's mirror at once; the request path reads only the mirror, synchronously.
 */
export class Registry {
  readonly #state: RuntimeState;
  /** False for a store with no runtime state of its own: the mirror then only holds this process's automatic bans. */
  readonly #shared: boolean;
  readonly #context: RegistryContext;
  /** Ban key → ban; ended bans are skipped until the next load drops them. */
  #bans = new Map<string, BanRecord>();
  #grants = new Map<string, GrantRecord>();
  /** When the last mirrored ban ends: past it, no request needs a look at the bans. */
  #bansEnd = 0;
  #addressBans = 0;
  #stop: (() => void) | undefined;

  constructor(state: RuntimeState | undefined, context: RegistryContext) {
    this.#state = state ?? new MemoryState();
    this.#shared = state !== undefined;
    this.#context = context;
  }

  /** Starts following the state: once the middleware is made, so that a configuration that fails leaves nothing. */
  start(): void {
    this.#stop ??= this.#state.watch((records) => this.#load(records));
  }

  #load(records: Map<string, string>): void {
    const bans = new Map<string, BanRecord>();
    const grants = new Map<string, GrantRecord>();
    for (const [field, json] of records) {
      if (field.startsWith(BAN)) {
        const ban = parse<BanRecord>(json);
        if (ban && typeof ban.until === 'number') bans.set(field.slice(BAN.length), ban);
      } else if (field.startsWith(GRANT)) {
        const grant = parse<GrantRecord>(json);
        if (grant && grant.grant !== undefined) grants.set(field.slice(GRANT.length), grant);
      }
    }
    this.#bans = bans;
    this.#grants = grants;
    this.#indexBans();
  }

  #indexBans(): void {
    let end = 0;
    let addresses = 0;
    for (const [banKey, ban] of this.#bans) {
      end = Math.max(end, ban.until);
      if (banKey.startsWith('addr:')) addresses++;
    }
    this.#bansEnd = end;
    this.#addressBans = addresses;
  }

  /** How many bans are in force, as far as this process knows. */
  activeBans(): number {
    const now = Date.now();
    let n = 0;
    for (const ban of this.#bans.values()) if (ban.until > now) n++;
    return n;
  }

  /** How many runtime grants are in force, as far as this process knows. */
  activeGrants(): number {
    const now = Date.now();
    let n = 0;
    for (const grant of this.#grants.values()) if (grant.until === null || grant.until > now) n++;
    return n;
  }

  /** Whether any ban may be active: false means no request needs identifying for bans. */
  anyBan(now: number): boolean {
    return this.#bansEnd > now;
  }

  /** The end of the ban that holds for `client` (its own, or its address's), or undefined. */
  bannedUntil(client: Client, now: number): number | undefined {
    if (this.#bansEnd <= now) return undefined;
    const own = this.#bans.get(client.key);
    let until = own && own.until > now ? own.until : undefined;
    if (this.#addressBans > 0) {
      const address = this.#bans.get(addressBan(client.ip));
      if (address && address.until > now) until = Math.max(until ?? 0, address.until);
    }
    return until;
  }

  /** The grant given at runtime to `client` (by its key, its token or its address), or undefined. */
  grantOf(client: Client): Grant | undefined {
    if (this.#grants.size === 0) return undefined;
    const now = Date.now();
    const found =
      this.#grants.get(client.key) ??
      (client.tokenKey !== undefined ? this.#grants.get(client.tokenKey) : undefined) ??
      this.#grants.get(client.ip);
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

  /** The fields of records that have ended, dropped with the next change. */
  #expired(now: number): string[] {
    const ended: string[] = [];
    for (const [key, ban] of this.#bans) if (ban.until <= now) ended.push(BAN + key);
    for (const [key, grant] of this.#grants) if (grant.until !== null && grant.until <= now) ended.push(GRANT + key);
    return ended;
  }

  /** Applies a change to the mirror at once, then writes it to the state, and tells `onChange`. */
  #change(field: string, value: string | null, event: ChangeEvent, req: Request | undefined): Promise<boolean> {
    const now = event.at.getTime();
    const expired = this.#expired(now);
    let had = false;
    if (field.startsWith(BAN)) {
      const key = field.slice(BAN.length);
      const ban = this.#bans.get(key);
      had = ban !== undefined && ban.until > now;
      if (value === null) this.#bans.delete(key);
      else this.#bans.set(key, JSON.parse(value) as BanRecord);
      this.#indexBans();
    } else {
      const key = field.slice(GRANT.length);
      const grant = this.#grants.get(key);
      had = grant !== undefined && (grant.until === null || grant.until > now);
      if (value === null) this.#grants.delete(key);
      else this.#grants.set(key, JSON.parse(value) as GrantRecord);
    }
    if (value === null && !had && !this.#shared) return Promise.resolve(false);
    const serialised = JSON.stringify({ ...event, at: now, until: event.until?.getTime() });
    return this.#state.change(field, value, serialised, expired).then((existed) => {
      const changed = value !== null || existed || had;
      if (changed) observe(this.#context.onChange, event, req, this.#context.report);
      return changed;
    });
  }

  /** Records a ban: a rule's (from a request) or an operator's. */
  ban(banKey: string, ban: BanRecord, req: Request | undefined): Promise<boolean> {
    const event: ChangeEvent = {
      action: 'ban',
      key: ban.key,
      kind: ban.kind,
      by: ban.by,
      at: new Date(ban.since),
      reason: ban.reason,
      until: new Date(ban.until),
      grant: undefined,
      note: undefined,
    };
    return this.#change(BAN + banKey, JSON.stringify(ban), event, req);
  }

  /** An operator's ban. */
  banClient(client: unknown, options: unknown): Promise<boolean> {
    const check = new Checker('limits.ban');
    const { key, kind, address } = this.keyOf(check, client);
    const o = check.options(options, 'options', '{ duration, reason }');
    check.unknownKeys(o, ['duration', 'reason'], (k) => `options.${k}`);
    const duration = check.seconds(o.duration, 'options.duration');
    const reason = text(check, o.reason, 'options.reason') ?? 'operator';
    this.#writable(check);
    const since = Date.now();
    const ban: BanRecord = { key, kind, reason, since, until: since + duration, by: 'operator' };
    return this.ban(address ? addressBan(key) : key, ban, undefined);
  }

  /** Lifts the bans of a key (its own and its address's). Resolves whether there was one. */
  async unban(key: string): Promise<boolean> {
    const at = new Date();
    let lifted = false;
    for (const banKey of [key, addressBan(key)]) {
      const known = this.#bans.get(banKey);
      if (!known && !this.#shared) continue;
      const event: ChangeEvent = {
        action: 'unban',
        key,
        kind: known?.kind ?? kindOf(key),
        by: 'operator',
        at,
        reason: undefined,
        until: undefined,
        grant: undefined,
        note: undefined,
      };
      if (await this.#change(BAN + banKey, null, event, undefined)) lifted = true;
    }
    return lifted;
  }

  /** The key to unban: a key as `onBan` reported it, or a client. */
  unbanKey(client: unknown): string {
    if (typeof client === 'string' && client !== '') return client;
    return this.keyOf(new Checker('limits.unban'), client).key;
  }

  grant(client: unknown, grant: unknown, options: unknown): Promise<boolean> {
    const check = new Checker('limits.grant');
    const { key, kind } = this.keyOf(check, client);
    const checked = this.#context.checkGrant(check, grant, 'grant');
    const o = check.options(options, 'options', '{ until, note }');
    check.unknownKeys(o, ['until', 'note'], (k) => `options.${k}`);
    const since = Date.now();
    let until: number | null = null;
    if (o.until !== undefined) {
      const at: unknown = o.until instanceof Date ? o.until.getTime() : o.until;
      if (typeof at !== 'number' || !Number.isFinite(at) || at <= since || at - since > MAX_DURATION_MS) {
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
    const event: ChangeEvent = {
      action: 'grant',
      key,
      kind,
      by: 'operator',
      at: new Date(since),
      reason: undefined,
      until: until === null ? undefined : new Date(until),
      grant: checked,
      note: note ?? undefined,
    };
    return this.#change(GRANT + key, JSON.stringify(record), event, undefined);
  }

  revoke(client: unknown): Promise<boolean> {
    const check = new Checker('limits.revoke');
    const { key, kind } = this.keyOf(check, client);
    this.#writable(check);
    const event: ChangeEvent = {
      action: 'revoke',
      key,
      kind,
      by: 'operator',
      at: new Date(),
      reason: undefined,
      until: undefined,
      grant: undefined,
      note: undefined,
    };
    return this.#change(GRANT + key, null, event, undefined);
  }

  /** The active bans, from the state itself (this process's mirror for a store without one). */
  async bans(): Promise<ActiveBan[]> {
    if (this.#shared) this.#load(await this.#state.load());
    const now = Date.now();
    return [...this.#bans.values()]
      .filter((ban) => ban.until > now)
      .sort(byTimeAndKey)
      .map((ban) => ({ ...ban, since: new Date(ban.since), until: new Date(ban.until) }));
  }

  async grants(): Promise<ActiveGrant[]> {
    if (this.#shared) this.#load(await this.#state.load());
    const now = Date.now();
    return [...this.#grants.values()]
      .filter((grant) => grant.until === null || grant.until > now)
      .sort(byTimeAndKey)
      .map((grant) => ({
        key: grant.key,
        grant: grant.grant,
        since: new Date(grant.since),
        until: grant.until === null ? undefined : new Date(grant.until),
        note: grant.note ?? undefined,
      }));
  }

  /** The changes, newest first: since a time, at most `limit` of them. */
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
      const e = parse<Omit<ChangeEvent, 'at' | 'until'> & { at: number; until?: number }>(json);
      if (!e) continue;
      if (since !== undefined && e.at < since) break;
      events.push({
        action: e.action,
        key: e.key,
        kind: e.kind,
        by: e.by,
        at: new Date(e.at),
        reason: e.reason ?? undefined,
        until: e.until === undefined ? undefined : new Date(e.until),
        grant: e.grant ?? undefined,
        note: e.note ?? undefined,
      });
      if (events.length === limit) break;
    }
    return events;
  }

  /** Stops reading the state (the Redis store's refresh). */
  close(): void {
    this.#stop?.();
    this.#stop = undefined;
  }
}
