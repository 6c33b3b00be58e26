// The verifier's options, checked once into a run: the endpoints to probe, their paths, tokens, clock and I/O.
import { randomBytes } from 'node:crypto';
import { closest } from 'fastest-levenshtein';
import { Checker, MAX_TIMER_MS, type Whole } from '../shared/check.js';
import { listingNames } from '../contract/listings.js';
import { checkTable, endpointsOf, rowShape, type TableEndpoint } from '../contract/table.js';
import { type Limit, windowKinds } from '../contract/limit.js';
import type { VerifyEvent, VerifyOptions } from './types.js';

const verifyOptionNames = [
  'baseUrl',
  'listing',
  'token',
  'otherToken',
  'only',
  'params',
  'window',
  'concurrency',
  'graceMs',
  'timeoutMs',
  'strictHeaders',
  'fetch',
  'sleep',
  'now',
  'onProgress',
] as const;

/** The options, checked and with their defaults: what the probes and their runner read. */
export type Run = ReturnType<typeof resolveRun>;

/** One endpoint to probe: `limits` shortest window first, a second path where it has parameters. */
export interface Target extends TableEndpoint {
  readonly paths: readonly string[];
}

const verifyCheck: Checker = new Checker('verifyContract');

function invalid(field: string, message: string): never {
  return verifyCheck.invalid(`options.${field}`, message);
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

function secondValue(value: string): string {
  return /^\d+$/.test(value) ? String(BigInt(value) + 1n) : `${value}-2`;
}

function checkParams(value: unknown, known: ReadonlySet<string>): Map<string, readonly [string, string]> {
  const params = new Map<string, readonly [string, string]>();
  const given = verifyCheck.options(value, 'options.params', 'of path parameter values, e.g. { id: "123" }');
  for (const [name, one] of Object.entries(given)) {
    if (!known.has(name)) {
      const names = [...known].map((n) => `:${n}`).join(', ') || 'none';
      invalid(`params.${name}`, `is not a path parameter of the endpoints checked (parameters: ${names}).`);
    }
    const values: unknown[] = Array.isArray(one) ? one : [one];
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

function pathsOf({ keys, toPath }: TableEndpoint, params: ReadonlyMap<string, readonly [string, string]>): string[] {
  const defaults = ['1', '2'] as const;
  const fill = (which: 0 | 1) =>
    toPath(Object.fromEntries(keys.map((key) => [key, params.get(key)?.[which] ?? defaults[which]])));
  return keys.length === 0 ? [fill(0)] : [fill(0), fill(1)];
}

// A row whose limit a longer window's row does not exceed never refuses alone: no probe can tell it is there.
function sortedLimits(limits: readonly Limit[], name: string, rowIndex: (limit: Limit) => number): Limit[] {
  const sorted = [...limits].sort((a, b) => a.windowMs - b.windowMs);
  sorted.forEach((row, i) => {
    const longer = sorted.slice(i + 1).find((other) => other.limit <= row.limit);
    if (longer) {
      const per = (l: Limit) => `${l.limit} per ${l.windowMs / 1000} s`;
      verifyCheck.fail(
        'ERR_INVALID_ROW',
        `options.listing[${rowIndex(row)}]`,
        `(${name}, ${per(row)}) is never reached: options.listing[${rowIndex(longer)}] allows no more ` +
          `(${per(longer)}), so it refuses first. The rows of one endpoint must allow more requests as their ` +
          'windows grow.',
      );
    }
  });
  return sorted;
}

// In parts of at most MAX_TIMER_MS: a window may last a year.
async function sleep(ms: number): Promise<void> {
  for (let left = ms; left > 0; left -= MAX_TIMER_MS) {
    await new Promise<void>((done) => setTimeout(done, Math.min(left, MAX_TIMER_MS)));
  }
}

export function resolveRun(options: VerifyOptions) {
  if (typeof options !== 'object' || options === null)
    verifyCheck.invalid('options', 'must be an object { baseUrl, listing }.');
  verifyCheck.unknownKeys(options, verifyOptionNames, (key) => `options.${key}`);
  const { origin, path: base } = verifyCheck.baseUrl(options.baseUrl, 'options.baseUrl');
  if (options.listing === undefined) {
    const names = listingNames.map((name) => JSON.stringify(name));
    invalid(
      'listing',
      `is required: ${new Intl.ListFormat('en', { type: 'disjunction' }).format([...names, 'an array of rows'])}.`,
    );
  }
  const rows = checkTable(verifyCheck, options.listing, 'options.listing', true);
  const listingName = typeof options.listing === 'string' ? `listing ${options.listing}` : 'the table';
  const endpoints = endpointsOf(rows);
  const names = endpoints.map((endpoint) => endpoint.name);
  const only = checkOnly(options.only, names, listingName);
  const chosen = endpoints.filter((endpoint) => !only || only.has(endpoint.name));
  const known = new Set(chosen.flatMap((endpoint) => endpoint.keys));
  const params = checkParams(options.params, known);
  const token = verifyCheck.token(options.token, 'options.token');
  const otherToken =
    verifyCheck.token(options.otherToken, 'options.otherToken') ??
    `listing-limits-verify-${randomBytes(8).toString('hex')}`;
  if (otherToken === token) invalid('otherToken', 'must differ from options.token.');
  const targets = chosen.map((endpoint): Target => {
    const shape = rowShape(endpoint);
    const rowIndex = (limit: Limit) =>
      rows.findIndex((row) => rowShape(row) === shape && row.windowMs === limit.windowMs);
    return {
      ...endpoint,
      limits: sortedLimits(endpoint.limits, endpoint.name, rowIndex),
      paths: pathsOf(endpoint, params).map((p) => `${base}${p}`),
    };
  });
  const whole = (field: 'concurrency' | 'graceMs' | 'timeoutMs', bounds: Whole) =>
    verifyCheck.whole(options[field], `options.${field}`, bounds);
  return {
    baseUrl: `${origin}${base}`,
    origin,
    targets,
    token,
    otherToken,
    window: options.window === undefined ? 'fixed' : verifyCheck.oneOf(options.window, windowKinds, 'options.window'),
    concurrency: whole('concurrency', { unit: 'endpoints', least: 1, fallback: targets.length }),
    graceMs: whole('graceMs', { unit: 'milliseconds', least: 0, fallback: 1000 }),
    timeoutMs: whole('timeoutMs', { unit: 'milliseconds', least: 1, most: MAX_TIMER_MS, fallback: 10_000 }),
    strictHeaders: verifyCheck.boolean(options.strictHeaders, 'options.strictHeaders'),
    fetch: verifyCheck.function(options.fetch, 'options.fetch', globalThis.fetch),
    sleep: verifyCheck.function(options.sleep, 'options.sleep', sleep),
    now: verifyCheck.function(options.now, 'options.now', Date.now),
    onProgress: verifyCheck.function(options.onProgress, 'options.onProgress', (_event: VerifyEvent) => {}),
  };
}
