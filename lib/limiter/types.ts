// The public types of listingLimits(): its options, what it tells handlers and hooks, and the middleware it returns.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { HeaderSyntax } from '../contract/headers.js';
import type { EndpointRow } from '../contract/listings.js';
import type { MetricsRegistry } from './observe/metrics.js';
import type { Store, WindowKind } from '../stores/store.js';

/** How a client was identified. */
export type ClientKind = 'token' | 'ip' | 'custom';

/** What `req.rateLimit` and the `handler` option are told about a counted request. */
export interface RateLimitInfo {
  /** The endpoint's name, `<METHOD> <path>` as in the table, e.g. `GET /v1/bots/:id`. */
  readonly endpoint: string;
  /** Requests allowed per window on this endpoint (of several limits, the most restrictive one's). */
  readonly limit: number;
  /** Requests left in the current window after this one (0 when refused). */
  readonly remaining: number;
  /**
   * When a request is freed: the end of the window (fixed windows), or when the oldest request counted leaves the
   * window (sliding windows).
   */
  readonly resetTime: Date;
}

/**
 * Answers a request that is over the limit, instead of the default 429. Headers are already set. Sync or async:
 * an error it throws or rejects with goes to `next(err)`.
 */
export type LimitHandler = (
  req: Request,
  res: Response,
  next: NextFunction,
  info: RateLimitInfo & { readonly retryAfter: number },
) => unknown;

/** What `onLimit` is told about a request over the limit. */
export interface LimitEvent extends RateLimitInfo {
  /** Seconds until the window ends, as sent in Retry-After. */
  readonly retryAfter: number;
  /** How the client was identified, and its storage key. */
  readonly client: { readonly kind: ClientKind; readonly key: string };
  /** True in shadow mode: the request was let through. */
  readonly shadow: boolean;
}

/** Decides whether an `Authorization` value is a real credential. Sync or async. */
export type Authenticate = (token: string, req: Request) => boolean | Promise<boolean>;

/** When a client is banned (rule 5). Durations in milliseconds, whole seconds, at most `MAX_DURATION_MS`. */
export interface BanOptions {
  /** Ban a client that is refused with 429 this many times... */
  readonly after: number;
  /** ...within this many milliseconds. */
  readonly within: number;
  /** How long a ban lasts, in milliseconds. */
  readonly duration: number;
  /**
   * Ban an IP address that presents more than this many distinct Authorization values (rotating tokens)...
   * Default: off.
   */
  readonly tokensPerIp?: number;
  /** ...within this many milliseconds. Default: `within`. */
  readonly tokensWithin?: number;
  /**
   * Where a banned client is refused: `'site'`, on every request that passes through the middleware, table endpoint
   * or not; `'table'`, on the endpoints of the table only. Default: `'site'`.
   */
  readonly scope?: 'site' | 'table';
}

/** What `onBan` is told. */
export interface BanInfo {
  /** The banned client's key (`t:<hash>`, `ip:<address>` or a custom key): pass it to `unban()`. */
  readonly key: string;
  /** `'ip'` for a ban of an address (token rotation), else how the banned client was identified. */
  readonly kind: ClientKind;
  /**
   * `'limit'`: the client was refused `after` times within `within` (the client is banned);
   * `'token-rotation'`: its address presented more than `tokensPerIp` distinct tokens (the address is banned).
   */
  readonly reason: 'limit' | 'token-rotation';
  /** When the ban ends: the instant of the 403 body's `bannedUntil`. */
  readonly until: Date;
  /** True in shadow mode: nothing was banned; this is who would have been. */
  readonly shadow: boolean;
}

/** Called when a client is banned (or, in shadow mode, would be). Sync or async; its errors go to `onError`. */
export type OnBan = (info: BanInfo, req: Request) => unknown;

/**
 * What an approved client gets instead of the contract's limits: `'unlimited'`; `{ multiplier }`, every limit
 * multiplied (computed exactly in decimal, rounded down, at least 1); or `{ rows }`, rows that replace the table's
 * rows of the same method and path (the others keep the table's limits).
 */
export type Grant = 'unlimited' | { readonly multiplier: number } | { readonly rows: readonly EndpointRow[] };

/** Finds the grant of a client, or undefined for none. Answers are cached for `cacheMs` per client `key`. */
export type GrantLookup = (
  client: {
    /** The client's key, as `onLimit` and `onBan` report it. */
    readonly key: string;
    /**
     * The Authorization value, when there was one and it identifies the client: undefined for a token that
     * `authenticate` refused, which is counted by its address.
     */
    readonly token: string | undefined;
    /** `req.ip`. */
    readonly ip: string | undefined;
  },
  req: Request,
) => Grant | undefined | Promise<Grant | undefined>;

/**
 * Grants by Authorization value or by IP address, or a lookup function. IP addresses are matched the way clients
 * are counted: IPv4-mapped IPv6 addresses as IPv4, other IPv6 addresses by their `ipv6Subnet` prefix.
 */
export type Grants = Readonly<Record<string, Grant>> | GrantLookup;

/**
 * A client as an operator knows it: `{ token }`, its Authorization value (hashed at once, never kept); `{ ip }`, its
 * address (grouped as counting groups it; a ban of an address refuses every request from it); or `{ key }`, its
 * key as `onBan` and `onLimit` report it.
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
}

/** An active grant made with `grant()`, as `grants()` lists it. */
export interface ActiveGrant {
  readonly key: string;
  readonly grant: Grant;
  readonly since: Date;
  /** When the grant ends; undefined for a grant until revoked. */
  readonly until: Date | undefined;
  readonly note: string | undefined;
}

/** A change of bans or grants, as `history()` lists it and `onChange` is told. */
export interface ChangeEvent {
  readonly action: 'ban' | 'unban' | 'grant' | 'revoke';
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
}

/**
 * An entry of the store's runtime state that no instance of this version applies: written by something else, or by
 * another version, and not a valid record or history entry here. Skipped, told to `onError` once, and listed by
 * `foreign()` until removed.
 */
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

/**
 * An operator's ban or grant that an instance knew and the store lost (a restart without persistence, a flush, a
 * failover): never applied again by itself, kept for an operator to restore or dismiss until it would have ended.
 */
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
  /**
   * The requester's address (the contact page gives `req.ip`): only its network is kept, and a network may have
   * only a few requests pending. Without it, only the token's are limited.
   */
  readonly ip?: string;
}

/** A grant request, as operators list it and its requester checks it. */
export interface GrantRequest {
  /** The id the requester is given, to check the request's status with its token. */
  readonly id: string;
  /** The key of the client (`t:<hash>`), never the token. */
  readonly key: string;
  /**
   * The network it was filed from (`ip:203.0.113.0/24`, `ip:2001:db8:1:2::/64`), never the address itself; undefined
   * for a request filed without an address.
   */
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
}

/**
 * The grant requests of rule 6, kept in the store's runtime state (so every instance sees them). Bad input throws a
 * `ListingLimitsError` naming the field; a custom store without runtime state throws one with code
 * `ERR_UNSUPPORTED_STORE`. A pending request no operator decides is dropped after 30 days, a decided one 30 days
 * after its decision.
 */
export interface GrantRequests {
  /** Whether the store keeps grant requests (the memory and Redis stores do). */
  readonly supported: boolean;
  /** The rows of the table, which a request for specific endpoints names. */
  readonly endpoints: readonly EndpointRow[];
  /**
   * Files a pending request. A client key may have 2 pending at once, a network 3 (`ERR_TOO_MANY_PENDING`); with
   * 10,000 kept, an ended one is dropped to make room, else the oldest of the group (IPv6 /48, IPv4 /16) that has the
   * most.
   */
  file(input: GrantRequestInput): Promise<GrantRequest>;
  /** A request, only for the token it was filed with; else undefined. */
  status(id: string, token: string): Promise<GrantRequest | undefined>;
  /** A request by its id, for operators; else undefined. */
  get(id: string): Promise<GrantRequest | undefined>;
  /**
   * A page of the requests: pending ones (in the order they were filed) then decided ones (newest decision first),
   * or those of one `status`; from `offset` (default 0), at most `limit` (default 50, at most 1000).
   */
  list(options?: {
    readonly status?: 'pending' | 'decided';
    readonly offset?: number;
    readonly limit?: number;
  }): Promise<GrantRequest[]>;
  /** How many requests are pending, and how many decided ones are kept. */
  counts(): Promise<{ pending: number; decided: number }>;
  /**
   * The requests of a client, newest change first, at most `limit` (default 50, at most 1000): of its token for
   * `{ token }` or a `t:` key, of its network for `{ ip }` or an `ip:` key.
   */
  find(client: ClientRef, options?: { readonly limit?: number }): Promise<GrantRequest[]>;
  /** Approves a pending request: its client is given `grant` until `until` (or until revoked). */
  approve(id: string, grant: Grant, options?: { until?: Date | number; note?: string }): Promise<GrantRequest>;
  /** Declines a pending request, with the reason its requester sees. */
  decline(id: string, reason: string): Promise<GrantRequest>;
}

/**
 * A client's state on one limit of one endpoint, as `usage()` reads it: without counting a request, on the counter
 * it counts on now.
 */
export interface EndpointUsage {
  /** The table's endpoint, `<METHOD> <path>`. */
  readonly endpoint: string;
  /**
   * The counter the client counts on: the endpoint's name, or its grant's variant (`GET /v1/bots/:id (x10)`);
   * undefined for a client granted removal of limits, which is not counted.
   */
  readonly counter: string | undefined;
  /** Requests allowed per window (`Infinity` with removal of limits). */
  readonly limit: number;
  readonly windowMs: number;
  /** Requests counted in the window now. */
  readonly used: number;
  /** Requests left in the window now: `limit - used`. */
  readonly remaining: number;
  /**
   * When the window frees a request: the end of a fixed window, or when the oldest request counted leaves a sliding
   * one; undefined when none is counted.
   */
  readonly resetTime: Date | undefined;
}

/** The last hour of requests through one middleware in this process, as the operator's page shows it. */
export interface TrafficSummary {
  /** Allowed and refused requests per endpoint of the table (`(none)`: banned requests that matched no row). */
  readonly endpoints: readonly { readonly endpoint: string; readonly allowed: number; readonly refused: number }[];
  /** The clients refused most often (429 or 403), by key, most first. */
  readonly refused: readonly { readonly key: string; readonly count: number }[];
}

/** Options of {@link listingLimits}. */
export interface ListingLimitsOptions {
  /**
   * Where counters live: a factory giving each counter its rate-limiter-flexible limiter.
   * Use one store per middleware. Default: `memoryStore()`.
   */
  store?: Store;
  /**
   * How windows are counted. `'fixed'`: a client's window on an endpoint starts with its first request and lasts
   * `windowMs`, so up to twice the limit can pass within one window's length across two windows. `'sliding'`: at most
   * `limit` requests in any interval of `windowMs`, exactly (each request is kept until it leaves the window; limits
   * up to 10,000 per row). Sliding windows and tables with several rows per endpoint need a store with a `limits`
   * factory (`memoryStore()`, `redisStore()`). Default: `'fixed'`.
   */
  window?: WindowKind;
  /**
   * The client a request is counted for. Sync or async; must return a non-empty string, used as given.
   * Default: a SHA-256 hash of the `Authorization` value when present and not empty, else `req.ip`
   * (IPv6 grouped by `ipv6Subnet`).
   */
  key?: (req: Request) => string | Promise<string>;
  /** Requests for which it returns true are neither counted nor given headers. Sync or async. Default: none skipped. */
  skip?: (req: Request) => boolean | Promise<boolean>;
  /**
   * Whether counted responses carry the `RateLimit`, `RateLimit-Policy` and `X-RateLimit-*` headers, and the syntax
   * of the IETF `RateLimit` and `RateLimit-Policy` fields: `'draft-10'` (or `true`) as
   * draft-ietf-httpapi-ratelimit-headers-10 writes them (`"GET /v1/bots";r=24;t=60`); `'draft-7'` or `'draft-8'`
   * exactly as express-rate-limit's `standardHeaders` of the same name writes them (`limit=25, remaining=24,
   * reset=60`, which its ratelimit-header-parser reads; `"GET /v1/bots"; r=24; t=60` with a partition key, a hash of
   * the client's key, in the policy); `false` for none. The legacy `X-RateLimit-*` fields come with each draft.
   * `Retry-After` is sent on every default 429 regardless. Default: `true` (`'draft-10'`).
   */
  headers?: boolean | HeaderSyntax;
  /** Answers a request over the limit instead of the default JSON 429. Default: the JSON 429 of the contract. */
  handler?: LimitHandler;
  /**
   * Prefix length that groups IPv6 clients counted by IP (`64` counts a whole /64 as one client);
   * `false` counts every address alone. IPv4 and IPv4-mapped addresses are always counted alone. Default: `64`.
   */
  ipv6Subnet?: number | false;
  /**
   * Decides whether an Authorization value is a real credential (sync or async), so that invented tokens
   * cannot each get a fresh counter. Verdicts are cached for `cacheMs`, keyed by the token's hash, and concurrent
   * requests with one token share one call. A token it refuses is counted by IP, or answered 401 with
   * `invalidToken: 'reject'`. Cannot be combined with `key`. Default: every token is taken as given.
   */
  authenticate?: Authenticate;
  /**
   * What happens to a token that `authenticate` refuses: `'ip'` counts the request by IP; `'reject'` answers 401.
   * Default: `'ip'`.
   */
  invalidToken?: 'ip' | 'reject';
  /** How long `authenticate` verdicts and `grants` lookups are cached, in milliseconds. Default: `60000`. */
  cacheMs?: number;
  /**
   * Bans for circumventing the limits (rule 5): a client refused `after` times within `within` ms is banned
   * for `duration` ms, and, with `tokensPerIp`, an IP address that presents more distinct tokens than that
   * within `tokensWithin` ms is banned too. A banned client gets 403 on every request through the middleware
   * (`scope: 'site'`) or on the endpoints of the table (`scope: 'table'`). Default: no automatic bans.
   */
  ban?: BanOptions;
  /** Called when a client is banned, e.g. to log it or to keep it elsewhere. Default: none. */
  onBan?: OnBan;
  /**
   * Extended limits for approved clients (rule 6): by Authorization value or by IP address, a map of grants
   * or a lookup function (sync or async, cached for `cacheMs`). Granted clients count on counters of their
   * own and see their own limits in the headers. Default: none.
   */
  grants?: Grants;
  /**
   * `'enforce'` refuses requests over the limit; `'shadow'` counts and sets headers but lets every request
   * through (no 429, no 403, nothing banned), reporting would-be refusals to `onLimit` and would-be bans to
   * `onBan` with `shadow: true`. Default: `'enforce'`.
   */
  mode?: 'enforce' | 'shadow';
  /**
   * Called on every request over the limit (and every would-be refusal in shadow mode), for logs and metrics.
   * Sync or async; its errors go to `onError`. Default: none.
   */
  onLimit?: (event: LimitEvent, req: Request) => unknown;
  /**
   * Called on every change of bans and grants this instance makes (an automatic ban, and every `ban()`, `unban()`,
   * `grant()` and `revoke()` that changed something), e.g. to ship it to your logs. `req` is the request that
   * caused an automatic ban, else undefined. Sync or async; its errors go to `onError`. Default: none.
   */
  onChange?: (event: ChangeEvent, req: Request | undefined) => unknown;
  /**
   * A prom-client `Registry` (prom-client 14 or later, which you install) on which to register the metrics:
   * `listing_limits_requests_total{endpoint,outcome}`, `listing_limits_active_bans`, `listing_limits_active_grants`,
   * `listing_limits_store_duration_seconds` and `listing_limits_refusal_cache_hits_total`. One Registry per
   * middleware. Default: no metrics.
   */
  metrics?: MetricsRegistry;
  /**
   * Receives the errors of `onLimit`, `onBan` and `onChange` (thrown or rejected), which never change the answer of
   * the request, and a `RuntimeStateError` for each foreign entry of the store's runtime state, for a state the store
   * lost, and for a rule's ban the store could not take; `req` is undefined for a change made by a method call.
   * Default: each is emitted as a process warning with code `LISTING_LIMITS_HOOK_ERROR`.
   */
  // A method signature, so that a function written for `req: Request` before onChange existed still fits.
  onError?(error: unknown, req: Request | undefined): void;
}

/**
 * The middleware, with the means to change bans and grants at runtime. Changes are kept in the store's runtime
 * state, so every instance sharing the store applies them (within a second with the Redis store). Bad input throws
 * a `ListingLimitsError` naming the field; with a custom store that keeps no runtime state, `ban()`, `grant()` and
 * `revoke()` throw one with code `ERR_UNSUPPORTED_STORE`.
 */
export interface ListingLimitsMiddleware extends RequestHandler {
  /** Bans a client for `duration` milliseconds (whole seconds, at most one year). Resolves true. */
  ban(client: ClientRef, options: { readonly duration: number; readonly reason?: string }): Promise<boolean>;
  /**
   * Lifts the bans of a client, or of a key as `onBan` reported it (the client's own and, for `ip:` keys, the
   * address's), and forgets what led to them (its refusals, its address's token count), on every instance. Resolves
   * true when the store had a ban of it in force (or this instance had one the store could not take), false anywhere
   * else.
   */
  unban(client: ClientRef | string): Promise<boolean>;
  /** The bans in force, the rule's and the operators', as the store has them now. */
  bans(): Promise<ActiveBan[]>;
  /**
   * Gives a client a grant, which wins over the `grants` option, until `until` (a Date or epoch ms, at most one year
   * ahead) or until revoked. Resolves true.
   */
  grant(
    client: ClientRef,
    grant: Grant,
    options?: { readonly until?: Date | number; readonly note?: string },
  ): Promise<boolean>;
  /** Takes back a grant made with `grant()`. Resolves true when there was one. */
  revoke(client: ClientRef): Promise<boolean>;
  /** The active grants made with `grant()`. */
  grants(): Promise<ActiveGrant[]>;
  /** The changes of bans and grants, newest first, at most the last 1000: since a time, at most `limit`. */
  history(options?: { readonly since?: Date | number; readonly limit?: number }): Promise<ChangeEvent[]>;
  /**
   * The operators' bans and grants the store lost (see "When the store loses its data" in the README), oldest loss
   * first.
   */
  lost(): Promise<LostRecord[]>;
  /** Applies a lost record again, as it was, until its end. Resolves false when it has ended or is gone. */
  restoreLost(id: string): Promise<boolean>;
  /** Forgets a lost record. Resolves whether there was one. */
  dismissLost(id: string): Promise<boolean>;
  /** The entries of the store's runtime state that this version skips, records first, then the history's. */
  foreign(): Promise<ForeignEntry[]>;
  /** Removes an entry `foreign()` listed, if it is still as listed. Resolves whether it was removed. */
  removeForeign(id: string): Promise<boolean>;
  /** Stops reading bans and grants from the store in the background (the Redis store's refresh). */
  close(): void;
  /**
   * The client's counters on every limit of every endpoint, in table order, read without counting: the requests
   * used and left in the window, and when it frees one. A granted client's are those of its grant (a runtime grant,
   * a grant of the `grants` option, or a `grants` function's answer kept for its key).
   */
  usage(client: ClientRef): Promise<EndpointUsage[]>;
  /**
   * Clears the client's counters, on every endpoint or on `endpoint` (`<METHOD> <path>` as in the table), its grants'
   * included; every instance forgets the refusals it remembers of it. Resolves whether one had a request counted.
   */
  reset(client: ClientRef, endpoint?: string): Promise<boolean>;
  /** The grant requests of rule 6, in the store's state. */
  readonly requests: GrantRequests;
  /**
   * The last hour of requests in this process, per endpoint and by refused client. Counting starts at the first
   * call (the operator's page makes it when mounted); until then the request path does not count.
   */
  traffic(): TrafficSummary;
}
