// Options of listingLimits(): their public type, and their validation into the internal configuration.
import { METHODS } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { closest } from 'fastest-levenshtein';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { type BanOptions, Bans, type OnBan } from './bans.js';
import { type Authenticate, type Client, type ClientKind, compileIdentify, type REJECTED } from './client.js';
import { ListingLimitsError } from './errors.js';
import { compileGrants, type Grant, type Grants, UNLIMITED } from './grants.js';
import { type HeaderTemplate, headerTemplate } from './headers.js';
import { type EndpointRow, type ListingName, listings } from './listings.js';
import { compileMatcher, compilePath } from './match.js';
import { type Endpoint, memoryStore, type Store } from './stores.js';

/** What `req.rateLimit` and the `handler` option are told about a counted request. */
export interface RateLimitInfo {
  /** The endpoint's name, `<METHOD> <path>` as in the table, e.g. `GET /v1/bots/:id`. */
  readonly endpoint: string;
  /** Requests allowed per window on this endpoint. */
  readonly limit: number;
  /** Requests left in the current window after this one (0 when refused). */
  readonly remaining: number;
  /** When the current window ends. */
  readonly resetTime: Date;
}

/** Called instead of the default 429 answer when a request is over the limit. Headers are already set. */
export type LimitHandler = (
  req: Request,
  res: Response,
  next: NextFunction,
  info: RateLimitInfo & { readonly retryAfter: number },
) => void;

/** What `onLimit` is told about a request over the limit. */
export interface LimitEvent extends RateLimitInfo {
  /** Seconds until the window ends, as sent in Retry-After. */
  readonly retryAfter: number;
  /** How the client was identified, and its storage key. */
  readonly client: { readonly kind: ClientKind; readonly key: string };
  /** True in shadow mode: the request was let through. */
  readonly shadow: boolean;
}

/** Options of {@link listingLimits}. */
export interface ListingLimitsOptions {
  /**
   * Where counters live: a factory giving each endpoint its rate-limiter-flexible limiter.
   * Use one store per middleware. Default: `memoryStore()`.
   */
  store?: Store;
  /**
   * The client a request is counted for. Sync or async; must return a non-empty string, used as given.
   * Default: a SHA-256 hash of the `Authorization` value when present and not empty, else `req.ip`
   * (IPv6 grouped by `ipv6Subnet`).
   */
  key?: (req: Request) => string | Promise<string>;
  /** Requests for which it returns true are neither counted nor given headers. Sync or async. Default: none skipped. */
  skip?: (req: Request) => boolean | Promise<boolean>;
  /**
   * Whether counted responses carry the `RateLimit`, `RateLimit-Policy` and `X-RateLimit-*` headers.
   * `Retry-After` is sent on every default 429 regardless. Default: `true`.
   */
  headers?: boolean;
  /** Answers a request that is over the limit, instead of the default JSON 429. Default: the JSON 429 of the contract. */
  handler?: LimitHandler;
  /**
   * Prefix length that groups IPv6 clients counted by IP (`64` counts a whole /64 as one client);
   * `false` counts every address alone. IPv4 and IPv4-mapped addresses are always counted alone. Default: `64`.
   */
  ipv6Subnet?: number | false;
  /**
   * Decides whether an Authorization value is a real credential (sync or async), so that invented tokens
   * cannot each get a fresh counter. Verdicts are cached for `cacheMs`, keyed by the token's hash. A token
   * it refuses is counted by IP, or answered 401 with `invalidToken: 'reject'`. Cannot be combined with `key`.
   * Default: every token is taken as given.
   */
  authenticate?: Authenticate;
  /** What happens to a token that `authenticate` refuses: `'ip'` counts the request by IP; `'reject'` answers 401. Default: `'ip'`. */
  invalidToken?: 'ip' | 'reject';
  /** How long `authenticate` verdicts and `grants` lookups are cached, in milliseconds. Default: `60000`. */
  cacheMs?: number;
  /**
   * Bans for circumventing the limits (rule 5): a client refused `after` times within `within` ms is banned
   * for `duration` ms, and, with `tokensPerIp`, an IP address that presents more distinct tokens than that
   * within `tokensWithin` ms is banned too. A banned client gets 403 on every endpoint of the table.
   * Bans live in the store, so every instance sharing it enforces them. Default: no bans.
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
   * through (no 429, no bans), reporting would-be refusals to `onLimit`. Default: `'enforce'`.
   */
  mode?: 'enforce' | 'shadow';
  /** Called on every request over the limit (and every would-be refusal in shadow mode), for logs and metrics. Default: none. */
  onLimit?: (event: LimitEvent, req: Request) => void;
}

/** An endpoint compiled for the request path: its limiter and precomputed header strings. */
export interface CompiledEndpoint {
  readonly endpoint: Endpoint;
  readonly limiter: RateLimiterAbstract;
  readonly headers: HeaderTemplate;
}

/** Options validated and compiled: everything the request path needs, all fields required. */
export interface Config {
  readonly match: (method: string, path: string) => CompiledEndpoint | undefined;
  readonly identify: (req: Request) => Client | typeof REJECTED | Promise<Client | typeof REJECTED>;
  /** True when `identify` always returns a Client at once: no `key` option, no `authenticate`. */
  readonly syncIdentify: boolean;
  readonly skip: ((req: Request) => boolean | Promise<boolean>) | undefined;
  readonly headers: boolean;
  readonly handler: LimitHandler | undefined;
  readonly bans: Bans | undefined;
  readonly grant: ((client: Client, req: Request, base: CompiledEndpoint) => Promise<CompiledEndpoint | typeof UNLIMITED>) | undefined;
  readonly shadow: boolean;
  readonly onLimit: ListingLimitsOptions['onLimit'];
}

const optionNames = [
  'store',
  'key',
  'skip',
  'headers',
  'handler',
  'ipv6Subnet',
  'authenticate',
  'invalidToken',
  'cacheMs',
  'ban',
  'onBan',
  'grants',
  'mode',
  'onLimit',
] as const;
const banFields = ['after', 'within', 'duration', 'tokensPerIp', 'tokensWithin'] as const;
const rowFields = ['method', 'path', 'limit', 'windowMs'] as const;

/** Throws ERR_UNKNOWN_OPTION for the first key of `value` not in `known`, suggesting the closest known one. */
export function unknownKeys(
  value: object,
  known: readonly string[],
  field: (key: string) => string,
  source = 'listingLimits',
): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw new ListingLimitsError(
        'ERR_UNKNOWN_OPTION',
        field(key),
        `is not an option. Did you mean \`${closest(key, known as string[])}\`?`,
        source,
      );
    }
  }
}

function invalid(field: string, message: string): never {
  throw new ListingLimitsError('ERR_INVALID_OPTION', field, message);
}

function invalidRow(field: string, message: string, source: string): never {
  throw new ListingLimitsError('ERR_INVALID_ROW', field, message, source);
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

function isWholeSeconds(value: unknown): value is number {
  return isPositiveInteger(value) && value % 1000 === 0;
}

function checkRow(row: unknown, at: string, source: string): EndpointRow {
  if (typeof row !== 'object' || row === null) {
    invalidRow(at, 'must be an object { method, path, limit, windowMs }.', source);
  }
  unknownKeys(row, rowFields, (key) => `${at}.${key}`, source);
  const { method, path, limit, windowMs } = row as Record<string, unknown>;
  if (typeof method !== 'string' || !METHODS.includes(method)) {
    invalidRow(
      `${at}.method`,
      `must be an upper-case HTTP method such as "GET"; got ${JSON.stringify(method)}.`,
      source,
    );
  }
  if (method === 'HEAD') {
    invalidRow(`${at}.method`, 'cannot be "HEAD": HEAD requests are counted on the GET row.', source);
  }
  if (typeof path !== 'string' || !/^\/[\x20-\x7e]*$/.test(path)) {
    invalidRow(
      `${at}.path`,
      `must be a path of printable ASCII starting with "/"; got ${JSON.stringify(path)}.`,
      source,
    );
  }
  try {
    compilePath(path);
  } catch (error) {
    invalidRow(`${at}.path`, `is not a valid path-to-regexp path: ${(error as Error).message}`, source);
  }
  if (!isPositiveInteger(limit)) invalidRow(`${at}.limit`, `must be a positive integer; got ${String(limit)}.`, source);
  if (!isWholeSeconds(windowMs)) {
    invalidRow(
      `${at}.windowMs`,
      `must be a positive whole number of seconds in milliseconds (e.g. 15000); got ${String(windowMs)}.`,
      source,
    );
  }
  return { method, path, limit, windowMs };
}

/**
 * Validates a listing: `'A'`, `'B'` or a table of rows. Errors name `field` (and its rows, `field[2].limit`)
 * and open with `source`, the function whose argument it is.
 */
export function checkTable(listing: unknown, field = 'listing', source = 'listingLimits'): readonly EndpointRow[] {
  if (typeof listing === 'string') {
    if (Object.hasOwn(listings, listing)) return listings[listing as ListingName];
    throw new ListingLimitsError(
      'ERR_UNKNOWN_LISTING',
      field,
      `${JSON.stringify(listing)} is not a listing. Use "A", "B" or an array of rows.`,
      source,
    );
  }
  if (!Array.isArray(listing) || listing.length === 0) {
    throw new ListingLimitsError(
      'ERR_UNKNOWN_LISTING',
      field,
      'must be "A", "B" or a non-empty array of rows.',
      source,
    );
  }
  const rows = listing.map((row, i) => checkRow(row, `${field}[${i}]`, source));
  const seen = new Map<string, number>();
  rows.forEach((row, i) => {
    // Matching ignores case, so paths that differ only in case or in parameter names are one row.
    const shape = `${row.method} ${compilePath(row.path).source.toLowerCase()}`;
    const first = seen.get(shape);
    if (first !== undefined) {
      throw new ListingLimitsError(
        'ERR_DUPLICATE_ROW',
        `${field}[${i}]`,
        `repeats ${field}[${first}] (${row.method} ${row.path}): one method and path may have only one row.`,
        source,
      );
    }
    seen.set(shape, i);
  });
  return rows;
}

function checkOptions(options: unknown): ListingLimitsOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null) invalid('options', 'must be an object.');
  unknownKeys(options, optionNames, (key) => `options.${key}`);
  const o = options as ListingLimitsOptions;
  for (const name of ['store', 'key', 'skip', 'handler', 'authenticate', 'onBan', 'onLimit'] as const) {
    if (o[name] !== undefined && typeof o[name] !== 'function') invalid(`options.${name}`, 'must be a function.');
  }
  if (o.headers !== undefined && typeof o.headers !== 'boolean') invalid('options.headers', 'must be true or false.');
  const subnet = o.ipv6Subnet;
  if (subnet !== undefined && subnet !== false && !(Number.isInteger(subnet) && subnet >= 1 && subnet <= 128)) {
    invalid('options.ipv6Subnet', `must be an integer from 1 to 128, or false; got ${String(subnet)}.`);
  }
  if (o.key && o.authenticate) invalid('options.authenticate', 'cannot be combined with options.key: authenticate judges Authorization tokens, which a custom key replaces.');
  if (o.invalidToken !== undefined && o.invalidToken !== 'ip' && o.invalidToken !== 'reject') {
    invalid('options.invalidToken', `must be 'ip' or 'reject'; got ${JSON.stringify(o.invalidToken)}.`);
  }
  if (o.invalidToken && !o.authenticate) invalid('options.invalidToken', 'needs options.authenticate, which decides what is invalid.');
  if (o.cacheMs !== undefined && !isPositiveInteger(o.cacheMs)) invalid('options.cacheMs', `must be a positive integer of milliseconds; got ${String(o.cacheMs)}.`);
  if (o.mode !== undefined && o.mode !== 'enforce' && o.mode !== 'shadow') {
    invalid('options.mode', `must be 'enforce' or 'shadow'; got ${JSON.stringify(o.mode)}.`);
  }
  if (o.ban !== undefined) checkBan(o.ban);
  if (o.onBan && !o.ban) invalid('options.onBan', 'needs options.ban, which decides when a client is banned.');
  if (o.grants !== undefined && typeof o.grants !== 'function' && (typeof o.grants !== 'object' || o.grants === null)) {
    invalid('options.grants', 'must be an object of grants by token or IP, or a lookup function.');
  }
  return o;
}

function checkBan(ban: unknown): void {
  if (typeof ban !== 'object' || ban === null) invalid('options.ban', 'must be an object { after, within, duration }.');
  unknownKeys(ban, banFields, (key) => `options.ban.${key}`);
  const b = ban as Record<string, unknown>;
  if (!isPositiveInteger(b.after)) invalid('options.ban.after', `must be a positive integer; got ${String(b.after)}.`);
  for (const field of ['within', 'duration', 'tokensWithin'] as const) {
    if ((field !== 'tokensWithin' || b[field] !== undefined) && !isWholeSeconds(b[field])) {
      invalid(`options.ban.${field}`, `must be a positive whole number of seconds in milliseconds; got ${String(b[field])}.`);
    }
  }
  if (b.tokensPerIp !== undefined && !isPositiveInteger(b.tokensPerIp)) {
    invalid('options.ban.tokensPerIp', `must be a positive integer; got ${String(b.tokensPerIp)}.`);
  }
  if (b.tokensWithin !== undefined && b.tokensPerIp === undefined) invalid('options.ban.tokensWithin', 'needs options.ban.tokensPerIp.');
}

/** Checks a grant; throws `fail(field, message)`'s error. Replacement rows must replace rows of the table. */
function checkGrant(grant: unknown, at: string, names: ReadonlySet<string>, fail: (field: string, message: string) => never): void {
  if (grant === UNLIMITED) return;
  const keys = typeof grant === 'object' && grant !== null ? Object.keys(grant) : [];
  if (keys.length !== 1 || (keys[0] !== 'multiplier' && keys[0] !== 'rows')) {
    fail(at, `must be 'unlimited', { multiplier } or { rows }; got ${JSON.stringify(grant)}.`);
  }
  const g = grant as { multiplier?: unknown; rows?: unknown };
  if (keys[0] === 'multiplier') {
    if (typeof g.multiplier !== 'number' || !Number.isFinite(g.multiplier) || g.multiplier <= 0) {
      fail(`${at}.multiplier`, `must be a positive number; got ${String(g.multiplier)}.`);
    }
    return;
  }
  if (!Array.isArray(g.rows) || g.rows.length === 0) fail(`${at}.rows`, 'must be a non-empty array of rows.');
  g.rows.forEach((raw: unknown, i: number) => {
    const row = checkRow(raw, `${at}.rows[${i}]`, 'listingLimits');
    if (!names.has(`${row.method} ${row.path}`)) fail(`${at}.rows[${i}]`, `(${row.method} ${row.path}) replaces no row of the table.`);
  });
}

/** Validates the listing and options and compiles everything the request path needs. Throws ListingLimitsError. */
export function configure(listing: unknown, options: unknown): Config {
  const rows = checkTable(listing);
  const o = checkOptions(options);
  const store = o.store ?? memoryStore();
  const routes = rows.map((row) => {
    const endpoint: Endpoint = Object.freeze({ ...row, name: `${row.method} ${row.path}` });
    const limiter = store(endpoint);
    if (typeof limiter !== 'object' || limiter === null || typeof limiter.consume !== 'function') {
      invalid(
        'options.store',
        `returned ${String(limiter)} for ${endpoint.name}; a store must return a rate-limiter-flexible limiter.`,
      );
    }
    const value: CompiledEndpoint = {
      endpoint,
      limiter,
      headers: headerTemplate(endpoint.name, row.limit, row.windowMs),
    };
    return { method: row.method, path: row.path, value };
  });
  const cacheMs = o.cacheMs ?? 60_000;
  const names = new Set(routes.map((route) => route.value.endpoint.name));
  let grant: Config['grant'];
  if (typeof o.grants === 'object') {
    for (const [who, g] of Object.entries(o.grants)) checkGrant(g, `options.grants[${JSON.stringify(who)}]`, names, invalid);
  }
  if (o.grants) {
    const atRequest = (field: string, message: string): never => {
      throw new TypeError(`listingLimits: ${field} ${message}`);
    };
    grant = compileGrants(o.grants, store, cacheMs, (g, at) => checkGrant(g as Grant, at, names, atRequest));
  }
  return {
    match: compileMatcher(routes),
    identify: compileIdentify(
      { key: o.key, authenticate: o.authenticate, cacheMs, ipv6Subnet: o.ipv6Subnet ?? 64 },
      o.invalidToken === 'reject',
    ),
    syncIdentify: !o.key && !o.authenticate,
    skip: o.skip,
    headers: o.headers ?? true,
    handler: o.handler,
    bans: o.ban ? new Bans(store, o.ban, o.onBan) : undefined,
    grant,
    shadow: o.mode === 'shadow',
    onLimit: o.onLimit,
  };
}
