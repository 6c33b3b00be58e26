// Grant requests of rule 6: filed by clients with proof of their size, kept in the store's state, decided by operators.
import { randomBytes } from 'node:crypto';
import { Checker, isPlainObject, show } from './check.js';
import { tokenKey } from './keys.js';
import type { EndpointRow } from './listings.js';
import type { Registry } from './registry.js';
import type { RequestRecords } from './state.js';
import type { Grant, GrantProof, GrantRequest, GrantRequestInput, GrantRequests as Requests } from './types.js';

/** Requests kept at the most; a new one is refused beyond that, until decided ones age out. */
export const REQUESTS_MAX = 10_000;
/** How long a decided request stays readable by its requester: 30 days. */
export const DECIDED_KEPT_MS = 30 * 24 * 3600_000;
const LONGEST_TOKEN = 4096;
const LONGEST_CONTACT = 200;
const LONGEST_REASON = 2000;
const LONGEST_LINK = 500;
/** The largest count a proof may state. */
const LARGEST_COUNT = 1e12;

interface RequestRecord {
  readonly id: string;
  readonly key: string;
  readonly tokenEnd: string;
  readonly ask: Grant;
  readonly proof: GrantProof;
  readonly contact: string;
  readonly reason: string;
  readonly at: number;
  readonly status: GrantRequest['status'];
  readonly decidedAt: number | null;
  readonly granted: Grant | null;
  readonly until: number | null;
  readonly answer: string | null;
  /** The order of its last change, which the store assigns when it writes it: 0 for one written without. */
  readonly seq?: number;
}

/** A request as the store is given it: without `seq`, which the store adds. */
function serialise(record: RequestRecord): string {
  const { seq: _seq, ...rest } = record;
  return JSON.stringify(rest);
}

/** The store's order of two requests' last changes: by their sequence numbers, then (written without one) by time. */
function byChange(a: RequestRecord, b: RequestRecord): number {
  return (a.seq ?? 0) - (b.seq ?? 0) || (a.decidedAt ?? a.at) - (b.decidedAt ?? b.at) || (a.id < b.id ? -1 : 1);
}

/** The part of a token shown to operators and requesters: its last 4 characters, none of a short one. */
export function tokenEnd(token: string): string {
  return token.length >= 12 ? token.slice(-4) : '';
}

function text(check: Checker, value: unknown, field: string, longest: number): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > longest)
    check.invalid(field, `must be a non-empty string of at most ${longest} characters; got ${show(value)}.`);
  return value.trim();
}

function count(check: Checker, value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > LARGEST_COUNT)
    check.invalid(field, `must be a whole number from 0 to ${LARGEST_COUNT}; got ${show(value)}.`);
  return value;
}

/** An http(s) URL: the page links to it, so nothing else (`javascript:`) may get through. */
function link(check: Checker, value: unknown, field: string): string {
  const raw = text(check, value, field, LONGEST_LINK);
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:'))
    check.invalid(field, `must be an http(s) URL; got ${show(value)}.`);
  return url.href;
}

function checkProof(check: Checker, value: unknown): GrantProof {
  if (!isPlainObject(value)) check.invalid('input.proof', `must be an object; got ${show(value)}.`);
  if (value.kind === 'bot') {
    check.unknownKeys(value, ['kind', 'servers', 'shards', 'link'], (k) => `input.proof.${k}`);
    return {
      kind: 'bot',
      servers: count(check, value.servers, 'input.proof.servers'),
      shards: count(check, value.shards, 'input.proof.shards'),
      link: link(check, value.link, 'input.proof.link'),
    };
  }
  if (value.kind === 'server') {
    check.unknownKeys(value, ['kind', 'members', 'link'], (k) => `input.proof.${k}`);
    return {
      kind: 'server',
      members: count(check, value.members, 'input.proof.members'),
      link: link(check, value.link, 'input.proof.link'),
    };
  }
  return check.invalid('input.proof.kind', `must be 'bot' or 'server'; got ${show(value.kind)}.`);
}

function publicOf(r: RequestRecord): GrantRequest {
  return {
    id: r.id,
    key: r.key,
    tokenEnd: r.tokenEnd,
    ask: r.ask,
    proof: r.proof,
    contact: r.contact,
    reason: r.reason,
    at: new Date(r.at),
    status: r.status,
    decidedAt: r.decidedAt === null ? undefined : new Date(r.decidedAt),
    granted: r.granted ?? undefined,
    until: r.until === null ? undefined : new Date(r.until),
    answer: r.answer ?? undefined,
  };
}

function parse(json: string | undefined): RequestRecord | undefined {
  if (json === undefined) return undefined;
  try {
    const r = JSON.parse(json) as RequestRecord;
    if (r.seq !== undefined && !Number.isSafeInteger(r.seq)) return undefined;
    return typeof r.id === 'string' && typeof r.key === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The grant requests of one middleware, in its store's state, so that every instance sees them. A request's token is
 * hashed at once; only its last 4 characters are kept, for display. Every change is a compare-and-set: a request is
 * decided once.
 */
export class GrantRequests implements Requests {
  readonly #records: RequestRecords | undefined;
  readonly #registry: Registry;
  /** The rows of the table, which a request for specific endpoints names. */
  readonly endpoints: readonly EndpointRow[];

  constructor(records: RequestRecords | undefined, registry: Registry, rows: readonly EndpointRow[]) {
    this.#records = records;
    this.#registry = registry;
    this.endpoints = rows;
  }

  /** Whether the store keeps grant requests (the memory and Redis stores do). */
  get supported(): boolean {
    return this.#records !== undefined;
  }

  #state(check: Checker): RequestRecords {
    if (this.#records) return this.#records;
    return check.fail(
      'ERR_UNSUPPORTED_STORE',
      'options.store',
      'keeps no grant requests (a custom store): use memoryStore() or redisStore().',
    );
  }

  /** Files a pending request. Throws ListingLimitsError naming the field of `input` at fault. */
  async file(input: GrantRequestInput): Promise<GrantRequest> {
    const check: Checker = new Checker('limits.requests.file');
    const i = check.options(input, 'input', '{ token, ask, proof, contact, reason }');
    check.unknownKeys(i, ['token', 'ask', 'proof', 'contact', 'reason'], (k) => `input.${k}`);
    if (typeof i.token !== 'string' || i.token === '' || i.token.length > LONGEST_TOKEN)
      check.invalid('input.token', `must be a non-empty string of at most ${LONGEST_TOKEN} characters.`);
    const record: RequestRecord = {
      id: randomBytes(9).toString('base64url'),
      key: tokenKey(i.token),
      tokenEnd: tokenEnd(i.token),
      ask: this.#registry.checkGrant(check, i.ask, 'input.ask'),
      proof: checkProof(check, i.proof),
      contact: text(check, i.contact, 'input.contact', LONGEST_CONTACT),
      reason: text(check, i.reason, 'input.reason', LONGEST_REASON),
      at: Date.now(),
      status: 'pending',
      decidedAt: null,
      granted: null,
      until: null,
      answer: null,
    };
    const done = await this.#state(check).put(record.id, serialise(record), null, REQUESTS_MAX);
    if (done !== 'done') {
      check.fail(
        'ERR_UNSUPPORTED_STORE',
        'options.store',
        `keeps ${REQUESTS_MAX} requests already: decide some first.`,
      );
    }
    return publicOf(record);
  }

  /** A request as its requester may see it: only with the token it was filed with; else undefined. */
  async status(id: string, token: string): Promise<GrantRequest | undefined> {
    if (typeof id !== 'string' || typeof token !== 'string' || id === '' || id.length > 64) return undefined;
    const record = parse(await this.#state(new Checker('limits.requests.status')).get(id));
    return record && record.key === tokenKey(token) ? publicOf(record) : undefined;
  }

  /** Every request: pending ones first, oldest first, then decided ones, newest first. Old decided ones are dropped. */
  async list(): Promise<GrantRequest[]> {
    const state = this.#state(new Checker('limits.requests.list'));
    const now = Date.now();
    const records: RequestRecord[] = [];
    const old: string[] = [];
    for (const json of await state.all()) {
      const r = parse(json);
      if (!r) continue;
      if (r.decidedAt !== null && now - r.decidedAt > DECIDED_KEPT_MS) old.push(r.id);
      else records.push(r);
    }
    if (old.length > 0) await state.remove(old);
    // In the order the store wrote them, never by the clock: two requests filed in one millisecond keep theirs.
    const pending = records.filter((r) => r.status === 'pending').sort(byChange);
    const decided = records.filter((r) => r.status !== 'pending').sort((a, b) => byChange(b, a));
    return [...pending, ...decided].map(publicOf);
  }

  async #pending(check: Checker, id: unknown): Promise<{ record: RequestRecord; json: string }> {
    if (typeof id !== 'string' || id === '') check.invalid('id', `must be a request's id; got ${show(id)}.`);
    const json = await this.#state(check).get(id);
    const record = parse(json);
    if (!record || json === undefined) return check.invalid('id', `is no request's id; got ${show(id)}.`);
    if (record.status !== 'pending') check.invalid('id', `names a request already ${record.status}.`);
    return { record, json };
  }

  /** Writes a decision over the request as read; resolves the text the store wrote (with its sequence number). */
  async #decide(check: Checker, json: string, decided: RequestRecord): Promise<string> {
    const state = this.#state(check);
    const done = await state.put(decided.id, serialise(decided), json, REQUESTS_MAX);
    if (done !== 'done') check.invalid('id', 'names a request another operator decided meanwhile.');
    return (await state.get(decided.id)) ?? '';
  }

  /**
   * Approves a pending request: the client of its token is given `grant` (which may differ from what was asked)
   * until `until`, with the request's id in the grant's note.
   */
  async approve(id: string, grant: Grant, options?: { until?: Date | number; note?: string }): Promise<GrantRequest> {
    const check: Checker = new Checker('limits.requests.approve');
    const checked = this.#registry.checkGrant(check, grant, 'grant');
    const { record, json } = await this.#pending(check, id);
    const until = options?.until instanceof Date ? options.until.getTime() : (options?.until ?? null);
    const approved: RequestRecord = { ...record, status: 'approved', decidedAt: Date.now(), granted: checked, until };
    const value = await this.#decide(check, json, approved);
    try {
      const note = options?.note ?? `request ${record.id}`;
      await this.#registry.grant({ key: record.key }, checked, { until: until ?? undefined, note });
    } catch (error) {
      // The grant could not be given (a bad `until`): the request is pending again.
      await this.#records?.put(record.id, json, value, REQUESTS_MAX);
      throw error;
    }
    return publicOf(approved);
  }

  /** Declines a pending request, with the reason its requester sees. */
  async decline(id: string, reason: string): Promise<GrantRequest> {
    const check: Checker = new Checker('limits.requests.decline');
    const answer = text(check, reason, 'reason', LONGEST_REASON);
    const { record, json } = await this.#pending(check, id);
    const declined: RequestRecord = { ...record, status: 'declined', decidedAt: Date.now(), answer };
    await this.#decide(check, json, declined);
    return publicOf(declined);
  }
}
