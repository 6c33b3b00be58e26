// listingClient(): calls a listing API paced by the contract's table, so that the server never has to refuse it.
import { compile, pathToRegexp } from 'path-to-regexp';
import { isPlainObject, MAX_TIMER_MS, show, suggestion } from '../shared/check.js';
import { ListingClientError } from '../shared/errors.js';
import { Pacer, type Ticket, type WaitEvent, type WaitReason } from './pacing.js';
import { readServerLimits, retryAfterMs } from '../contract/read-headers.js';
import { checkTable, endpointsOf } from '../contract/table.js';
import { answered, type Answer, delay, exchange, spentResetMs, serverMessage, abortable } from './exchange.js';
import {
  type CallOptions,
  check,
  checkCache,
  type ListingClient,
  type ListingClientOptions,
  optionNames,
  type Params,
} from './options.js';

export { ListingClientError, type ListingClientErrorCode, ListingLimitsError } from '../shared/errors.js';
export type { EndpointRow, ListingFamily, ListingName } from '../contract/listings.js';
export type { WaitEvent, WaitReason };
export type { CallOptions, ListingClient, ListingClientOptions, Params } from './options.js';

const MAX_WAIT_MS = 60_000;
const TIMEOUT_MS = 30_000;
/** GET answers kept at the most; the least recently used go first. */
const CACHE_ENTRIES = 500;
const MAX_RETRIES = 10;
/** The first backoff of a GET after a network error, a timeout or a 5xx; each retry doubles it, less up to half. */
const BACKOFF_MS = 500;
const CHANGES_PER_REPORT = 5;
/** The latest time a `Date` can hold. */
const MAX_DATE_MS = 8.64e15;

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
  /** JSON of the latest body, to send and to tell a change from a repeat. */
  json: string | undefined;
  changes: number;
  pending: boolean;
  lastSent: number;
  sending: Promise<void> | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  readonly endpoint: Endpoint;
  readonly url: string;
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
  const rows = checkTable(check, o.listing, 'options.listing', true);
  const { origin, path: basePath } = check.baseUrl(o.baseUrl, 'options.baseUrl');
  const baseUrl = `${origin}${basePath}`;
  const token = check.token(o.token, 'options.token');
  const send = check.function<typeof fetch>(o.fetch, 'options.fetch', globalThis.fetch);
  const longest = Math.min(Math.max(MAX_WAIT_MS, ...rows.map((row) => row.windowMs)), MAX_TIMER_MS);
  const ms = (field: string, least: number) =>
    check.whole(o[field], `options.${field}`, 'milliseconds', least, MAX_TIMER_MS);
  const maxWaitMs = o.maxWaitMs === undefined ? longest : ms('maxWaitMs', 0);
  const timeoutMs = o.timeoutMs === undefined ? TIMEOUT_MS : ms('timeoutMs', 1);
  const cacheMs = checkCache(o.cache, rows);
  const reportIntervalMs = o.reportIntervalMs === undefined ? 60_000 : ms('reportIntervalMs', 1);
  const onWait = check.function<(event: WaitEvent) => void>(o.onWait, 'options.onWait', () => {});
  const onError = check.function<(error: unknown) => void>(o.onError, 'options.onError', () => {});
  const retries = o.retries === undefined ? 2 : check.whole(o.retries, 'options.retries', 'retries', 0, MAX_RETRIES);
  if (typeof send !== 'function') check.invalid('options.fetch', 'is required where there is no global fetch.');

  const endpoints = new Map<string, Endpoint>(
    endpointsOf(rows).map(({ method, path, name, limits }) => {
      const endpoint: Endpoint = {
        name,
        method,
        path,
        keys: pathToRegexp(path).keys.map((key) => key.name),
        toPath: compile(path, { encode: encodeURIComponent }),
        cacheMs: cacheMs.get(path) ?? 0,
        pacer: new Pacer(name, limits, maxWaitMs, (event) => onWait(event)),
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

  function tell(event: WaitEvent): void {
    try {
      onWait(event);
    } catch {
      // A listener's mistake must not break the call.
    }
  }

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

  /** A body as the JSON text to send. */
  function jsonOf(endpoint: Endpoint, body: unknown): string | undefined {
    try {
      return JSON.stringify(body);
    } catch (error) {
      throw new ListingClientError('ERR_INVALID_PARAMS', endpoint.name, `body cannot be sent as JSON: ${error}`);
    }
  }

  function banned(name: string, until: number | undefined, status?: number, body?: unknown): ListingClientError {
    const end = until === undefined ? 'the server gave no end' : `until ${new Date(until).toISOString()}`;
    const said = status === undefined ? '' : answered(status, body);
    return new ListingClientError('ERR_BANNED', name, `the token is banned, ${end}${said}.`, {
      status,
      bannedUntil: until === undefined ? undefined : new Date(until),
      body,
    });
  }

  function refuseWhenBanned(name: string): void {
    if (bannedUntil > Date.now()) throw banned(name, bannedUntil);
  }

  /**
   * A 403 that says the token is banned: the whole client is, until `bannedUntil` (or, unreadable, its
   * `Retry-After`); every call waiting for its turn rejects at once, and later calls without a request.
   */
  function banOf(name: string, answer: Answer, at: number): ListingClientError {
    const body = answer.body as Record<string, unknown>;
    let until = typeof body.bannedUntil === 'string' ? Date.parse(body.bannedUntil) : Number.NaN;
    if (Number.isNaN(until)) until = at + (retryAfterMs(answer.res.headers, at) ?? Number.NaN);
    const end = Number.isNaN(until) ? undefined : Math.min(until, MAX_DATE_MS);
    if (end !== undefined && end > Math.max(bannedUntil, at)) {
      bannedUntil = end;
      for (const { name: other, pacer } of endpoints.values()) pacer.clear(banned(other, end));
    }
    return banned(name, end, answer.res.status, answer.body);
  }

  async function backoff(name: string, attempt: number, signal: AbortSignal | undefined): Promise<void> {
    const ms = BACKOFF_MS * 2 ** attempt;
    const wait = Math.min(Math.round(ms / 2 + (Math.random() * ms) / 2), maxWaitMs);
    tell({ endpoint: name, ms: wait, reason: 'backoff' });
    await delay(wait, signal);
  }

  /**
   * Sends one call, paced, and reads its answer: retries 429s, and network errors, timeouts and 5xx of a GET.
   * `payload` gives the JSON body when the request goes (a report sends its latest body).
   */
  async function call(
    endpoint: Endpoint,
    url: string,
    payload: (() => string | undefined) | undefined,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const { pacer, name, method } = endpoint;
    for (let attempt = 0; ; attempt++) {
      refuseWhenBanned(name);
      const ticket: Ticket = await pacer.take(signal, attempt > 0);
      if (bannedUntil > Date.now() || signal?.aborted) {
        pacer.cancel(ticket);
        refuseWhenBanned(name);
        throw signal?.reason;
      }
      const body = payload?.();
      let answer: Answer;
      try {
        const headers: Record<string, string> = { Accept: 'application/json' };
        if (token !== undefined) headers.Authorization = token;
        if (body !== undefined) headers['Content-Type'] = 'application/json';
        answer = await exchange(send, url, { method, headers, body }, signal, timeoutMs, name);
      } catch (error) {
        // Counted as answered when it failed: the server may have counted it up to then.
        pacer.answered(ticket, Date.now(), undefined, false);
        const again = error instanceof ListingClientError && error.code !== 'ERR_TOO_LARGE';
        if (!again || method !== 'GET' || attempt >= retries) throw error;
        await backoff(name, attempt, signal);
        continue;
      }
      const at = Date.now();
      const { res } = answer;
      const limits = readServerLimits(res.headers, at);
      pacer.answered(ticket, at, limits, res.ok);
      if (res.ok) return answer.body;
      const { status } = res;
      if (status === 403 && isPlainObject(answer.body) && 'bannedUntil' in answer.body) {
        throw banOf(name, answer, at);
      }
      if (status === 429) {
        const waitMs = retryAfterMs(res.headers, at) ?? spentResetMs(limits) ?? pacer.windowMs;
        pacer.refused(waitMs, at);
        if (waitMs > maxWaitMs)
          throw pacer.tooLong(waitMs, { status, body: answer.body, said: answered(status, answer.body) });
        if (attempt >= retries) {
          const said = answered(status, answer.body);
          throw new ListingClientError('ERR_RATE_LIMITED', name, `refused after ${attempt + 1} attempts${said}.`, {
            status,
            waitMs,
            body: answer.body,
          });
        }
        tell({ endpoint: name, ms: waitMs, reason: 'retry-after' });
        continue;
      }
      if (status >= 500 && method === 'GET' && attempt < retries) {
        await backoff(name, attempt, signal);
        continue;
      }
      const said = serverMessage(answer.body);
      const text = said === undefined ? `answered ${status}.` : `answered ${status}: ${said}`;
      throw new ListingClientError('ERR_HTTP', name, /[.!?]$/.test(text) ? text : `${text}.`, {
        status,
        body: answer.body,
      });
    }
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
    const url = urlOf(endpoint, params);
    const json = jsonOf(endpoint, body);
    return track(call(endpoint, url, () => json, callOptions?.signal));
  }

  function flush(report: Report): void {
    if (report.timer !== undefined) clearTimeout(report.timer);
    report.timer = undefined;
    if (!report.pending || report.sending) return;
    report.lastSent = Date.now();
    // Paced by the POST row: the body is taken when the request goes, so the latest one wins.
    const take = () => {
      report.pending = false;
      report.changes = 0;
      return report.json;
    };
    let failed = false;
    report.sending = track(call(report.endpoint, report.url, take, undefined))
      .then(
        () => {},
        (error: unknown) => {
          failed = true;
          // A body that did not arrive (429, 5xx, no answer) is pending again, unless a newer one took its place; it
          // goes with the next change or interval. close() sends each body once.
          const code = error instanceof ListingClientError ? error.code : undefined;
          const status = error instanceof ListingClientError ? error.status : undefined;
          const refused =
            code === 'ERR_BANNED' || code === 'ERR_TOO_LARGE' || (code === 'ERR_HTTP' && (status ?? 0) < 500);
          report.pending = !closed && !refused;
          try {
            onError(error);
          } catch {
            // A throwing onError must not turn into an unhandled rejection either.
          }
        },
      )
      .finally(() => {
        report.sending = undefined;
        if (!report.pending) return;
        if (!failed && (report.changes >= CHANGES_PER_REPORT || closed)) flush(report);
        else schedule(report, !failed);
      });
  }

  /**
   * The send of a report that waits for its interval. A new body keeps the process alive until it has been tried
   * once; one that failed waits for the next change, interval or close() without holding the process.
   */
  function schedule(report: Report, hold = true): void {
    if (report.timer !== undefined && hold) report.timer.ref();
    if (report.timer !== undefined || closed) return;
    const since = report.lastSent === 0 ? Date.now() : report.lastSent;
    report.timer = setTimeout(() => flush(report), Math.max(since + reportIntervalMs - Date.now(), 0));
    if (!hold) report.timer.unref();
  }

  function reportBody(shape: string, params: Params, body: unknown): void {
    const endpoint = endpointOf('POST', shape);
    refuseWhenClosed(endpoint.name);
    const url = urlOf(endpoint, params);
    const json = jsonOf(endpoint, body);
    let report = reports.get(url);
    if (!report) {
      report = {
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
    if (json === report.json) return;
    report.json = json;
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
