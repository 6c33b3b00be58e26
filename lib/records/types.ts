// The public types of the operators' records: clients as operators name them, grants, bans, grant requests, changes.
import type { ClientKind } from '../contract/keys.js';
import type { EndpointRow } from '../contract/listings.js';

/**
 * What an approved client gets instead of the contract's limits: `'unlimited'`; `{ multiplier }`, every limit
 * multiplied (exactly in decimal, rounded down, at least 1); or `{ rows }`, replacing the table's rows of their paths.
 */
export type Grant = 'unlimited' | { readonly multiplier: number } | { readonly rows: readonly EndpointRow[] };

/**
 * A client as an operator knows it: `{ token }`, its Authorization value (hashed at once, never kept); `{ ip }`, its
 * address (grouped as counting groups it); or `{ key }`, its key as `onBan` and `onLimit` report it.
 */
export type ClientRef = { readonly token: string } | { readonly ip: string } | { readonly key: string };

/** An active ban, as `bans()` lists it. */
export interface ActiveBan {
  /** The banned client's key (`t:<hash>`, `ip:<address>` or a custom key). */
  readonly key: string;
  readonly kind: ClientKind;
  /** `'limit'` or `'token-rotation'` for a rule's ban; the operator's reason (default `'operator'`) otherwise. */
  readonly reason: string;
  readonly since: Date;
  readonly until: Date;
  /** `'rule'` for a ban of the `ban` option, `'operator'` for one made with `ban()`. */
  readonly by: 'rule' | 'operator';
  /** The last 4 characters of the client's token when the ban was made knowing them, for display; else `''`. */
  readonly tokenEnd: string;
  /** The name of the operator who made it, when one was given (`by`); else undefined. */
  readonly operator: string | undefined;
}

/** An active grant made with `grant()`, as `grants()` lists it. */
export interface ActiveGrant {
  readonly key: string;
  readonly grant: Grant;
  readonly since: Date;
  /** When the grant ends; undefined for a grant until revoked. */
  readonly until: Date | undefined;
  readonly note: string | undefined;
  /** As a ban's `tokenEnd`. */
  readonly tokenEnd: string;
  /** As a ban's `operator`. */
  readonly operator: string | undefined;
}

/** A change of bans, grants or a client's counters, as `history()` lists it and `onChange` is told. */
export interface ChangeEvent {
  /** `'reset'`: an operator cleared the client's counters (`reset()`). */
  readonly action: 'ban' | 'unban' | 'grant' | 'revoke' | 'reset';
  /** The client's key (never a token). */
  readonly key: string;
  readonly kind: ClientKind;
  /** `'rule'` for an automatic ban, `'operator'` for a method call. */
  readonly by: 'rule' | 'operator';
  readonly at: Date;
  /** A ban's reason. */
  readonly reason: string | undefined;
  /** When a ban or grant ends. */
  readonly until: Date | undefined;
  /** The grant given. */
  readonly grant: Grant | undefined;
  /** A grant's note. */
  readonly note: string | undefined;
  /** The endpoint whose counters a reset cleared; undefined for every endpoint, and for the other changes. */
  readonly endpoint: string | undefined;
  /** The name of the operator who made the change, when one was given (`by`); else undefined. */
  readonly operator: string | undefined;
}

/** An entry of the store's runtime state this version does not apply: told to `onError` once, listed by `foreign()`. */
export interface ForeignEntry {
  /** What `removeForeign()` takes. */
  readonly id: string;
  /** `'record'`: a field of the records; `'history'`: an entry of the history. */
  readonly place: 'record' | 'history';
  /** The record's field (e.g. `ban:t:…`); undefined for a history entry. */
  readonly field: string | undefined;
  /** The entry as stored, cut to 200 characters. */
  readonly text: string;
  /** Why it is not applied. */
  readonly problem: string;
}

/** An operator's ban or grant the store lost: never applied by itself, kept to restore or dismiss until its end. */
export interface LostRecord {
  /** What `restoreLost()` and `dismissLost()` take: the record's field. */
  readonly id: string;
  readonly kind: 'ban' | 'grant';
  readonly key: string;
  /** When an instance found it lost. */
  readonly lostAt: Date;
  /** The ban, for `kind: 'ban'`. */
  readonly ban: ActiveBan | undefined;
  /** The grant, for `kind: 'grant'`. */
  readonly grant: ActiveGrant | undefined;
}

/** The proof of size that rule 6 asks of a request: a bot's servers and shards, or a server's members, with a link. */
export type GrantProof =
  | { readonly kind: 'bot'; readonly servers: number; readonly shards: number; readonly link: string }
  | { readonly kind: 'server'; readonly members: number; readonly link: string };

/** What a client asks for with `requests.file()` (the contact page fills it from its form). */
export interface GrantRequestInput {
  /** The client's Authorization value: hashed at once, never kept; only its last 4 characters are. */
  readonly token: string;
  /** What is asked: a grant, as `grant()` takes it. */
  readonly ask: Grant;
  readonly proof: GrantProof;
  /** Where the operators answer, e.g. an e-mail address. */
  readonly contact: string;
  readonly reason: string;
  /** The requester's address: only its network is kept, which may have only a few requests pending. */
  readonly ip?: string;
}

/** A grant request, as operators list it and its requester checks it. */
export interface GrantRequest {
  /** The id the requester is given, to check the request's status with its token. */
  readonly id: string;
  /** The key of the client (`t:<hash>`), never the token. */
  readonly key: string;
  /** The network it was filed from (`ip:203.0.113.0/24`), never the address; undefined for none. */
  readonly network: string | undefined;
  /** The token's last 4 characters (none for a token shorter than 12), for display. */
  readonly tokenEnd: string;
  readonly ask: Grant;
  readonly proof: GrantProof;
  readonly contact: string;
  readonly reason: string;
  readonly at: Date;
  readonly status: 'pending' | 'approved' | 'declined';
  readonly decidedAt: Date | undefined;
  /** The grant given, when approved. */
  readonly granted: Grant | undefined;
  /** When the grant given ends; undefined for one until revoked. */
  readonly until: Date | undefined;
  /** Why it was declined, as the requester sees it. */
  readonly answer: string | undefined;
  /** The name of the operator who decided it, when one was given (`by`); never told to its requester. */
  readonly decidedBy: string | undefined;
}

/**
 * The grant requests of rule 6, in the store's runtime state. Bad input throws a `ListingLimitsError` naming the field;
 * a custom store throws `ERR_UNSUPPORTED_STORE`. A request is dropped 30 days after it was filed or decided.
 */
export interface GrantRequests {
  /** Whether the store keeps grant requests (the memory and Redis stores do). */
  readonly supported: boolean;
  /** The rows of the table, which a request for specific endpoints names. */
  readonly endpoints: readonly EndpointRow[];
  /**
   * Files a pending request. A client key may have 2 pending at once, a network 3 (`ERR_TOO_MANY_PENDING`); with 10,000
   * kept, an ended one makes room, else the oldest of the group (IPv6 /48, IPv4 /16) that has the most.
   */
  file(input: GrantRequestInput): Promise<GrantRequest>;
  /** A request, only for the token it was filed with (without `decidedBy`); else undefined. */
  status(id: string, token: string): Promise<GrantRequest | undefined>;
  /** A request by its id, for operators; else undefined. */
  get(id: string): Promise<GrantRequest | undefined>;
  /**
   * Pending requests (in the order they were filed) then decided ones (newest decision first), or those of one
   * `status`; from `offset` (default 0), at most `limit` (default 50, at most 1000).
   */
  list(options?: {
    readonly status?: 'pending' | 'decided';
    readonly offset?: number;
    readonly limit?: number;
  }): Promise<GrantRequest[]>;
  /** How many requests are pending, and how many decided ones are kept. */
  counts(): Promise<{ pending: number; decided: number }>;
  /**
   * A client's requests, newest change first, at most `limit` (default 50, at most 1000): its token's for `{ token }`
   * or a `t:` key, its network's for `{ ip }` or an `ip:` key.
   */
  find(client: ClientRef, options?: { readonly limit?: number }): Promise<GrantRequest[]>;
  /**
   * Approves a pending request: its client is given `grant` until `until` (or until revoked). `by`: the operator's
   * name, which the request (`decidedBy`) and the grant's change record.
   */
  approve(
    id: string,
    grant: Grant,
    options?: { until?: Date | number; note?: string; by?: string },
  ): Promise<GrantRequest>;
  /** Declines a pending request, with the reason its requester sees; `by` as `approve()`'s. */
  decline(id: string, reason: string, options?: { by?: string }): Promise<GrantRequest>;
}
