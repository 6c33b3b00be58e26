// Options of listingClient(): their public types, and the settings they are checked into when the client is made.
import { Checker, DAY_MS, MAX_TIMER_MS, suggestion } from '../shared/check.js';
import { checkTable } from '../contract/table.js';
import type { AnyListingName, EndpointRow } from '../contract/listings.js';
import { type WaitEvent } from './pacing.js';

/** Options of {@link listingClient}. */
export interface ListingClientOptions {
  /** The table the API enforces: `'A'`, `'B'` or rows of your own, as for `listingLimits`. Required. */
  listing: AnyListingName | readonly EndpointRow[];
  /** Where the API is served, e.g. `https://api.example.org`. Required. */
  baseUrl: string | URL;
  /** The `Authorization` value sent with every call. Default: none. */
  token?: string | undefined;
  /** The fetch that sends requests. Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** A call that would wait longer rejects (`ERR_WAIT_TOO_LONG`). Default: `60000`, or the table's longest window. */
  maxWaitMs?: number;
  /** Milliseconds a request may take to its answer's last byte (`ERR_TIMEOUT`; a GET is retried). Default: `30000`. */
  timeoutMs?: number;
  /** Milliseconds to keep GET answers, by path shape. Default: `60000` for `/v1/bots` and `/v1/servers`, else `0`. */
  cache?: Readonly<Record<string, number>>;
  /** `report()` sends a changed body at the latest this long after the last send. Default: `60000`. */
  reportIntervalMs?: number;
  /** Told each time a call waits before it is sent, and why. Default: none. */
  onWait?: (event: WaitEvent) => void;
  /** Receives the errors of `report()`'s sends. Default: they are dropped. */
  onError?: (error: unknown) => void;
  /** Retries of a 429, and of a GET that met a network error, a timeout or a 5xx. Default: `2`. */
  retries?: number;
}

/** Options of one call. */
export interface CallOptions {
  /** Cancels the call: it rejects with the signal's reason. */
  signal?: AbortSignal;
}

/** Path parameters of the shape (encoded into the path) and any others (sent as the query string). */
export type Params = Readonly<Record<string, string | number>>;

/** What {@link listingClient} returns. */
export interface ListingClient {
  /** `GET` on a path shape of the table, e.g. `get('/v1/bots/:id', { id: '42' })`: the parsed JSON answer. */
  get<T = unknown>(pathShape: string, params?: Params, options?: CallOptions): Promise<T>;
  /** `POST` of `body` as JSON on a path shape of the table: the parsed JSON answer. */
  post<T = unknown>(pathShape: string, params: Params, body: unknown, options?: CallOptions): Promise<T>;
  /** Posts `body` in the background, rule 7's way: the latest per URL, on every 5th change or `reportIntervalMs`. */
  report(pathShape: string, params: Params, body: unknown): void;
  /** Sends the pending reports and waits for every call. Later calls reject (`ERR_CLOSED`). */
  close(): Promise<void>;
}

const clientOptionNames = [
  'listing',
  'baseUrl',
  'token',
  'fetch',
  'maxWaitMs',
  'timeoutMs',
  'cache',
  'reportIntervalMs',
  'onWait',
  'onError',
  'retries',
] as const;
const LIST_PATHS = new Set(['/v1/bots', '/v1/servers']);
const LIST_CACHE_MS = 60_000;
const wholeOptions = {
  maxWaitMs: { unit: 'milliseconds', least: 0, most: MAX_TIMER_MS, fallback: 60_000 },
  timeoutMs: { unit: 'milliseconds', least: 1, most: MAX_TIMER_MS, fallback: 30_000 },
  reportIntervalMs: { unit: 'milliseconds', least: 1, most: MAX_TIMER_MS, fallback: 60_000 },
  retries: { unit: 'retries', least: 0, most: 10, fallback: 2 },
} as const;

/** The options checked; `onWait` and `onError` never throw, so that a listener's mistake breaks no call. */
export type ClientSettings = ReturnType<typeof resolveClient>;

const clientCheck: Checker = new Checker('listingClient');

function quietly<T>(listener: (arg: T) => void): (arg: T) => void {
  return (arg) => {
    try {
      listener(arg);
    } catch {
      // Dropped: the call goes on.
    }
  };
}

function checkCache(value: unknown, rows: readonly EndpointRow[]): Map<string, number> {
  const shapes = rows.filter((row) => row.method === 'GET').map((row) => row.path);
  const cache = new Map(shapes.map((path) => [path, LIST_PATHS.has(path) ? LIST_CACHE_MS : 0]));
  const given = clientCheck.options(value, 'options.cache', 'of milliseconds by path shape');
  for (const [shape, ms] of Object.entries(given)) {
    const field = `options.cache[${JSON.stringify(shape)}]`;
    if (!cache.has(shape)) {
      const near = suggestion(shape, shapes);
      clientCheck.invalid(
        field,
        `is not the path of a GET row of the table.${near ? ` Did you mean \`${near}\`?` : ''}`,
      );
    }
    cache.set(shape, clientCheck.whole(ms, field, { unit: 'milliseconds', least: 0, most: DAY_MS }));
  }
  return cache;
}

export function resolveClient(options: ListingClientOptions) {
  const o = clientCheck.options(options, 'options', '{ listing, baseUrl, token }');
  if (options === undefined)
    clientCheck.invalid('options', 'must be an object { listing, baseUrl, token }; got undefined.');
  clientCheck.unknownKeys(o, clientOptionNames, (key) => `options.${key}`);
  if (o.listing === undefined) clientCheck.invalid('options.listing', "is required: 'A', 'B' or an array of rows.");
  const rows = checkTable(clientCheck, o.listing, 'options.listing', true);
  const { origin, path } = clientCheck.baseUrl(o.baseUrl, 'options.baseUrl');
  const whole = (field: keyof typeof wholeOptions, fallback: number = wholeOptions[field].fallback) =>
    clientCheck.whole(o[field], `options.${field}`, { ...wholeOptions[field], fallback });
  const longest = Math.max(wholeOptions.maxWaitMs.fallback, ...rows.map((row) => row.windowMs));
  const settings = {
    rows,
    // Without a trailing slash.
    baseUrl: `${origin}${path}`,
    token: clientCheck.token(o.token, 'options.token'),
    fetch: clientCheck.function<typeof fetch>(o.fetch, 'options.fetch', globalThis.fetch),
    maxWaitMs: whole('maxWaitMs', Math.min(longest, MAX_TIMER_MS)),
    timeoutMs: whole('timeoutMs'),
    cacheMs: checkCache(o.cache, rows),
    reportIntervalMs: whole('reportIntervalMs'),
    onWait: quietly(clientCheck.function<(event: WaitEvent) => void>(o.onWait, 'options.onWait', () => {})),
    onError: quietly(clientCheck.function<(error: unknown) => void>(o.onError, 'options.onError', () => {})),
    retries: whole('retries'),
  };
  if (typeof settings.fetch !== 'function') {
    clientCheck.invalid('options.fetch', 'is required where there is no global fetch.');
  }
  return settings;
}
