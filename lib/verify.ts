// Probes a running API, one endpoint after another, and checks that it enforces a limits table of the contract.
import { randomBytes } from 'node:crypto';
import { closest } from 'fastest-levenshtein';
import { compile, pathToRegexp } from 'path-to-regexp';
import { isInnerList, type Item, parseList } from 'structured-headers';
import { Checker } from './check.js';
import { type EndpointRow, type ListingName, listingNames } from './listings.js';
import { checkTable } from './table.js';
import type { WindowKind } from './windows.js';

/** Options of {@link verifyContract} and {@link planVerification}. */
export interface VerifyOptions {
  /**
   * Where the API is served, e.g. `https://api.example.com` or `http://127.0.0.1:3000/api`: each endpoint's
   * path is appended to it. Required.
   */
  baseUrl: string | URL;
  /** The table to check: the name of a listing of the contract (`'B'`), or rows of your own. Required. */
  listing: ListingName | readonly EndpointRow[];
  /** The `Authorization` value to send. Default: none, so the server counts the requests by client IP. */
  token?: string;
  /**
   * The `Authorization` value of the one request that checks that another client has its own counter.
   * Default: `listing-limits-verify-` and 16 random hex digits, new for every run.
   */
  otherToken?: string;
  /** Names of the endpoints to check, as in the table: `['GET /v1/bots/:id']`. Default: every endpoint. */
  only?: readonly string[];
  /**
   * Values of path parameters, by name: `{ id: '123' }`, or `{ id: ['123', '456'] }` to choose the second
   * value too. The second value is the one requested to check that path parameters share the counter; when it
   * is not given, it is the first plus one when that is a whole number (`124`), else the first with `-2` appended.
   * Default: `'1'` (and so `'2'`) for every parameter.
   */
  params?: Readonly<Record<string, string | readonly string[]>>;
  /**
   * The windows the server should count: `'fixed'` (a client's window starts with its first request and lasts
   * `windowMs`, so `limit` at the end of one and `limit` at the start of the next all pass) or `'sliding'` (at most
   * `limit` in any `windowMs`). A probe across the end of a window tells which one the server counts.
   * Default: `'fixed'`.
   */
  window?: WindowKind;
  /**
   * Milliseconds added to every wait for a window to end, for latency and clocks; the probe across a window's end
   * keeps this margin, up to a quarter of the window, on either side of it. Default: `1000`.
   */
  graceMs?: number;
  /** Milliseconds one request may take before it counts as failed. Default: `10000`. */
  timeoutMs?: number;
  /** The fetch used to send requests. Default: the global `fetch` of Node.js. */
  fetch?: typeof fetch;
  /** Waits `ms` milliseconds. Tests pass one that moves a fake clock instead. Default: a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock that `sleep` moves, in milliseconds since the epoch. Default: `Date.now`. */
  now?: () => number;
  /** Told what is going on, e.g. to show progress during the long waits. Default: none. */
  onProgress?: (event: VerifyEvent) => void;
}

/** What {@link VerifyOptions.onProgress} is told. */
export type VerifyEvent =
  /** Probing of an endpoint begins; `index` counts from 1. */
  | { readonly type: 'endpoint'; readonly endpoint: string; readonly index: number; readonly total: number }
  /**
   * A wait of `ms` begins: for the window to end, for a window already in use (`busy`) to end first, or for the
   * middle of a window, where the probe across its end (`boundary`) sends the rest of its limit.
   */
  | {
      readonly type: 'wait';
      readonly endpoint: string;
      readonly ms: number;
      readonly reason: 'window' | 'busy' | 'boundary';
    }
  /** Probing of an endpoint is over. */
  | { readonly type: 'done'; readonly result: EndpointReport };

/** What is planned for one endpoint. */
export interface EndpointPlan {
  /** `<METHOD> <path>`, as in the table. */
  readonly endpoint: string;
  readonly method: string;
  readonly path: string;
  readonly limit: number;
  readonly windowMs: number;
  /**
   * The paths requested, the base URL's path included (`/api/v1/bots/1`): one, or two (other path parameters)
   * for an endpoint with path parameters.
   */
  readonly paths: readonly string[];
  /** The requests sent when the server honours the contract (see the README for how they are spent). */
  readonly requests: number;
  /** The waits, in milliseconds: for windows to end, and within the probe across a window's end. */
  readonly waitMs: number;
  /** Of `requests`, those of the probe across a window's end: none for a limit of 1. */
  readonly boundaryRequests: number;
  /** Of `waitMs`, the waiting of the probe across a window's end. */
  readonly boundaryWaitMs: number;
}

/** What {@link planVerification} plans: every request and wait of a run against a server that honours the contract. */
export interface VerifyPlan {
  /** The base URL, as requests are sent to it. */
  readonly baseUrl: string;
  /** The windows the server should count. */
  readonly window: WindowKind;
  readonly endpoints: readonly EndpointPlan[];
  /** Requests over all endpoints. */
  readonly requests: number;
  /** Waiting over all endpoints, in milliseconds: about how long the run takes. */
  readonly waitMs: number;
}

/**
 * The windows the server was seen to count: `'either'` for a limit of 1, which fixed and sliding windows count
 * alike; `'unclear'` when the probe could not tell (the findings say why).
 */
export type WindowSeen = WindowKind | 'either' | 'unclear';

/** What was found on one endpoint. */
export interface EndpointReport extends EndpointPlan {
  /** True when nothing contradicts the contract: `findings` is empty. */
  readonly ok: boolean;
  /** Each way the server contradicts the contract, in words, e.g. `allowed 16 requests, contract says 15`. */
  readonly findings: readonly string[];
  /** What is worth knowing but contradicts nothing, e.g. `sent no rate-limit fields`. */
  readonly notes: readonly string[];
  /** The requests actually sent. */
  readonly requests: number;
  /** The windows the server counts, as the probe across a window's end saw them. */
  readonly windowSeen: WindowSeen;
}

/** What {@link verifyContract} found. */
export interface VerifyReport {
  readonly baseUrl: string;
  /** The windows the server should count. */
  readonly window: WindowKind;
  /** True when every endpoint is ok. */
  readonly ok: boolean;
  readonly endpoints: readonly EndpointReport[];
}

const SOURCE = 'verifyContract';
const windowKinds = ['fixed', 'sliding'] as const satisfies readonly WindowKind[];
const optionNames = [
  'baseUrl',
  'listing',
  'token',
  'otherToken',
  'only',
  'params',
  'window',
  'graceMs',
  'timeoutMs',
  'fetch',
  'sleep',
  'now',
  'onProgress',
] as const;

/** The rate-limit fields a response may carry, apart from Retry-After. */
const FIELDS = [
  'RateLimit-Policy',
  'RateLimit',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-RateLimit-Reset-After',
] as const;

interface Target {
  readonly row: EndpointRow;
  readonly name: string;
  readonly paths: readonly string[];
}

interface Run {
  readonly baseUrl: string;
  /** The scheme, host and port of the base URL: the targets' paths start with its path. */
  readonly origin: string;
  readonly targets: readonly Target[];
  readonly token: string | undefined;
  readonly otherToken: string;
  readonly window: WindowKind;
  readonly graceMs: number;
  readonly timeoutMs: number;
  readonly fetch: typeof fetch;
  readonly sleep: (ms: number) => Promise<void>;
  readonly now: () => number;
  readonly onProgress: (event: VerifyEvent) => void;
}

const check: Checker = new Checker(SOURCE);

function invalid(field: string, message: string): never {
  return check.invalid(`options.${field}`, message);
}

/** The base URL's origin, and its path without a trailing slash (empty at the root). */
function checkBaseUrl(value: unknown): { origin: string; base: string } {
  let url: URL | undefined;
  if (typeof value === 'string' || value instanceof URL) {
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
    invalid('baseUrl', `must be an http or https URL without query or fragment; got ${JSON.stringify(String(value))}.`);
  }
  return { origin: url.origin, base: url.pathname.replace(/\/+$/, '') };
}

function checkToken(field: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  // A header value: visible ASCII and inner spaces, nothing fetch would refuse or trim.
  if (typeof value !== 'string' || !/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value)) {
    invalid(field, 'must be a non-empty header value of printable ASCII, without spaces at either end.');
  }
  return value;
}

function checkMs(field: string, value: unknown, fallback: number, least: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < least) {
    invalid(field, `must be a whole number of milliseconds, ${least} or more; got ${String(value)}.`);
  }
  return value;
}

function checkFunction<T>(field: string, value: unknown, fallback: T): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'function') invalid(field, 'must be a function.');
  return value as T;
}

function checkOnly(value: unknown, names: readonly string[], listing: string): Set<string> | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length === 0) invalid('only', 'must be a non-empty array of endpoint names.');
  value.forEach((name: unknown, i) => {
    if (typeof name !== 'string' || !names.includes(name)) {
      const meant = JSON.stringify(closest(String(name), names as string[]));
      invalid(`only[${i}]`, `${JSON.stringify(name)} is not an endpoint of ${listing}. Did you mean ${meant}?`);
    }
  });
  return new Set(value as string[]);
}

/** The next value of a path parameter: the number plus one, or the value with `-2` appended. */
function secondValue(value: string): string {
  return /^\d+$/.test(value) ? String(BigInt(value) + 1n) : `${value}-2`;
}

function checkParams(value: unknown, known: ReadonlySet<string>): Map<string, readonly [string, string]> {
  const params = new Map<string, readonly [string, string]>();
  if (value === undefined) return params;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    invalid('params', 'must be an object of path parameter values, e.g. { id: "123" }.');
  }
  for (const [name, given] of Object.entries(value)) {
    if (!known.has(name)) {
      const names = [...known].map((n) => `:${n}`).join(', ') || 'none';
      invalid(`params.${name}`, `is not a path parameter of the endpoints checked (parameters: ${names}).`);
    }
    const values: unknown[] = Array.isArray(given) ? given : [given];
    if (values.length < 1 || values.length > 2 || !values.every((v) => typeof v === 'string' && v !== '')) {
      invalid(`params.${name}`, 'must be a non-empty string, or an array of one or two of them.');
    }
    const [first, second] = values as [string, string | undefined];
    if (second === first) {
      invalid(`params.${name}`, `must have two different values; got ${JSON.stringify(first)} twice.`);
    }
    params.set(name, [first, second ?? secondValue(first)]);
  }
  return params;
}

/** The paths of a row: the first and, when it has path parameters, the second with every parameter's second value. */
function pathsOf(row: EndpointRow, params: ReadonlyMap<string, readonly [string, string]>): string[] {
  const { keys } = pathToRegexp(row.path);
  const toPath = compile(row.path, { encode: encodeURIComponent });
  const defaults = ['1', '2'] as const;
  const fill = (which: 0 | 1) =>
    toPath(
      Object.fromEntries(
        keys.map((key) => {
          const value = params.get(key.name)?.[which] ?? defaults[which];
          return [key.name, key.type === 'wildcard' ? [value] : value];
        }),
      ),
    );
  return keys.length === 0 ? [fill(0)] : [fill(0), fill(1)];
}

function resolve(options: VerifyOptions): Run {
  if (typeof options !== 'object' || options === null)
    check.invalid('options', 'must be an object { baseUrl, listing }.');
  check.unknownKeys(options, optionNames, (key) => `options.${key}`);
  const { origin, base } = checkBaseUrl(options.baseUrl);
  if (options.listing === undefined) {
    const names = listingNames.map((name) => JSON.stringify(name));
    invalid(
      'listing',
      `is required: ${new Intl.ListFormat('en', { type: 'disjunction' }).format([...names, 'an array of rows'])}.`,
    );
  }
  const rows = checkTable(check, options.listing, 'options.listing');
  const listingName = typeof options.listing === 'string' ? `listing ${options.listing}` : 'the table';
  const names = rows.map((row) => `${row.method} ${row.path}`);
  const only = checkOnly(options.only, names, listingName);
  const chosen = rows.filter((_row, i) => !only || only.has(names[i] ?? ''));
  const known = new Set(chosen.flatMap((row) => pathToRegexp(row.path).keys.map((key) => key.name)));
  const params = checkParams(options.params, known);
  const token = checkToken('token', options.token);
  const otherToken =
    checkToken('otherToken', options.otherToken) ?? `listing-limits-verify-${randomBytes(8).toString('hex')}`;
  if (otherToken === token) invalid('otherToken', 'must differ from options.token.');
  return {
    baseUrl: `${origin}${base}`,
    origin,
    targets: chosen.map((row) => ({
      row,
      name: `${row.method} ${row.path}`,
      paths: pathsOf(row, params).map((path) => `${base}${path}`),
    })),
    token,
    otherToken,
    window: options.window === undefined ? 'fixed' : check.oneOf(options.window, windowKinds, 'options.window'),
    graceMs: checkMs('graceMs', options.graceMs, 1000, 0),
    timeoutMs: checkMs('timeoutMs', options.timeoutMs, 10_000, 1),
    fetch: checkFunction('fetch', options.fetch, globalThis.fetch),
    sleep: checkFunction('sleep', options.sleep, (ms: number) => new Promise<void>((done) => setTimeout(done, ms))),
    now: checkFunction('now', options.now, Date.now),
    onProgress: checkFunction('onProgress', options.onProgress, () => {}),
  };
}

/**
 * How far from a window's end the probe across it keeps its requests on either side: the grace, but at most a
 * quarter of the window, so that both sides fit in a window however short.
 */
function boundaryMarginMs(windowMs: number, graceMs: number): number {
  return Math.min(graceMs, windowMs / 4);
}

/**
 * The probe across a window's end, when the server honours the contract: it needs a window that starts with one
 * request (the next window of an endpoint without path parameters; after one with them, whose next window is full,
 * one more request once it has ended), `limit - 1` more from its middle on, then after its end up to `limit`, all
 * passing in fixed windows, one passing and a 429 in sliding ones. A limit of 1 counts alike in both: no probe.
 */
function boundaryPlan(row: EndpointRow, paths: number, { graceMs, window }: Run): { requests: number; waitMs: number } {
  if (row.limit === 1) return { requests: 0, waitMs: 0 };
  const fresh = paths > 1;
  return {
    requests: (fresh ? 1 : 0) + row.limit - 1 + (window === 'fixed' ? row.limit : 2),
    waitMs: (fresh ? row.windowMs + graceMs : 0) + row.windowMs + boundaryMarginMs(row.windowMs, graceMs),
  };
}

function planOf(target: Target, run: Run): EndpointPlan {
  const { row, name, paths } = target;
  // One window of limit + 1, one request on another client's counter, then the next window: one request, or
  // limit + 1 over both paths to check that they share the counter; then the probe across a window's end.
  const secondWindow = paths.length > 1 ? row.limit + 1 : 1;
  const boundary = boundaryPlan(row, paths.length, run);
  return {
    endpoint: name,
    method: row.method,
    path: row.path,
    limit: row.limit,
    windowMs: row.windowMs,
    paths,
    requests: row.limit + 1 + 1 + secondWindow + boundary.requests,
    waitMs: row.windowMs + run.graceMs + boundary.waitMs,
    boundaryRequests: boundary.requests,
    boundaryWaitMs: boundary.waitMs,
  };
}

/**
 * What {@link verifyContract} would do with these options, without sending anything: the endpoints, their
 * paths, and the requests and waits of a run against a server that honours the contract.
 * Throws a `ListingLimitsError` naming the option when the options cannot work.
 */
export function planVerification(options: VerifyOptions): VerifyPlan {
  const run = resolve(options);
  const endpoints = run.targets.map((target) => planOf(target, run));
  return {
    baseUrl: run.baseUrl,
    window: run.window,
    endpoints,
    requests: endpoints.reduce((sum, e) => sum + e.requests, 0),
    waitMs: endpoints.reduce((sum, e) => sum + e.waitMs, 0),
  };
}

/** A response, as far as the checks need it. */
interface Answer {
  readonly status: number;
  readonly headers: Headers;
  /** When it arrived, on the run's clock. */
  readonly at: number;
}

/** A request that got no response: the endpoint cannot be probed further. */
class RequestFailed extends Error {}

function requests(n: number): string {
  return `${n} request${n === 1 ? '' : 's'}`;
}

/** Milliseconds as seconds rounded up to a tenth, so that "within 0.8 s" holds. */
function tenths(ms: number): number {
  return Math.ceil(ms / 100) / 10;
}

/** A header value as shown in a finding: numbers bare, anything else quoted. */
function shown(value: string): string {
  return /^-?\d+(\.\d+)?$/.test(value) ? value : JSON.stringify(value);
}

function members(value: string): Item[] | undefined {
  try {
    return parseList(value).filter((member): member is Item => !isInnerList(member));
  } catch {
    return undefined;
  }
}

/** One endpoint's probe: sends its requests one at a time and collects what contradicts the contract. */
class Probe {
  /** What the server does against the contract: told first. */
  private readonly findings: string[] = [];
  /** Rate-limit fields that disagree with the contract. */
  private readonly fieldFindings: string[] = [];
  private readonly findingKeys = new Set<string>();
  private readonly notes: string[] = [];
  private readonly fieldsSeen = new Set<string>();
  private requests = 0;
  private readonly limit: number;
  private readonly seconds: number;
  private windowSeen: WindowSeen;

  constructor(
    private readonly run: Run,
    private readonly target: Target,
  ) {
    this.limit = target.row.limit;
    this.seconds = target.row.windowMs / 1000;
    this.windowSeen = this.limit === 1 ? 'either' : 'unclear';
  }

  async report(): Promise<EndpointReport> {
    try {
      await this.probe();
    } catch (error) {
      if (!(error instanceof RequestFailed)) throw error;
      this.find('request', `request failed: ${error.message}`);
    }
    const missing = FIELDS.filter((field) => !this.fieldsSeen.has(field));
    if (missing.length === FIELDS.length) this.notes.push('sent no rate-limit fields');
    else if (missing.length > 0) this.notes.push(`sent no ${missing.join(', ')}`);
    const findings = [...this.findings, ...this.fieldFindings];
    return {
      ...planOf(this.target, this.run),
      ok: findings.length === 0,
      findings,
      notes: this.notes,
      requests: this.requests,
      windowSeen: this.windowSeen,
    };
  }

  /** Records a finding once per key, so that one fault seen on many responses is told once. */
  private find(key: string, text: string, list = this.findings): void {
    if (this.findingKeys.has(key)) return;
    this.findingKeys.add(key);
    list.push(text);
  }

  private findField(key: string, text: string): void {
    this.find(key, text, this.fieldFindings);
  }

  private note(text: string): void {
    if (!this.notes.includes(text)) this.notes.push(text);
  }

  private async send(path: string, authorization: string | undefined): Promise<Answer> {
    const { run } = this;
    this.requests++;
    let response: Response;
    try {
      response = await run.fetch(`${run.origin}${path}`, {
        method: this.target.row.method,
        headers: authorization === undefined ? {} : { authorization },
        redirect: 'manual',
        signal: AbortSignal.timeout(run.timeoutMs),
      });
    } catch (error) {
      const { name, message, cause } = error as Error & { cause?: { code?: string; message?: string } };
      if (name === 'TimeoutError') throw new RequestFailed(`no response within ${run.timeoutMs / 1000} s`);
      throw new RequestFailed(cause?.code ?? cause?.message ?? message);
    }
    // The body is not needed: drop it so that the connection is freed.
    await response.body?.cancel().catch(() => {});
    if (response.status !== 429 && response.status >= 400) {
      this.note(`${this.target.row.method} ${path} answered ${response.status}`);
    }
    return { status: response.status, headers: response.headers, at: run.now() };
  }

  private async wait(ms: number, reason: 'window' | 'busy' | 'boundary'): Promise<void> {
    const wait = Math.max(Math.ceil(ms), 0);
    this.run.onProgress({ type: 'wait', endpoint: this.target.name, ms: wait, reason });
    await this.run.sleep(wait);
  }

  private async probe(): Promise<void> {
    const { run, target, limit } = this;
    const [first, second = first] = target.paths as [string, string?];
    let start = run.now();
    let opening = await this.send(first, run.token);
    if (opening.status === 429) {
      // The counter is in use, by an earlier run or other traffic of this client: start in a fresh window.
      const retryAfter = Number(opening.headers.get('retry-after'));
      const ms = Number.isSafeInteger(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : target.row.windowMs;
      const wait = Math.min(ms, target.row.windowMs) + run.graceMs;
      this.note(`the counter was in use: waited ${Math.ceil(wait / 1000)} s for a fresh window`);
      await this.wait(wait, 'busy');
      start = run.now();
      opening = await this.send(first, run.token);
    }

    const window1 = await this.burst([first], limit + 1, start, opening);
    if (this.tooSlow(window1.passed, start)) return;
    if (window1.passed !== limit) {
      this.find('limit', `allowed ${requests(window1.passed)}, contract says ${limit}`);
      if (window1.refused) this.checkRetryAfter(window1.refused);
      return;
    }
    const refused = window1.refused as Answer;
    const retryAfter = this.checkRetryAfter(refused);

    const other = await this.send(first, run.otherToken);
    if (other.status === 429) this.find('token', 'a different token shares the counter');

    // Fixed windows end `windowMs` after their first request; Retry-After may tell of an earlier end.
    const windowEnd = start + target.row.windowMs;
    const retryEnd = retryAfter === undefined ? Infinity : refused.at + retryAfter * 1000;
    await this.wait(Math.min(retryEnd, windowEnd) + run.graceMs - run.now(), 'window');

    // The next window: one request shows that it opened; with path parameters, limit + 1 over both paths
    // (the second first) show that they share one counter.
    const start2 = run.now();
    const window2 =
      target.paths.length > 1
        ? await this.burst([second, first], limit + 1, start2)
        : await this.burst([first], 1, start2);
    if (this.tooSlow(window2.passed, start2)) return;
    if (window2.passed === 0) {
      this.find(
        'window',
        retryEnd < windowEnd
          ? `still refused when Retry-After had passed (${retryAfter} s)`
          : `window longer than the contract's: still refused when its ${this.seconds} s had passed`,
      );
    } else if (target.paths.length > 1) {
      if (window2.passed > limit) this.find('params', 'path parameters counted separately');
      else if (window2.passed < limit) {
        this.find('limit', `allowed ${requests(window2.passed)} in the next window, contract says ${limit}`);
      }
    }
    if (window2.refused) this.checkRetryAfter(window2.refused);
    if (window2.passed === 0 || limit === 1) return;
    if (target.paths.length === 1) {
      await this.boundary(start2, window2.last as Answer);
      return;
    }
    // With path parameters the next window is full: the probe across a window's end opens the one after it.
    await this.wait(start2 + target.row.windowMs + run.graceMs - run.now(), 'window');
    const start3 = run.now();
    const opening3 = await this.send(first, run.token);
    this.checkFields(opening3, 1);
    if (opening3.status === 429) {
      this.find('window', `window longer than the contract's: still refused when its ${this.seconds} s had passed`);
      return;
    }
    await this.boundary(start3, opening3);
  }

  /**
   * The probe across a window's end, in the window that began at `start` with one request, `opening`: `limit - 1`
   * more from its middle on, done at least the margin before its end; then, the margin after its end, up to `limit`
   * until the first 429. Fixed windows let all `2 × limit - 1` pass within less than a window; a sliding window still
   * holds the `limit - 1`, so it lets one pass and refuses the next. A side that does not fit its time tells nothing.
   */
  private async boundary(start: number, opening: Answer): Promise<void> {
    const { run, target, limit } = this;
    const { windowMs } = target.row;
    const [path] = target.paths as [string];
    const margin = boundaryMarginMs(windowMs, run.graceMs);
    await this.wait(start + windowMs / 2 - run.now(), 'boundary');
    const beforeStart = run.now();
    const before = await this.burst([path], limit - 1, start, undefined, 1);
    if (before.passed < limit - 1) {
      this.find('limit', `allowed ${requests(1 + before.passed)} in a window, contract says ${limit}`);
      if (before.refused) this.checkRetryAfter(before.refused);
      return;
    }
    const beforeEnd = run.now();
    if (beforeEnd - start > windowMs - margin || beforeEnd - start >= windowMs) {
      this.find(
        'boundary',
        `window kind inconclusive: ${requests(limit - 1)} sent from the middle of a window took ` +
          `${tenths(beforeEnd - beforeStart)} s, too close to its end`,
      );
      return;
    }

    await this.wait(opening.at + windowMs + margin - run.now(), 'window');
    const after: Answer[] = [];
    while (after.length < limit && after.at(-1)?.status !== 429) after.push(await this.send(path, run.token));
    const last = after.at(-1) as Answer;
    const passed = after.length - (last.status === 429 ? 1 : 0);
    const span = last.at - beforeStart;
    let seen: WindowSeen = 'unclear';
    if (passed === 1) seen = 'sliding';
    else if (passed < limit) {
      this.find(
        'boundary',
        `neither fixed nor sliding window: allowed ${requests(limit - 1)} before the end of a window and ` +
          `${passed} after it; a fixed window allows ${limit} after it, a sliding one 1`,
      );
    } else if (span < windowMs) seen = 'fixed';
    else {
      this.find(
        'boundary',
        `window kind inconclusive: ${requests(2 * limit - 1)} across the end of a window took ${tenths(span)} s, ` +
          `not less than the window of ${this.seconds} s`,
      );
    }
    // The count in the window: from 1 in a fixed window, after the limit - 1 still held in a sliding one.
    after.forEach((answer, i) =>
      this.checkFields(answer, seen === 'fixed' ? i + 1 : seen === 'sliding' ? limit + i : undefined),
    );
    this.windowSeen = seen;
    if (seen === 'fixed' && run.window === 'sliding') {
      this.find(
        'boundary',
        `fixed window: allowed ${requests(2 * limit - 1)} within ${tenths(span)} s across the end of a window ` +
          `(${limit - 1} before it, ${limit} after it); a sliding window allows ${limit} in any ${this.seconds} s`,
      );
    } else if (seen === 'sliding') {
      if (run.window === 'fixed') {
        this.find(
          'boundary',
          `sliding window: allowed ${requests(limit - 1)} before the end of a window and 1 after it, then 429; ` +
            `a fixed window allows ${limit} after it`,
        );
      }
      const retryAfter = this.checkRetryAfter(last);
      // The oldest request counted is the first sent from the middle of the window: it leaves a window after it.
      const soonest = Math.floor((beforeStart + windowMs - last.at) / 1000);
      const latest = Math.ceil((beforeEnd + windowMs - (after[0] as Answer).at) / 1000);
      if (retryAfter !== undefined && (retryAfter < soonest || retryAfter > latest)) {
        this.find(
          'retry-after-boundary',
          `Retry-After says ${retryAfter} on the 429 after the end of a window; its oldest request counted ` +
            `leaves the window in ${soonest === latest ? soonest : `${soonest} to ${latest}`} s`,
        );
      }
    }
  }

  /**
   * Whether `limit + 1` requests all passed only because they took longer than a window, which may have ended
   * on the way: then nothing can be told of the limit, and that is the finding.
   */
  private tooSlow(passed: number, start: number): boolean {
    const took = this.run.now() - start;
    if (passed <= this.limit || took < this.target.row.windowMs) return false;
    this.find(
      'limit',
      `inconclusive: ${requests(passed)} took ${Number((took / 1000).toFixed(1))} s, ` +
        `longer than the contract's window of ${this.seconds} s`,
    );
    return true;
  }

  /**
   * Sends up to `max` requests in the window that began at `start`, cycling through `paths`, and stops at the
   * first 429. `opening` is the first response when it was already sent; `counted` the requests the window counted
   * before these.
   */
  private async burst(
    paths: readonly string[],
    max: number,
    start: number,
    opening?: Answer,
    counted = 0,
  ): Promise<{ passed: number; refused?: Answer; last?: Answer }> {
    let answer: Answer | undefined;
    for (let n = 1; n <= max; n++) {
      answer = n === 1 && opening ? opening : await this.send(paths[(n - 1) % paths.length] ?? '', this.run.token);
      // Past the window's length the server may have begun a new window: the remaining count is unknown.
      this.checkFields(answer, answer.at - start < this.target.row.windowMs ? counted + n : undefined);
      if (answer.status === 429) return { passed: n - 1, refused: answer, last: answer };
    }
    return { passed: max, last: answer };
  }

  /**
   * Checks the rate-limit fields of the `n`th response of a window against the contract; `n` is undefined
   * when the window may have ended, and the remaining count is not checked.
   */
  private checkFields(answer: Answer, n: number | undefined): void {
    const { headers } = answer;
    const { limit, seconds } = this;
    const refused = answer.status === 429;
    const remaining = n === undefined ? undefined : refused ? 0 : limit - n;
    const on = refused ? 'on the 429' : `on request ${n}`;
    for (const field of FIELDS) if (headers.has(field)) this.fieldsSeen.add(field);

    let policyName: unknown;
    const policy = headers.get('ratelimit-policy');
    if (policy !== null) {
      const policies = members(policy);
      const matching = policies?.find(([, p]) => p.get('q') === limit && p.get('w') === seconds);
      policyName = (matching ?? policies?.[0])?.[0];
      if (!matching) this.findField('policy', `RateLimit-Policy says ${policy}, contract says q=${limit};w=${seconds}`);
    }

    const ratelimit = headers.get('ratelimit');
    if (ratelimit !== null) {
      const all = members(ratelimit);
      const params = (all?.find(([name]) => name === policyName) ?? all?.[0])?.[1];
      const r = params?.get('r');
      const t = params?.get('t');
      if (remaining !== undefined && r !== remaining) {
        this.findField('r', `RateLimit says ${ratelimit} ${on}, expected r=${remaining}`);
      }
      if (typeof t !== 'number' || t < 0 || t > seconds) {
        this.findField('t', `RateLimit says ${ratelimit}, not t=0 to t=${seconds} (the contract's window)`);
      }
    }

    const limitField = headers.get('x-ratelimit-limit');
    if (limitField !== null && limitField !== String(limit)) {
      this.findField('x-limit', `X-RateLimit-Limit says ${shown(limitField)}, contract says ${limit}`);
    }
    const remainingField = headers.get('x-ratelimit-remaining');
    if (remainingField !== null && remaining !== undefined && remainingField !== String(remaining)) {
      this.findField('x-remaining', `X-RateLimit-Remaining says ${shown(remainingField)} ${on}, expected ${remaining}`);
    }
    const resetAfter = headers.get('x-ratelimit-reset-after');
    if (resetAfter !== null) {
      const value = Number(resetAfter);
      if (!/^\d+(\.\d+)?$/.test(resetAfter) || value > seconds) {
        this.findField(
          'x-reset-after',
          `X-RateLimit-Reset-After says ${shown(resetAfter)}, not 0 to ${seconds} s (the contract's window)`,
        );
      }
    }
    const reset = headers.get('x-ratelimit-reset');
    if (reset !== null) {
      // An epoch second within a window from now: now by the server's Date, or else by this run's clock (a
      // server whose clock is faked in a test still writes Date from the real one). Both are whole seconds
      // apart from Reset, which is rounded up: one second of slack either way.
      const date = Date.parse(headers.get('date') ?? '');
      const within = (now: number) => Number(reset) - now / 1000 >= -1 && Number(reset) - now / 1000 <= seconds + 1;
      if (!/^\d+$/.test(reset) || !(within(answer.at) || (!Number.isNaN(date) && within(date)))) {
        this.findField(
          'x-reset',
          `X-RateLimit-Reset says ${shown(reset)}, ` +
            `not within ${seconds} s (the contract's window) after the response's Date`,
        );
      }
    }
  }

  /** Checks the Retry-After of a 429; returns its seconds when they are usable. */
  private checkRetryAfter(answer: Answer): number | undefined {
    const value = answer.headers.get('retry-after');
    if (value === null) {
      this.find('retry-after', 'no Retry-After on 429');
      return undefined;
    }
    if (!/^\d+$/.test(value)) {
      this.find('retry-after', `Retry-After says ${shown(value)}, not whole seconds`);
      return undefined;
    }
    const seconds = Number(value);
    if (seconds > this.seconds) {
      this.find('retry-after', `Retry-After says ${seconds}, longer than the contract's window of ${this.seconds} s`);
    }
    const t = members(answer.headers.get('ratelimit') ?? '')?.[0]?.[1].get('t');
    if (typeof t === 'number' && seconds < t) {
      this.find('retry-after-t', `Retry-After says ${seconds}, earlier than RateLimit t=${t}`);
    }
    return seconds;
  }
}

/**
 * Probes a running API and checks, one endpoint after another, that it enforces the table: exactly `limit`
 * requests pass and the next gets a 429 with a Retry-After; the rate-limit fields agree with the table; another
 * token has its own counter; the window opens again when it should; different path parameters share the
 * counter; across a window's end, the server counts the kind of window `window` says.
 * A server that honours the contract never gets more than `limit + 1` requests on a counter in one of its windows:
 * a fixed window from its first request, any `windowMs` of a sliding one. Across the end of a fixed window,
 * `2 × limit - 1` pass within less than `windowMs`, in two windows: that is what tells the kinds apart.
 * Rejects with a `ListingLimitsError` naming the option when the options cannot work; a server that cannot be
 * reached is a finding, not an error.
 */
export async function verifyContract(options: VerifyOptions): Promise<VerifyReport> {
  const run = resolve(options);
  const endpoints: EndpointReport[] = [];
  for (const [i, target] of run.targets.entries()) {
    run.onProgress({ type: 'endpoint', endpoint: target.name, index: i + 1, total: run.targets.length });
    const result = await new Probe(run, target).report();
    endpoints.push(result);
    run.onProgress({ type: 'done', result });
  }
  return { baseUrl: run.baseUrl, window: run.window, ok: endpoints.every((e) => e.ok), endpoints };
}
