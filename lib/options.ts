// Options of listingLimits(): their public type, and their validation into the internal configuration.
import { METHODS } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { closest } from 'fastest-levenshtein';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { ListingLimitsError } from './errors.js';
import { type HeaderTemplate, headerTemplate } from './headers.js';
import { defaultKey } from './keys.js';
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
  readonly key: (req: Request) => string | Promise<string>;
  readonly skip: ((req: Request) => boolean | Promise<boolean>) | undefined;
  readonly headers: boolean;
  readonly handler: LimitHandler | undefined;
}

const optionNames = ['store', 'key', 'skip', 'headers', 'handler', 'ipv6Subnet'] as const;
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
  if (!isPositiveInteger(windowMs) || windowMs % 1000 !== 0) {
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
  for (const name of ['store', 'key', 'skip', 'handler'] as const) {
    if (o[name] !== undefined && typeof o[name] !== 'function') invalid(`options.${name}`, 'must be a function.');
  }
  if (o.headers !== undefined && typeof o.headers !== 'boolean') invalid('options.headers', 'must be true or false.');
  const subnet = o.ipv6Subnet;
  if (subnet !== undefined && subnet !== false && !(Number.isInteger(subnet) && subnet >= 1 && subnet <= 128)) {
    invalid('options.ipv6Subnet', `must be an integer from 1 to 128, or false; got ${String(subnet)}.`);
  }
  return o;
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
  return {
    match: compileMatcher(routes),
    key: o.key ?? defaultKey(o.ipv6Subnet ?? 64),
    skip: o.skip,
    headers: o.headers ?? true,
    handler: o.handler,
  };
}
