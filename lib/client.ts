// listingClient(): calls a listing API paced by the contract's table, so that the server never has to refuse it.
import { compile, pathToRegexp } from 'path-to-regexp';
import { Checker, isPlainObject, show, suggestion } from './check.js';
import { ListingClientError } from './errors.js';
import type { EndpointRow, ListingName } from './listings.js';
import { Pacer, type Ticket, type WaitEvent, type WaitReason } from './pacing.js';
import { readServerLimit, retryAfterMs } from './server-limits.js';
import { checkTable } from './table.js';

export { ListingClientError, type ListingClientErrorCode, ListingLimitsError } from './errors.js';
export type { EndpointRow, ListingName } from './listings.js';
export type { WaitEvent, WaitReason };

/** Options of {@link listingClient}. */
export interface ListingClientOptions {
  /** The table the API enforces: `'A'`, `'B'` or rows of your own, as for `listingLimits`. Required. */
  listing: ListingName | readonly EndpointRow[];
  /** Where the API is served, e.g. `https://api.example.org`: each path is appended to it. Required. */
  baseUrl: string | URL;
  /** The `Authorization` value sent with every call. Default: none (the server counts the calls by IP address). */
  token?: string | undefined;
  /** The fetch that sends requests. Default: the global `fetch`. */
  fetch?: typeof fetch;
  /**
   * A call that would wait longer than this many milliseconds rejects at once (`ERR_WAIT_TOO_LONG`), `0` included.
   * Default: no bound.
   */
  maxWaitMs?: number;
  /**
   * Milliseconds to keep GET answers, by path shape of the table: `{ '/v1/bots/:id': 5000 }`; `0` keeps none.
   * Default: `60000` for the list endpoints (`/v1/bots`, `/v1/servers`), `0` for the others.
   */
  cache?: Readonly<Record<string, number>>;
  /** `report()` sends a changed body at the latest this many milliseconds after the last send. Default: `60000`. */
  reportIntervalMs?: number;
  /** Told each time a call has to wait before it is sent, and why. Default: none. */
  onWait?: (event: WaitEvent) => void;
  /** Receives the errors of the sends that `report()` makes in the background. Default: they are dropped. */
  onError?: (error: unknown) => void;
  /** Retries of a call refused with 429, and of a GET that met a network error or a 5xx. Default: `2`. */
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
  /**
   * Posts `body` in the background, rule 7's way: only the latest body per URL is kept, and it is sent on every
   * 5th change or once `reportIntervalMs` has passed since the last send, never faster than the POST row allows.
   */
  report(pathShape: string, params: Params, body: unknown): void;
  /** Sends the pending reports and resolves when every call made so far is done. Later calls reject (`ERR_CLOSED`). */
  close(): Promise<void>;
}

const SOURCE = 'listingClient';
const optionNames = [
  'listing',
  'baseUrl',
  'token',
  'fetch',
  'maxWaitMs',
  'cache',
  'reportIntervalMs',
  'onWait',
  'onError',
  'retries',
] as const;
const LIST_PATHS = new Set(['/v1/bots', '/v1/servers']);
const LIST_CACHE_MS = 60_000;
/** GET answers kept at the most; the least recently used go first. */
const CACHE_ENTRIES = 500;
const MAX_RETRIES = 10;
/** The first backoff of a GET after a network error or a 5xx; each retry doubles it, less up to half at random. */
const BACKOFF_MS = 500;
const CHANGES_PER_REPORT = 5;

interface Endpoint {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly keys: readonly string[];
  readonly toPath: (params: Record<string, string>) => string;
  readonly cacheMs: number;
  readonly pacer: Pacer;
}

interface Report {
  body: unknown;
  /** JSON of the latest body, to tell a change from a repeat. */
  json: string | undefined;
  changes: number;
  pending: boolean;
  lastSent: number;
  sending: Promise<void> | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  readonly endpoint: Endpoint;
  readonly url: string;
}

const check: Checker = new Checker(SOURCE);

function checkBaseUrl(value: unknown): string {
  let url: URL | undefined;
  try {
    url = typeof value === 'string' || value instanceof URL ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    const given = show(value instanceof URL ? String(value) : value);
    check.invalid('options.baseUrl', `must be an http or https URL without query or fragment; got ${given}.`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

function checkToken(value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value)) {
    check.invalid(
      'options.token',
      'must be a non-empty header value of printable ASCII, without spaces at either end.',
    );
  }
  return value;
}

function checkFunction<T>(value: unknown, field: string, fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'function') check.invalid(`options.${field}`, `must be a function; got ${show(value)}.`);
  return value as T;
}

function wholeMs(value: unknown, field: string, least: number, most: number): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= least && value <= most) return value;
  return check.invalid(field, `must be a whole number from ${least} to ${most}; got ${show(value)}.`);
}

function checkCache(value: unknown, rows: readonly EndpointRow[]): Map<string, number> {
  const shapes = rows.filter((row) => row.method === 'GET').map((row) => row.path);
  const cache = new Map(shapes.map((path) => [path, LIST_PATHS.has(path) ? LIST_CACHE_MS : 0]));
  if (value === undefined) return cache;
  if (!isPlainObject(value))
    check.invalid('options.cache', `must be an object of milliseconds by path shape; got ${show(value)}.`);
  for (const [shape, ms] of Object.entries(value)) {
    const field = `options.cache[${JSON.stringify(shape)}]`;
    if (!cache.has(shape)) {
      const near = suggestion(shape, shapes);
      check.invalid(field, `is not the path of a GET row of the table.${near ? ` Did you mean \`${near}\`?` : ''}`);
    }
    cache.set(shape, wholeMs(ms, field, 0, 24 * 3600 * 1000));
  }
  return cache;
}

/** Parses an answer's body: JSON when it says so, else text; `undefined` when empty. */
async function bodyOf(res: Response): Promise<unknown> {
  const text = await res.text();
  if (text === '') return undefined;
  if (!/\bjson\b/i.test(res.headers.get('Content-Type') ?? '')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((done, fail) => {
    if (signal?.aborted) return fail(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      fail(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      done();
    }, ms);
    timer.unref?.();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts. */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((done, fail) => {
    const onAbort = () => fail(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(done, fail).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * A client of a listing API that paces every call by the table, so that it is not refused: see the README's
 * "For API clients". Throws a `ListingLimitsError` naming the option when the options cannot work.
 */
export function listingClient(options: ListingClientOptions): ListingClient {
  const o = check.options(options, 'options', '{ listing, baseUrl, token }');
  if (options === undefined) check.invalid('options', 'must be an object { listing, baseUrl, token }; got undefined.');
  check.unknownKeys(o, optionNames, (key) => `options.${key}`);
  if (o.listing === undefined) check.invalid('options.listing', "is required: 'A', 'B' or an array of rows.");
  const rows = checkTable(check, o.listing, 'options.listing');
  const baseUrl = checkBaseUrl(o.baseUrl);
  const token = checkToken(o.token);
  const send = checkFunction<typeof fetch>(o.fetch, 'fetch', globalThis.fetch);
  const maxWaitMs =
    o.maxWaitMs === undefined ? Number.POSITIVE_INFINITY : wholeMs(o.maxWaitMs, 'options.maxWaitMs', 0, 2 ** 31 - 1);
  const cacheMs = checkCache(o.cache, rows);
  const reportIntervalMs =
    o.reportIntervalMs === undefined ? 60_000 : wholeMs(o.reportIntervalMs, 'options.reportIntervalMs', 1, 2 ** 31 - 1);
  const onWait = checkFunction<(event: WaitEvent) => void>(o.onWait, 'onWait', () => {});
  const onError = checkFunction<(error: unknown) => void>(o.onError, 'onError', () => {});
  const retries = o.retries === undefined ? 2 : wholeMs(o.retries, 'options.retries', 0, MAX_RETRIES);
  if (typeof send !== 'function') check.invalid('options.fetch', 'is required where there is no global fetch.');

  const endpoints = new Map<string, Endpoint>(
    rows.map((row) => {
      const name = `${row.method} ${row.path}`;
      const endpoint: Endpoint = {
        name,
        method: row.method,
        path: row.path,
        keys: pathToRegexp(row.path).keys.map((key) => key.name),
        toPath: compile(row.path, { encode: encodeURIComponent }),
        cacheMs: cacheMs.get(row.path) ?? 0,
        pacer: new Pacer(name, row.limit, row.windowMs, (event) => onWait(event)),
      };
      return [name, endpoint];
    }),
  );
  const cache = new Map<string, { value: unknown; until: number }>();
  const inflight = new Map<string, { promise: Promise<unknown>; controller: AbortController; callers: number }>();
  const reports = new Map<string, Report>();
  const running = new Set<Promise<unknown>>();
  let bannedUntil = 0;
  let closed = false;

  function endpointOf(method: string, shape: unknown): Endpoint {
    const endpoint = endpoints.get(`${method} ${String(shape)}`);
    if (endpoint) return endpoint;
    const names = [...endpoints.keys()];
    const near = suggestion(`${method} ${String(shape)}`, names);
    throw new ListingClientError(
      'ERR_UNKNOWN_ENDPOINT',
      `${method} ${show(shape)}`,
      `is not an endpoint of the table.${near ? ` Did you mean \`${near}\`?` : ''}`,
    );
  }

  function urlOf(endpoint: Endpoint, params: unknown): string {
    if (params !== undefined && !isPlainObject(params)) {
      throw new ListingClientError(
        'ERR_INVALID_PARAMS',
        endpoint.name,
        `params must be an object; got ${show(params)}.`,
      );
    }
    const path: Record<string, string> = {};
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(params ?? {})) {
      if (typeof value !== 'string' && typeof value !== 'number') {
        throw new ListingClientError(
          'ERR_INVALID_PARAMS',
          endpoint.name,
          `params.${key} must be a string or a number.`,
        );
      }
      if (endpoint.keys.includes(key)) path[key] = String(value);
      else query.append(key, String(value));
    }
    const missing = endpoint.keys.find((key) => !(key in path) || path[key] === '');
    if (missing) throw new ListingClientError('ERR_INVALID_PARAMS', endpoint.name, `params.${missing} is required.`);
    const search = query.toString() === '' ? '' : `?${query}`;
    return `${baseUrl}${endpoint.toPath(path)}${search}`;
  }

  /** Sends one call, paced, and reads its answer: retries 429s, and network errors and 5xx of a GET. */
  async function call(endpoint: Endpoint, url: string, body: unknown, signal: AbortSignal | undefined) {
    const { pacer, name } = endpoint;
    for (let attempt = 0; ; attempt++) {
      const now = Date.now();
      if (bannedUntil > now) throw banned(name, new Date(bannedUntil), undefined, undefined);
      const waitMs = pacer.waitFor(now, attempt > 0);
      if (waitMs > maxWaitMs) {
        throw new ListingClientError('ERR_WAIT_TOO_LONG', name, `would wait ${waitMs} ms, more than maxWaitMs.`, {
          waitMs,
        });
      }
      if (signal?.aborted) throw signal.reason;
      const ticket: Ticket = await pacer.take(now, signal, attempt > 0);
      let res: Response;
      let answer: unknown;
      try {
        res = await send(url, {
          method: endpoint.method,
          headers: {
            Accept: 'application/json',
            ...(token === undefined ? {} : { Authorization: token }),
            ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal,
        });
        answer = await bodyOf(res);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (endpoint.method !== 'GET' || attempt >= retries) {
          throw new ListingClientError('ERR_NETWORK', name, `the request failed: ${String(error)}`, { cause: error });
        }
        await delay(backoff(attempt), signal);
        continue;
      }
      const at = Date.now();
      const server = readServerLimit(res.headers, at);
      if (server) pacer.correct(ticket, server, at);
      if (res.ok) return answer;
      const status = res.status;
      if (status === 403 && isPlainObject(answer) && typeof answer.bannedUntil === 'string') {
        const until = new Date(answer.bannedUntil);
        if (!Number.isNaN(until.getTime())) bannedUntil = Math.max(bannedUntil, until.getTime());
        throw banned(name, until, status, answer);
      }
      if (status === 429) {
        const retryMs = retryAfterMs(res.headers, at) ?? server?.resetMs ?? pacer.windowMs;
        if (attempt >= retries) {
          throw new ListingClientError('ERR_RATE_LIMITED', name, `refused with 429 after ${attempt + 1} attempts.`, {
            status,
            waitMs: retryMs,
            body: answer,
          });
        }
        pacer.refused(retryMs, at);
        onWait({ endpoint: name, ms: retryMs, reason: 'retry-after' });
        continue;
      }
      if (status >= 500 && endpoint.method === 'GET' && attempt < retries) {
        await delay(backoff(attempt), signal);
        continue;
      }
      throw new ListingClientError('ERR_HTTP', name, `answered ${status}.`, { status, body: answer });
    }
  }

  function backoff(attempt: number): number {
    const ms = BACKOFF_MS * 2 ** attempt;
    return Math.round(ms / 2 + (Math.random() * ms) / 2);
  }

  function banned(name: string, until: Date, status: number | undefined, body: unknown): ListingClientError {
    return new ListingClientError('ERR_BANNED', name, `the token is banned until ${until.toISOString()}.`, {
      status,
      bannedUntil: until,
      body,
    });
  }

  function track<T>(promise: Promise<T>): Promise<T> {
    running.add(promise);
    const forget = () => running.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  function refuseWhenClosed(name: string): void {
    if (closed) throw new ListingClientError('ERR_CLOSED', name, 'the client is closed.');
  }

  async function get(shape: string, params?: Params, callOptions?: CallOptions): Promise<unknown> {
    const endpoint = endpointOf('GET', shape);
    refuseWhenClosed(endpoint.name);
    const url = urlOf(endpoint, params);
    const signal = callOptions?.signal;
    const kept = cache.get(url);
    if (kept && kept.until > Date.now()) {
      cache.delete(url);
      cache.set(url, kept);
      return kept.value;
    }
    let shared = inflight.get(url);
    if (!shared) {
      // One request for every concurrent caller; it is cancelled only when every one of them has aborted.
      const controller = new AbortController();
      const promise = track(call(endpoint, url, undefined, controller.signal)).finally(() => inflight.delete(url));
      shared = { promise, controller, callers: 0 };
      inflight.set(url, shared);
      if (endpoint.cacheMs > 0) {
        promise.then(
          (value) => {
            cache.delete(url);
            cache.set(url, { value, until: Date.now() + endpoint.cacheMs });
            if (cache.size > CACHE_ENTRIES) cache.delete(cache.keys().next().value as string);
          },
          () => {},
        );
      }
    }
    const request = shared;
    request.callers++;
    if (!signal) return request.promise;
    const leave = () => {
      if (--request.callers === 0) request.controller.abort(signal.reason);
    };
    if (signal.aborted) leave();
    else signal.addEventListener('abort', leave, { once: true });
    request.promise.then(
      () => signal.removeEventListener('abort', leave),
      () => signal.removeEventListener('abort', leave),
    );
    return abortable(request.promise, signal);
  }

  async function post(shape: string, params: Params, body: unknown, callOptions?: CallOptions): Promise<unknown> {
    const endpoint = endpointOf('POST', shape);
    refuseWhenClosed(endpoint.name);
    return track(call(endpoint, urlOf(endpoint, params), body, callOptions?.signal));
  }

  function flush(report: Report): void {
    if (report.timer !== undefined) clearTimeout(report.timer);
    report.timer = undefined;
    if (!report.pending) return;
    if (report.sending) return;
    report.sending = track(
      (async () => {
        // Paced by the POST row: the body is taken when the request goes, so the latest one wins.
        const { pacer, name } = report.endpoint;
        const ticket = await pacer.take(Date.now(), undefined);
        await sendReport(report, ticket, name);
      })(),
    )
      .catch((error: unknown) => {
        // A throwing onError must not turn into an unhandled rejection either.
        try {
          onError(error);
        } catch {
          return;
        }
      })
      .finally(() => {
        report.sending = undefined;
        if (report.pending && (report.changes >= CHANGES_PER_REPORT || closed)) flush(report);
        else if (report.pending) schedule(report);
      });
  }

  async function sendReport(report: Report, ticket: Ticket, name: string): Promise<void> {
    report.pending = false;
    report.changes = 0;
    report.lastSent = Date.now();
    // A body that did not arrive (429, 5xx, no answer) is pending again, unless a newer one took its place; it goes
    // with the next change or interval, or with close() at the latest.
    const again = () => {
      if (!closed) report.pending = true;
    };
    let res: Response;
    let answer: unknown;
    try {
      res = await send(report.url, {
        method: 'POST',
        headers: {
          Accept: 'application/json',
          'Content-Type': 'application/json',
          ...(token === undefined ? {} : { Authorization: token }),
        },
        body: JSON.stringify(report.body),
      });
      answer = await bodyOf(res);
    } catch (error) {
      again();
      throw new ListingClientError('ERR_NETWORK', name, `the request failed: ${String(error)}`, { cause: error });
    }
    const at = Date.now();
    const server = readServerLimit(res.headers, at);
    if (server) report.endpoint.pacer.correct(ticket, server, at);
    if (res.ok) return;
    if (res.status === 429)
      report.endpoint.pacer.refused(retryAfterMs(res.headers, at) ?? report.endpoint.pacer.windowMs, at);
    if (res.status === 429 || res.status >= 500) again();
    throw new ListingClientError('ERR_HTTP', name, `answered ${res.status}.`, { status: res.status, body: answer });
  }

  function schedule(report: Report): void {
    if (report.timer !== undefined || closed) return;
    const since = report.lastSent === 0 ? Date.now() : report.lastSent;
    report.timer = setTimeout(() => flush(report), Math.max(since + reportIntervalMs - Date.now(), 0));
    report.timer.unref?.();
  }

  function reportBody(shape: string, params: Params, body: unknown): void {
    const endpoint = endpointOf('POST', shape);
    refuseWhenClosed(endpoint.name);
    const url = urlOf(endpoint, params);
    let report = reports.get(url);
    if (!report) {
      report = {
        body,
        json: undefined,
        changes: 0,
        pending: false,
        lastSent: 0,
        sending: undefined,
        timer: undefined,
        endpoint,
        url,
      };
      reports.set(url, report);
    }
    const json = JSON.stringify(body);
    if (json === report.json) return;
    report.json = json;
    report.body = body;
    report.pending = true;
    report.changes++;
    if (report.changes >= CHANGES_PER_REPORT) flush(report);
    else schedule(report);
  }

  async function close(): Promise<void> {
    closed = true;
    for (const report of reports.values()) flush(report);
    while (running.size > 0) await Promise.allSettled([...running]);
  }

  return {
    get: get as ListingClient['get'],
    post: post as ListingClient['post'],
    report: reportBody,
    close,
  };
}
