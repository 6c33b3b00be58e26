// A limits table: a listing's name or custom rows, checked row by row, and when two rows are one endpoint.
import { METHODS } from 'node:http';
import { compile, type Key, pathToRegexp } from 'path-to-regexp';
import { type Checker, show } from '../shared/check.js';
import { listingChoices, listingHint, listingOf } from './listing-names.js';
import { type EndpointRow, listings } from './listings.js';
import { compilePath } from './match.js';
import { LARGEST_FIELD_INTEGER, type Limit } from './limit.js';

const rowFields = ['method', 'path', 'limit', 'windowMs'] as const;

/** What makes two rows one endpoint: `/v1/bots/:id` and `/V1/Bots/:botId` match the same requests. */
export function rowShape(row: Pick<EndpointRow, 'method' | 'path'>): string {
  return `${row.method} ${compilePath(row.path).source.toLowerCase()}`;
}

export function checkRow(check: Checker, row: unknown, at: string): EndpointRow {
  const fail: (field: string, message: string) => never = (field, message) =>
    check.fail('ERR_INVALID_ROW', `${at}${field}`, message);
  if (typeof row !== 'object' || row === null || Array.isArray(row)) {
    fail('', `must be an object { method, path, limit, windowMs }; got ${show(row)}.`);
  }
  check.unknownKeys(row, rowFields, (key) => `${at}.${key}`, 'a row field');
  const { method, path, limit, windowMs } = row as Record<string, unknown>;
  if (typeof method !== 'string' || !METHODS.includes(method)) {
    fail('.method', `must be an upper-case HTTP method such as "GET"; got ${show(method)}.`);
  }
  if (method === 'HEAD') fail('.method', 'cannot be "HEAD": HEAD requests are counted on the GET row.');
  if (typeof path !== 'string' || !/^\/[\x20-\x7e]*$/.test(path)) {
    fail('.path', `must be a path of printable ASCII starting with "/"; got ${show(path)}.`);
  }
  try {
    compilePath(path);
  } catch (error) {
    fail('.path', `is not a valid path-to-regexp path: ${(error as Error).message}`);
  }
  const checked = check.count(limit, `${at}.limit`, 'ERR_INVALID_ROW');
  if (checked > LARGEST_FIELD_INTEGER) {
    fail(
      '.limit',
      `must be at most ${LARGEST_FIELD_INTEGER}, the largest integer a header field carries (15 digits); ` +
        `got ${checked}.`,
    );
  }
  return {
    method,
    path,
    limit: checked,
    windowMs: check.seconds(windowMs, `${at}.windowMs`, 'ERR_INVALID_ROW'),
  };
}

/** With `several`, an endpoint may have several rows, each with its own window. */
export function refuseDuplicates(check: Checker, rows: readonly EndpointRow[], field: string, several: boolean): void {
  const seen = new Map<string, number>();
  rows.forEach((row, i) => {
    const shape = several ? `${rowShape(row)} ${row.windowMs}` : rowShape(row);
    const first = seen.get(shape);
    if (first !== undefined) {
      const why = several
        ? 'one method and path may have several rows, each with a different windowMs.'
        : 'one method and path may have only one row.';
      check.fail(
        'ERR_DUPLICATE_ROW',
        `${field}[${i}]`,
        `repeats ${field}[${first}] (${row.method} ${row.path}): ${why}`,
      );
    }
    seen.set(shape, i);
  });
}

export interface TableEndpoint {
  readonly method: string;
  readonly path: string;
  /** `<METHOD> <path>`: the counter's name, and the endpoint's in headers and hooks. */
  readonly name: string;
  readonly limits: readonly Limit[];
  /** The path's parameters. */
  readonly keys: readonly string[];
  /** The path with every parameter's value, encoded; a wildcard's value is one segment. */
  readonly toPath: (params: Readonly<Record<string, string>>) => string;
}

function compiledPath(path: string): Pick<TableEndpoint, 'keys' | 'toPath'> {
  const { keys } = pathToRegexp(path);
  const build = compile(path, { encode: encodeURIComponent });
  const valueOf = (params: Readonly<Record<string, string>>, { name, type }: Key) =>
    type === 'wildcard' ? [params[name] as string] : params[name];
  return {
    keys: keys.map((key) => key.name),
    toPath: (params) => build(Object.fromEntries(keys.map((key) => [key.name, valueOf(params, key)]))),
  };
}

/** Rows of one method and path are one endpoint, in the order of its first row. */
export function endpointsOf(rows: readonly EndpointRow[]): TableEndpoint[] {
  const byShape = new Map<string, TableEndpoint & { limits: Limit[] }>();
  for (const row of rows) {
    const shape = rowShape(row);
    let endpoint = byShape.get(shape);
    if (!endpoint) {
      const { method, path } = row;
      endpoint = { method, path, name: `${method} ${path}`, limits: [], ...compiledPath(path) };
      byShape.set(shape, endpoint);
    }
    endpoint.limits.push({ limit: row.limit, windowMs: row.windowMs });
  }
  return [...byShape.values()];
}

/** A listing's name or custom rows; with `several`, an endpoint's rows may have a window each. */
export function checkTable(
  check: Checker,
  listing: unknown,
  field = 'listing',
  several = false,
): readonly EndpointRow[] {
  if (typeof listing === 'string') {
    const name = listingOf(listing);
    if (name) return listings[name];
    check.fail(
      'ERR_UNKNOWN_LISTING',
      field,
      `${show(listing)} is not a listing. Use ${listingChoices()}, or an array of rows.${listingHint(listing)}`,
    );
  }
  if (!Array.isArray(listing) || listing.length === 0) {
    check.fail(
      'ERR_UNKNOWN_LISTING',
      field,
      `must be ${listingChoices()}, or a non-empty array of rows; got ${show(listing)}.`,
    );
  }
  const rows = listing.map((row, i) => checkRow(check, row, `${field}[${i}]`));
  refuseDuplicates(check, rows, field, several);
  return rows;
}
