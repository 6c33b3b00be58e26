// Grant requests of rule 6: filed by clients with proof of their size, kept in the store's state, decided by operators.
import { randomBytes } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { Checker, DAY_MS, isPlainObject, show } from '../shared/check.js';
import { tokenEnd, tokenKey } from '../contract/keys.js';
import type { EndpointRow } from '../contract/listings.js';
import type { CallBound } from '../stores/call-bound.js';
import type { GrantRequestMeta, GrantRequestPlace, GrantRequestStore } from '../stores/grant-request-store.js';
import type { RequestPut } from '../stores/state.js';
import { observe } from '../shared/hooks.js';
import type { Parts } from './calls.js';
import { grantClient } from './grants.js';
import { attempt, byOption, checkName, checkText, isName, objectOf, Problem } from './kinds.js';
import { withoutSeq } from './views.js';
import type { Grant, GrantProof, GrantRequest, GrantRequestInput, GrantRequests } from './types.js';

/** Beyond, an ended one is dropped, else the oldest of the group (IPv6 /48, IPv4 /16) that has the most. */
const GRANT_REQUESTS_MAX = 10_000;
export const PENDING_KEPT_MS = 30 * DAY_MS;
const DECIDED_KEPT_MS = 30 * DAY_MS;
/** Pending requests one client key, and one network (IPv4 /24, IPv6 by `ipv6Subnet`), may have at once. */
const PENDING_PER_CLIENT = 2;
const PENDING_PER_NETWORK = 3;
const LIST_MAX = 1000;
const LIST_DEFAULT = 50;
/** The contact page's form holds to them too. */
export const LONGEST_TOKEN = 4096;
export const LONGEST_CONTACT = 200;
export const LONGEST_REASON = 2000;
export const LONGEST_LINK = 500;
export const LARGEST_COUNT = 1e12;

type StoredGrantRequest = Omit<
  GrantRequest,
  'at' | 'decidedAt' | 'granted' | 'until' | 'answer' | 'network' | 'decidedBy'
> & {
  readonly at: number;
  readonly decidedAt: number | null;
  readonly granted: Grant | null;
  readonly until: number | null;
  readonly answer: string | null;
  /** Absent from a request an older version decided. */
  readonly decidedBy?: string | null;
  readonly network: string;
  /** What it counts in when the store is full. */
  readonly group: string;
  readonly seq?: number;
};

function requestEnd(r: StoredGrantRequest): number {
  return r.decidedAt === null ? r.at + PENDING_KEPT_MS : r.decidedAt + DECIDED_KEPT_MS;
}

function metaOf(r: StoredGrantRequest): GrantRequestMeta {
  return {
    key: r.key,
    network: r.network,
    group: r.group,
    status: r.status === 'pending' ? 'pending' : 'decided',
    endsAt: requestEnd(r),
  };
}

/** IPv4 by /24 and /16; IPv6 by `ipv6Subnet` (/64 for `false`: one subscriber has a whole /64) and /48. */
function placeOf(ip: string, subnet: number | false): Omit<GrantRequestPlace, 'key'> {
  let address = ipaddr.parse(ip);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress())
    address = (address as ipaddr.IPv6).toIPv4Address();
  const bytes = address.toByteArray();
  const v4 = address.kind() === 'ipv4';
  const [bits, wide] = v4 ? [24, 16] : [subnet === false ? 64 : subnet, 48];
  const of = (n: number) => {
    const mask = (v4 ? ipaddr.IPv4 : ipaddr.IPv6).subnetMaskFromPrefixLength(n).toByteArray();
    return `ip:${ipaddr.fromByteArray(bytes.map((byte, i) => byte & (mask[i] ?? 0))).toString()}/${n}`;
  };
  return { network: of(bits), group: of(Math.min(bits, wide)) };
}

function addressOfKey(key: string): string | undefined {
  if (!key.startsWith('ip:')) return undefined;
  const address = key.slice(3).split('/')[0] ?? '';
  return ipaddr.isValid(address) ? address : undefined;
}

function count(check: Checker, value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > LARGEST_COUNT)
    check.invalid(field, `must be a whole number from 0 to ${LARGEST_COUNT}; got ${show(value)}.`);
  return value;
}

/** The page links to it: nothing but http(s) (`javascript:`) may get through. */
function checkLink(check: Checker, value: unknown, field: string): string {
  const raw = checkText(check, value, field, LONGEST_LINK, true);
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

/** The counts each kind of proof gives, in order, before its link. */
const PROOF_COUNTS = { bot: ['servers', 'shards'], server: ['members'] } as const;

function checkProof(check: Checker, value: unknown): GrantProof {
  if (!isPlainObject(value)) check.invalid('input.proof', `must be an object; got ${show(value)}.`);
  if (value.kind !== 'bot' && value.kind !== 'server')
    return check.invalid('input.proof.kind', `must be 'bot' or 'server'; got ${show(value.kind)}.`);
  const counts = PROOF_COUNTS[value.kind];
  check.unknownKeys(value, ['kind', ...counts, 'link'], (k) => `input.proof.${k}`);
  const proof: Record<string, unknown> = { kind: value.kind };
  for (const name of counts) proof[name] = count(check, value[name], `input.proof.${name}`);
  proof.link = checkLink(check, value.link, 'input.proof.link');
  return proof as GrantProof;
}

function publicOf(r: StoredGrantRequest): GrantRequest {
  return {
    id: r.id,
    key: r.key,
    network: r.network || undefined,
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
    // Whatever the store holds, only a name is shown.
    decidedBy: isName(r.decidedBy) ? r.decidedBy : undefined,
  };
}

function parseRequest(json: string | undefined): StoredGrantRequest | undefined {
  if (json === undefined) return undefined;
  const r = attempt(() => objectOf(json) as unknown as StoredGrantRequest);
  if (r instanceof Problem) return undefined;
  if (r.seq !== undefined && !Number.isSafeInteger(r.seq)) return undefined;
  const times = [r.at, r.decidedAt ?? 0].every((t) => Number.isSafeInteger(t));
  const place = typeof r.network === 'string' && typeof r.group === 'string';
  return typeof r.id === 'string' && typeof r.key === 'string' && times && place ? r : undefined;
}

export type OnRequestFiled = (request: GrantRequest) => unknown;

// A token is hashed at once. Every change is a compare-and-set, so a request is decided once; every call reads or
// writes a few requests, however many are kept.
export class GrantRequestDesk implements GrantRequests {
  readonly #store: GrantRequestStore | undefined;
  readonly #parts: Parts;
  readonly #ipv6Subnet: number | false;
  readonly #onFiled: OnRequestFiled | undefined;

  constructor(
    store: GrantRequestStore | undefined,
    parts: Parts,
    { ipv6Subnet, onFiled }: { ipv6Subnet: number | false; onFiled?: OnRequestFiled },
    readonly endpoints: readonly EndpointRow[],
  ) {
    this.#store = store;
    this.#parts = parts;
    this.#ipv6Subnet = ipv6Subnet;
    this.#onFiled = onFiled;
  }

  get supported(): boolean {
    return this.#store !== undefined;
  }

  /** The call `check.source` on the store, within its bound. */
  #within<T>(check: Checker, run: (store: GrantRequestStore, bound: CallBound) => Promise<T>): Promise<T> {
    const store =
      this.#store ??
      check.fail(
        'ERR_UNSUPPORTED_STORE',
        'options.store',
        'keeps no grant requests (a custom store): use memoryStore() or redisStore().',
      );
    return this.#parts.calls.bounded(check.source, (bound) => run(store, bound));
  }

  async file(input: GrantRequestInput): Promise<GrantRequest> {
    const check: Checker = new Checker('limits.requests.file');
    const i = check.options(input, 'input', '{ token, ask, proof, contact, reason, ip }');
    check.unknownKeys(i, ['token', 'ask', 'proof', 'contact', 'reason', 'ip'], (k) => `input.${k}`);
    if (typeof i.token !== 'string' || i.token === '' || i.token.length > LONGEST_TOKEN)
      check.invalid('input.token', `must be a non-empty string of at most ${LONGEST_TOKEN} characters.`);
    if (i.ip !== undefined && (typeof i.ip !== 'string' || !ipaddr.isValid(i.ip)))
      check.invalid('input.ip', `must be an IP address; got ${show(i.ip)}.`);
    const key = tokenKey(i.token);
    const place = i.ip === undefined ? { network: '', group: key } : placeOf(i.ip as string, this.#ipv6Subnet);
    const record: StoredGrantRequest = {
      id: randomBytes(9).toString('base64url'),
      key,
      tokenEnd: tokenEnd(i.token),
      ask: this.#parts.checkGrant(check, i.ask, 'input.ask'),
      proof: checkProof(check, i.proof),
      contact: checkText(check, i.contact, 'input.contact', LONGEST_CONTACT, true),
      reason: checkText(check, i.reason, 'input.reason', LONGEST_REASON, true),
      at: Date.now(),
      status: 'pending',
      decidedAt: null,
      granted: null,
      until: null,
      answer: null,
      ...place,
    };
    const text = JSON.stringify(record);
    const bounds = { perKey: PENDING_PER_CLIENT, perNetwork: PENDING_PER_NETWORK, max: GRANT_REQUESTS_MAX };
    const done = await this.#within(check, (store, bound) =>
      bound.race(store.file(record.id, text, metaOf(record), bounds, record.at, bound.applyBy), (late) => {
        if (late === 'done') this.#parts.calls.lateChange(bound);
      }),
    );
    if (done === 'key' || done === 'network') {
      const [field, whose] = done === 'key' ? ['input.token', ''] : ['input.ip', 'is of a network that '];
      const pending = done === 'key' ? PENDING_PER_CLIENT : PENDING_PER_NETWORK;
      const wait = "wait for an operator's decision, or for one to expire.";
      check.fail('ERR_TOO_MANY_PENDING', field, `${whose}has ${pending} requests pending already: ${wait}`);
    }
    if (done !== 'done') throw new Error('limits.requests.file: the store has a request of this id already.');
    // A copy of its own, told without waiting: a hook that hangs or fails leaves the filing as it is.
    observe(this.#onFiled, publicOf(record), undefined, (error) => this.#parts.calls.report(error, undefined));
    return publicOf(record);
  }

  async status(id: string, token: string): Promise<GrantRequest | undefined> {
    const record = typeof token === 'string' ? await this.#read('limits.requests.status', id) : undefined;
    return record && record.key === tokenKey(token) ? { ...publicOf(record), decidedBy: undefined } : undefined;
  }

  async get(id: string): Promise<GrantRequest | undefined> {
    const record = await this.#read('limits.requests.get', id);
    return record && publicOf(record);
  }

  async #read(source: string, id: unknown): Promise<StoredGrantRequest | undefined> {
    if (typeof id !== 'string' || id === '' || id.length > 64) return undefined;
    const record = parseRequest(await this.#within(new Checker(source), (store, bound) => bound.race(store.get(id))));
    return record && requestEnd(record) > Date.now() ? record : undefined;
  }

  #visible(values: readonly string[], now: number): GrantRequest[] {
    const records = values.map(parseRequest);
    return records.filter((r): r is StoredGrantRequest => r !== undefined && requestEnd(r) > now).map(publicOf);
  }

  #page(
    check: Checker,
    options: unknown,
  ): { status: 'pending' | 'decided' | undefined; offset: number; limit: number } {
    const o = check.options(options, 'options', '{ status, offset, limit }');
    check.unknownKeys(o, ['status', 'offset', 'limit'], (k) => `options.${k}`);
    const status = o.status === undefined ? undefined : check.oneOf(o.status, ['pending', 'decided'], 'options.status');
    const offset = o.offset === undefined ? 0 : o.offset;
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0)
      check.invalid('options.offset', `must be a whole number from 0; got ${show(offset)}.`);
    const limit = o.limit === undefined ? LIST_DEFAULT : check.count(o.limit, 'options.limit');
    if (limit > LIST_MAX) check.invalid('options.limit', `must be at most ${LIST_MAX}; got ${limit}.`);
    return { status, offset, limit };
  }

  async list(options?: { status?: 'pending' | 'decided'; offset?: number; limit?: number }): Promise<GrantRequest[]> {
    const check = new Checker('limits.requests.list');
    const { status, offset, limit } = this.#page(check, options);
    return this.#within(check, async (store, bound) => {
      const now = Date.now();
      const page = (of: 'pending' | 'decided', from: number, n: number) => bound.race(store.page(of, from, n, now));
      if (status !== undefined) return this.#visible((await page(status, offset, limit)).values, now);
      const pending = await page('pending', offset, limit);
      const listed = this.#visible(pending.values, now);
      if (listed.length >= limit) return listed;
      const decided = await page('decided', Math.max(offset - pending.total, 0), limit - listed.length);
      return [...listed, ...this.#visible(decided.values, now)];
    });
  }

  async counts(): Promise<{ pending: number; decided: number }> {
    const now = Date.now();
    const [pending, decided] = await this.#within(new Checker('limits.requests.counts'), (store, bound) =>
      bound.race(Promise.all([store.page('pending', 0, 0, now), store.page('decided', 0, 0, now)])),
    );
    return { pending: pending.total, decided: decided.total };
  }

  async find(client: unknown, options?: { limit?: number }): Promise<GrantRequest[]> {
    const check = new Checker('limits.requests.find');
    const { key } = this.#parts.keyOf(check, client);
    const { limit } = this.#page(check, options);
    const address = addressOfKey(key);
    const [by, value] = address === undefined ? ['key', key] : ['network', placeOf(address, this.#ipv6Subnet).network];
    const found = await this.#within(check, (store, bound) =>
      bound.race(store.find(by as 'key' | 'network', value, limit)),
    );
    return this.#visible(found, Date.now());
  }

  /** A pending request decided once: `write` changes it only while the store holds the text read. */
  #decide(
    check: Checker,
    id: unknown,
    decide: (record: StoredGrantRequest) => StoredGrantRequest,
    write: (
      record: StoredGrantRequest,
      put: RequestPut,
      store: GrantRequestStore,
      bound: CallBound,
    ) => Promise<unknown>,
  ): Promise<GrantRequest> {
    if (typeof id !== 'string' || id === '') check.invalid('id', `must be a request's id; got ${show(id)}.`);
    return this.#within(check, async (store, bound) => {
      const json = await bound.race(store.get(id));
      const record = parseRequest(json);
      if (!record || json === undefined || requestEnd(record) <= Date.now())
        return check.invalid('id', `is no request's id; got ${show(id)}.`);
      if (record.status !== 'pending') check.invalid('id', `names a request already ${record.status}.`);
      const decided = decide(record);
      const value = JSON.stringify(withoutSeq(decided));
      const put = { id: record.id, value, expected: json, meta: metaOf(decided), now: Date.now() };
      if ((await write(record, put, store, bound)) === undefined)
        check.invalid('id', 'names a request another operator decided meanwhile.');
      return publicOf(decided);
    });
  }

  /** The decision and the grant are one change of the store: both, or neither. */
  async approve(
    id: string,
    grant: Grant,
    options?: { until?: Date | number; note?: string; by?: string },
  ): Promise<GrantRequest> {
    const check: Checker = new Checker('limits.requests.approve');
    const checked = this.#parts.checkGrant(check, grant, 'grant');
    const until = options?.until instanceof Date ? options.until.getTime() : (options?.until ?? null);
    const decidedBy = checkName(check, options?.by, 'options.by') ?? null;
    return this.#decide(
      check,
      id,
      (record) => ({ ...record, status: 'approved', decidedAt: Date.now(), granted: checked, until, decidedBy }),
      async (record, decision) => {
        const given = { until: until ?? undefined, note: options?.note ?? `request ${record.id}`, by: options?.by };
        const client = { key: record.key };
        return (await grantClient(this.#parts, check, client, checked, given, record.tokenEnd, decision)).request;
      },
    );
  }

  async decline(id: string, reason: string, options?: { by?: string }): Promise<GrantRequest> {
    const check: Checker = new Checker('limits.requests.decline');
    const answer = checkText(check, reason, 'reason', LONGEST_REASON, true);
    const decidedBy = byOption(check, options) ?? null;
    return this.#decide(
      check,
      id,
      (record) => ({ ...record, status: 'declined', decidedAt: Date.now(), answer, decidedBy }),
      (_, { id: of, value, expected, meta, now }, store, bound) => {
        const put = store.put(of, value, expected, meta, now, bound.applyBy);
        return bound.race(put, (late) => {
          if (late !== undefined) this.#parts.calls.lateChange(bound);
        });
      },
    );
  }
}
