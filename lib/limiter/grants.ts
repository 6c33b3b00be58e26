// Extended limits for approved clients (rule 6): option `grants`, checked and compiled, and the grants' endpoints.
import ipaddr from 'ipaddr.js';
import { Lookups } from '../shared/lookups.js';
import { type Checker, show, typoOf } from '../shared/check.js';
import type { ListingLimitsErrorCode } from '../shared/errors.js';
import { MAX_SLIDING_LIMIT } from '../stores/store.js';
import { type CompiledEndpoint, compileEndpoint, type CounterOf } from './endpoint.js';
import type { Client } from './identify.js';
import { type IpKey, tokenKey } from '../contract/keys.js';
import type { RecordCache } from '../records/cache.js';
import { checkRow, refuseDuplicates, rowShape } from '../contract/table.js';
import type { EndpointRow } from '../contract/listings.js';
import { LARGEST_FIELD_INTEGER, type Limit, type WindowKind } from '../contract/limit.js';
import type { Grant } from '../records/types.js';
import type { ListingLimitsOptions } from './types.js';
import type { Request } from 'express';

const UNLIMITED = 'unlimited';
const grantFields = ['multiplier', 'rows'];

type Limited = Exclude<Grant, typeof UNLIMITED>;

/** `limit × multiplier` rounded down, at least 1, on the digits as written: `25 × 1.16` is 29, not 28.999…. */
function product(limit: number, multiplier: number): bigint {
  const [digits = '0', exponent = '0'] = multiplier.toExponential().split('e');
  const [whole = '0', fraction = ''] = digits.split('.');
  const scale = Number(exponent) - fraction.length;
  const exact = BigInt(limit) * BigInt(whole + fraction);
  const rounded = scale >= 0 ? exact * 10n ** BigInt(scale) : exact / 10n ** BigInt(-scale);
  return rounded < 1n ? 1n : rounded;
}

interface GrantTable {
  /** Each endpoint's shape (see rowShape) → its name. */
  readonly paths: ReadonlyMap<string, string>;
  readonly rows: readonly EndpointRow[];
  readonly sliding: boolean;
}

/** A sliding window keeps each request it counts: its rows' limits are bounded. */
export function refuseLargeRow(check: Checker, row: EndpointRow, field: string, code?: ListingLimitsErrorCode): void {
  if (row.limit > MAX_SLIDING_LIMIT) {
    const why = 'with sliding windows, which keep every request of the window';
    check.fail(code ?? 'ERR_INVALID_OPTION', field, `must be at most ${MAX_SLIDING_LIMIT} ${why}; got ${row.limit}.`);
  }
}

/** Checks a grant of the options or of a lookup; its rows must replace rows of the table. */
export function checkGrant(check: Checker, grant: unknown, at: string, table: GrantTable): Grant {
  const { paths, sliding } = table;
  if (grant === UNLIMITED) return grant;
  const keys = typeof grant === 'object' && grant !== null ? Object.keys(grant) : [];
  const meant = keys.length === 1 && !grantFields.includes(keys[0] as string) && typoOf(keys[0] as string, grantFields);
  if (meant) check.fail('ERR_UNKNOWN_OPTION', `${at}.${keys[0]}`, `is not a grant field. Did you mean \`${meant}\`?`);
  if (keys.length !== 1 || (keys[0] !== 'multiplier' && keys[0] !== 'rows')) {
    check.invalid(at, `must be 'unlimited', { multiplier } or { rows }; got ${show(grant)}.`);
  }
  const g = grant as { multiplier?: unknown; rows?: unknown };
  if (keys[0] === 'multiplier') {
    if (typeof g.multiplier !== 'number' || !Number.isFinite(g.multiplier) || g.multiplier <= 0) {
      check.invalid(`${at}.multiplier`, `must be a positive number; got ${show(g.multiplier)}.`);
    }
    const multiplier = g.multiplier;
    const largestRow = table.rows.reduce((a, b) => (b.limit > a.limit ? b : a));
    const largestProduct = product(largestRow.limit, multiplier);
    if (largestProduct > BigInt(LARGEST_FIELD_INTEGER)) {
      check.invalid(
        `${at}.multiplier`,
        `makes a limit of ${largestProduct} on ${largestRow.method} ${largestRow.path}; a header field carries ` +
          `at most ${LARGEST_FIELD_INTEGER} (15 digits). Grant 'unlimited', or a smaller multiplier.`,
      );
    }
    const largest = Number(largestProduct);
    if (sliding && largest > MAX_SLIDING_LIMIT) {
      check.invalid(
        `${at}.multiplier`,
        `makes a limit of ${largest}; sliding windows keep every request of the window, up to ${MAX_SLIDING_LIMIT}.`,
      );
    }
    return { multiplier: g.multiplier };
  }
  if (!Array.isArray(g.rows) || g.rows.length === 0)
    check.invalid(`${at}.rows`, `must be a non-empty array of rows; got ${show(g.rows)}.`);
  const rows = g.rows.map((raw: unknown, i: number) => {
    const row = checkRow(check, raw, `${at}.rows[${i}]`);
    if (!paths.has(rowShape(row)))
      check.invalid(`${at}.rows[${i}]`, `(${row.method} ${row.path}) replaces no row of the table.`);
    if (sliding) refuseLargeRow(check, row, `${at}.rows[${i}].limit`);
    return row;
  });
  refuseDuplicates(check, rows, `${at}.rows`, true);
  return { rows };
}

export type CompiledGrants = ReturnType<typeof compileGrants>;

/** The `grants` option's lookup, and each granted endpoint, made once per grant and endpoint. */
export function compileGrants(
  check: Checker,
  options: ListingLimitsOptions,
  context: {
    counterOf: CounterOf;
    window: WindowKind;
    table: GrantTable;
    ipOf: IpKey;
    cacheMs: number;
    cache: RecordCache;
  },
) {
  const { grants } = options;
  if (
    grants !== undefined &&
    typeof grants !== 'function' &&
    (typeof grants !== 'object' || grants === null || Array.isArray(grants))
  ) {
    check.invalid(
      'options.grants',
      `must be an object of grants by token or IP, or a lookup function; got ${show(grants)}.`,
    );
  }
  const { counterOf, window, ipOf, table } = context;
  const { paths } = table;
  const variants = new Map<string, CompiledEndpoint>();
  const variant = (base: CompiledEndpoint, grant: Limited): CompiledEndpoint => {
    let limits: Limit[];
    let label: string;
    if ('multiplier' in grant) {
      limits = base.limits.map(({ limit, windowMs }) => ({
        limit: Number(product(limit, grant.multiplier)),
        windowMs,
      }));
      label = `x${grant.multiplier}`;
    } else {
      const rows = grant.rows.filter((r) => paths.get(rowShape(r)) === base.name);
      if (rows.length === 0) return base;
      limits = rows.map(({ limit, windowMs }) => ({ limit, windowMs }));
      label = limits.map(({ limit, windowMs }) => `${limit}/${windowMs / 1000}s`).join(', ');
    }
    const name = `${base.name} (${label})`;
    let found = variants.get(name);
    if (!found) {
      found = compileEndpoint(counterOf, { name, window, limits });
      variants.set(name, found);
    }
    return found;
  };

  let find: ((client: Client, req: Request) => Grant | undefined | Promise<Grant | undefined>) | undefined;
  let known: (client: Client) => Grant | undefined = () => undefined;
  if (typeof grants === 'function') {
    // Answers are kept per client key, and concurrent requests of one client share one call.
    const answers = new Lookups<Grant | undefined>(context.cacheMs);
    known = (client) => answers.peek(client.key);
    find = (client, req) =>
      answers.get(client.key, async () => {
        const answer = await grants({ key: client.key, token: client.token, ip: req.ip }, req);
        return answer === undefined || answer === null ? undefined : checkGrantAtRequest(check, answer, table);
      });
  } else if (grants !== undefined) {
    const byToken = new Map<string, Grant>();
    const byAddress = new Map<string, Grant>();
    for (const [who, raw] of Object.entries(grants)) {
      const grant = checkGrant(check, raw, `options.grants[${JSON.stringify(who)}]`, table);
      if (ipaddr.isValid(who)) byAddress.set(ipOf(who), grant);
      else byToken.set(tokenKey(who), grant);
    }
    known = (client) =>
      (client.tokenKey !== undefined ? byToken.get(client.tokenKey) : undefined) ??
      (byAddress.size > 0 ? byAddress.get(client.ip) : undefined);
    find = known;
  }
  const { cache } = context;
  return {
    /** Undefined without the option. */
    find,
    /** A client's grant known without a request (runtime, the option's, a lookup's kept answer). */
    known: (client: Client) => cache.grantOf(client) ?? known(client),
    /** The endpoint a limited grant counts a client on: the table's, or a variant of it made once. */
    variant,
    /** Every counter of the endpoint, in order: the table's, then each grant's variant made so far. */
    countersOf: (base: CompiledEndpoint) => [
      base,
      ...[...variants.values()].filter((v) => v.name.startsWith(`${base.name} (`)),
    ],
  };
}

/** A lookup's answer that is not a grant is a bug of the app, reported to its error handler with the field named. */
function checkGrantAtRequest(check: Checker, answer: unknown, table: GrantTable): Grant {
  try {
    return checkGrant(check, answer, 'options.grants() result', table);
  } catch (error) {
    throw new TypeError((error as Error).message);
  }
}
