// The public types of listingLimits(): its options, what it tells handlers and hooks, the middleware it returns, and
// what it observes (a client's usage, the last hour of traffic).
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { HeaderSyntax } from '../contract/headers.js';
import type { Store } from '../stores/store.js';
import type { WindowKind } from '../contract/limit.js';
import type { ClientKind } from '../contract/keys.js';
import type {
  ActiveBan,
  ActiveGrant,
  ChangeEvent,
  ClientRef,
  ForeignEntry,
  Grant,
  GrantRequest,
  GrantRequests,
  LostRecord,
} from '../records/types.js';

/** What `req.rateLimit` and the `handler` option are told about a counted request. */
export interface RateLimitInfo {
  /** The endpoint's name, `<METHOD> <path>` as in the table, e.g. `GET /v1/bots/:id`. */
  readonly endpoint: string;
  /** Requests allowed per window on this endpoint (of several limits, the most restrictive one's). */
  readonly limit: number;
  /** Requests left in the current window after this one (0 when refused). */
  readonly remaining: number;
  /** When a request is freed: the window's end, or when the oldest request leaves a sliding window. */
  readonly resetTime: Date;
}

/** Answers a request over the limit instead of the default 429, headers set; what it throws goes to `next(err)`. */
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
  /** Ban an IP address that presents more than this many distinct Authorization values... Default: off. */
  readonly tokensPerIp?: number;
  /** ...within this many milliseconds. Default: `within`. */
  readonly tokensWithin?: number;
  /** Where a banned client is refused: every request through the middleware, or the table's. Default: `'site'`. */
  readonly scope?: 'site' | 'table';
}

/** What `onBan` is told. */
export interface BanInfo {
  /** The banned client's key (`t:<hash>`, `ip:<address>` or a custom key): pass it to `unban()`. */
  readonly key: string;
  /** `'ip'` for a ban of an address (token rotation), else how the banned client was identified. */
  readonly kind: ClientKind;
  /** `'limit'`: refused `after` times (the client is banned); `'token-rotation'`: too many tokens (its address). */
  readonly reason: 'limit' | 'token-rotation';
  /** When the ban ends: the instant of the 403 body's `bannedUntil`. */
  readonly until: Date;
  /** True in shadow mode: nothing was banned; this is who would have been. */
  readonly shadow: boolean;
}

/** Called when a client is banned (or, in shadow mode, would be). Sync or async; its errors go to `onError`. */
export type OnBan = (info: BanInfo, req: Request) => unknown;

/** Finds the grant of a client, or undefined for none. Answers are cached for `cacheMs` per client `key`. */
export type GrantLookup = (
  client: {
    /** The client's key, as `onLimit` and `onBan` report it. */
    readonly key: string;
    /** The Authorization value that identifies the client; undefined for one `authenticate` refused. */
    readonly token: string | undefined;
    /** `req.ip`. */
    readonly ip: string | undefined;
  },
  req: Request,
) => Grant | undefined | Promise<Grant | undefined>;

/** Grants by Authorization value or IP address (matched as clients are counted), or a lookup function. */
export type Grants = Readonly<Record<string, Grant>> | GrantLookup;

/** What the package needs of a prom-client `Registry` (v14 or later); prom-client itself is never loaded. */
export interface MetricsRegistry {
  registerMetric(metric: never): void;
}

/** Options of {@link listingLimits}. */
export interface ListingLimitsOptions {
  /** Where counters live; one store per middleware. Default: `memoryStore()`. */
  store?: Store;
  /**
   * `'fixed'` windows start with a client's first request; `'sliding'`: at most `limit` in any `windowMs` (limits up to
   * 10,000), with `memoryStore()` or `redisStore()`, as are several rows per endpoint. Default: `'fixed'`.
   */
  window?: WindowKind;
  /**
   * The client a request is counted for: a non-empty string, sync or async. Default: a SHA-256 hash of a non-empty
   * `Authorization` value, else `req.ip` (IPv6 grouped by `ipv6Subnet`).
   */
  key?: (req: Request) => string | Promise<string>;
  /** Requests for which it returns true are neither counted nor given headers. Sync or async. Default: none skipped. */
  skip?: (req: Request) => boolean | Promise<boolean>;
  /**
   * The `RateLimit`, `RateLimit-Policy` and legacy `X-RateLimit-*` headers: `'draft-10'` (or `true`,
   * `"GET /v1/bots";r=24;t=60`), `'draft-7'` or `'draft-8'` as express-rate-limit's `standardHeaders` writes them, or
   * `false` for none. `Retry-After` is sent on every default 429 regardless. Default: `true` (`'draft-10'`).
   */
  headers?: boolean | HeaderSyntax;
  /** Answers a request over the limit instead of the default JSON 429. Default: the JSON 429 of the contract. */
  handler?: LimitHandler;
  /** The prefix that groups IPv6 clients counted by IP; `false` counts each address alone. Default: `64`. */
  ipv6Subnet?: number | false;
  /** Whether an Authorization value is a real credential, cached for `cacheMs`. Not with `key`. Default: all are. */
  authenticate?: Authenticate;
  /** A token `authenticate` refuses: `'ip'` counts the request by IP, `'reject'` answers 401. Default: `'ip'`. */
  invalidToken?: 'ip' | 'reject';
  /** How long `authenticate` verdicts and `grants` lookups are cached, in milliseconds. Default: `60000`. */
  cacheMs?: number;
  /** Bans for circumventing the limits (rule 5); a banned client gets 403. Default: no automatic bans. */
  ban?: BanOptions;
  /** Called when a client is banned, e.g. to log it or to keep it elsewhere. Default: none. */
  onBan?: OnBan;
  /** Extended limits for approved clients (rule 6), by token or IP, or a lookup cached for `cacheMs`. Default: none. */
  grants?: Grants;
  /** `'shadow'` counts and sets headers, but refuses and bans nothing (events say `shadow`). Default: `'enforce'`. */
  mode?: 'enforce' | 'shadow';
  /** Called on every request over the limit (in shadow mode too). Its errors go to `onError`. Default: none. */
  onLimit?: (event: LimitEvent, req: Request) => unknown;
  /** Called on each change of bans, grants and counters this instance makes (`req` for a rule's ban). Default: none. */
  onChange?: (event: ChangeEvent, req: Request | undefined) => unknown;
  /**
   * Called once per grant request this instance files (`requests.file()`, the contact page), as operators list it:
   * never its token. Sync or async; the filing never waits for it, and its errors go to `onError`. Default: none.
   */
  onRequestFiled?: (request: GrantRequest) => unknown;
  /** A prom-client (14 or later) `Registry` of its own for the `listing_limits_*` metrics. Default: no metrics. */
  metrics?: MetricsRegistry;
  /**
   * Receives the hooks' errors, a `RuntimeStateError` for each problem of the store's runtime state, and a
   * `ListingLimitsWarning` for each mistake in the setup; `req` is undefined without a request. Default: a process
   * warning with code `LISTING_LIMITS_HOOK_ERROR`.
   */
  // A method signature, so that a function written for `req: Request` before onChange existed still fits.
  onError?(error: unknown, req: Request | undefined): void;
}

/**
 * The middleware, with the means to change bans and grants at runtime, on every instance sharing the store. Bad input
 * throws a `ListingLimitsError` naming the field (`ERR_UNSUPPORTED_STORE` with a store that keeps no runtime state).
 */
export interface ListingLimitsMiddleware extends RequestHandler {
  /**
   * Bans a client for `duration` milliseconds (whole seconds, at most one year). Resolves true. `by`, here and in
   * the other changes: the operator's name (1 to 64 letters, digits or `_.@-`), which the ban, its change and
   * `onChange`'s event record as `operator`.
   */
  ban(
    client: ClientRef,
    options: { readonly duration: number; readonly reason?: string; readonly by?: string },
  ): Promise<boolean>;
  /** Lifts the bans of a client (or `onBan` key) and forgets what led to them. Resolves whether one was in force. */
  unban(client: ClientRef | string, options?: { readonly by?: string }): Promise<boolean>;
  /** The bans in force, the rule's and the operators', as the store has them now. */
  bans(): Promise<ActiveBan[]>;
  /** Gives a client a grant, which wins over the `grants` option, until `until` (at most a year) or revoked. */
  grant(
    client: ClientRef,
    grant: Grant,
    options?: { readonly until?: Date | number; readonly note?: string; readonly by?: string },
  ): Promise<boolean>;
  /** Takes back a grant made with `grant()`. Resolves true when there was one. */
  revoke(client: ClientRef, options?: { readonly by?: string }): Promise<boolean>;
  /** The active grants made with `grant()`. */
  grants(): Promise<ActiveGrant[]>;
  /** The changes of bans, grants and counters, newest first, at most the last 1000: since a time, at most `limit`. */
  history(options?: { readonly since?: Date | number; readonly limit?: number }): Promise<ChangeEvent[]>;
  /** The operators' bans and grants the store lost, oldest loss first. */
  lost(): Promise<LostRecord[]>;
  /** Applies a lost record again, as it was, until its end. Resolves false when it has ended or is gone. */
  restoreLost(id: string, options?: { readonly by?: string }): Promise<boolean>;
  /** Forgets a lost record. Resolves whether there was one. */
  dismissLost(id: string): Promise<boolean>;
  /** The entries of the store's runtime state that this version skips, records first, then the history's. */
  foreign(): Promise<ForeignEntry[]>;
  /** Removes an entry `foreign()` listed, if it is still as listed. Resolves whether it was removed. */
  removeForeign(id: string): Promise<boolean>;
  /** Stops reading bans and grants from the store in the background (the Redis store's refresh). */
  close(): void;
  /** The client's counters on every limit of every endpoint (of its grant's, if known), read without counting. */
  usage(client: ClientRef): Promise<EndpointUsage[]>;
  /**
   * Clears the client's counters (its grants' too), on every endpoint or one. Resolves whether one had a count. The
   * history records it (action `'reset'`), and `onChange` is told. `by`: as `ban()`'s. Default: no operator named.
   */
  reset(client: ClientRef, endpoint?: string, options?: { readonly by?: string }): Promise<boolean>;
  /** The grant requests of rule 6, in the store's state. */
  readonly requests: GrantRequests;
  /**
   * The last hour of requests, per endpoint and by refused client. With the Redis store, every instance's that shares
   * it, as this one last read it (each adds its counts every `trafficIntervalMs`), with this one's since. Otherwise
   * this process's, counted from the first call on.
   */
  traffic(): TrafficSummary;
}

/** A client's state on one limit of one endpoint, as `usage()` reads it without counting. */
export interface EndpointUsage {
  /** The table's endpoint, `<METHOD> <path>`. */
  readonly endpoint: string;
  /** The endpoint's name, or its grant's variant (`GET /v1/bots/:id (x10)`); undefined for an unlimited client. */
  readonly counter: string | undefined;
  /** Requests allowed per window (`Infinity` with removal of limits). */
  readonly limit: number;
  readonly windowMs: number;
  /** Requests counted in the window now. */
  readonly used: number;
  /** Requests left in the window now: `limit - used`. */
  readonly remaining: number;
  /** When the window frees a request, as `req.rateLimit.resetTime`; undefined when none is counted. */
  readonly resetTime: Date | undefined;
}

/** Requests of one minute: allowed, and refused (429 or 403). */
export interface TrafficMinute {
  /** When the minute starts (a whole minute, UTC). */
  readonly at: Date;
  readonly allowed: number;
  readonly refused: number;
}

/** The last hour of requests through one middleware, as the operator's page shows it. */
export interface TrafficSummary {
  /** Per endpoint of the table (`(none)`: banned requests that matched no row), in the hour and minute by minute. */
  readonly endpoints: readonly {
    readonly endpoint: string;
    readonly allowed: number;
    readonly refused: number;
    readonly minutes: readonly TrafficMinute[];
  }[];
  /** The clients refused most often (429 or 403), by key, most first. */
  readonly refused: readonly { readonly key: string; readonly count: number }[];
  /** Every endpoint together: 60 minutes, oldest first, the last one the minute under way. */
  readonly minutes: readonly TrafficMinute[];
  /**
   * The instances counted: those that added their counts to the shared store within their last three intervals.
   * Undefined when the summary is this process's alone (the memory store, or before the first read).
   */
  readonly instances?: number | undefined;
}
