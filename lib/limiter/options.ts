// Options of listingLimits(): checked, then compiled by each feature's module into the steps of the request path.
import type { Request } from 'express';
import { BanRule, checkBanOption } from './ban-rule.js';
import { Checker } from '../shared/check.js';
import type { Step } from './context.js';
import { type CompiledEndpoint, compileEndpoint } from './endpoint.js';
import { checkGrant, compileGrants } from './grants.js';
import { compileHeaders, type HeaderWriter } from '../contract/headers.js';
import { type OnError, reporter, type Warn, warner } from '../shared/hooks.js';
import { compileIdentify, type Identify, identifyOptions } from './identify.js';
import type { PagesLink } from '../records/pages-link.js';
import { compileMatcher } from '../contract/match.js';
import { type Table, tableOf } from './mount-order.js';
import { checkMetrics, Metrics } from './observe/metrics.js';
import { Records } from '../records/records.js';
import { MAX_SLIDING_LIMIT } from '../stores/store.js';
import { checkStore } from '../stores/option.js';
import { contractOf } from '../stores/adapter.js';
import { memoryCounterOf } from '../stores/memory/store.js';
import { checkTable, endpointsOf, rowShape } from '../contract/table.js';
import { Traffic } from './observe/traffic.js';
import { Usage } from './observe/usage.js';
import type { LimitHandler, ListingLimitsOptions } from './types.js';
import type { EndpointRow } from '../contract/listings.js';
import { windowKinds } from '../contract/limit.js';
import { Waiting } from '../stores/waiting.js';
import { DEFAULT_CALL_TIMEOUT_MS } from '../stores/call-bound.js';
import { MemoryState } from '../stores/memory/state.js';

const limiterOptionNames = [
  'store',
  'window',
  ...identifyOptions,
  'skip',
  'headers',
  'handler',
  'cacheMs',
  'ban',
  'onBan',
  'grants',
  'mode',
  'onLimit',
  'onChange',
  'metrics',
  'onError',
] as const;

/**
 * Options checked and compiled: everything the request path needs, all fields required.
 * @internal
 */
export interface Config {
  readonly match: (method: string, path: string) => CompiledEndpoint | undefined;
  /** The paths of the table's endpoints. */
  readonly paths: readonly string[];
  /** The table's endpoints as the check of the middleware's place among the app's routes needs them. */
  readonly endpoints: Table;
  /** Tells of a mistake in how the middleware is set up: a process warning, and `onError`. */
  readonly warn: Warn;
  /** Stops what watches the middleware's setup (the store's connection): its part of `close()`. */
  readonly stopWatching: () => void;
  readonly identify: Identify;
  readonly skip: ((req: Request) => boolean | Promise<boolean>) | undefined;
  /** Sets the rate-limit headers of a counted response; undefined with `headers: false`. */
  readonly headers: HeaderWriter | undefined;
  readonly handler: LimitHandler | undefined;
  /** The ban rule (rule 5, option `ban`): the steps that ban and refuse; undefined without `ban`. */
  readonly banRule: BanRule | undefined;
  /** Bans and grants as the store's runtime state has them, with the methods that change them. */
  readonly records: Records;
  /** Where bans are enforced: on every request through the middleware (`'site'`), or on the table's endpoints. */
  readonly scope: 'site' | 'table';
  readonly grant: Step;
  readonly shadow: boolean;
  readonly onLimit: ListingLimitsOptions['onLimit'];
  readonly report: OnError;
  readonly metrics: Metrics | undefined;
  /** How requests wait for a store that declares a failure policy: one deadline each, and a breaker. */
  readonly waiting: Waiting | undefined;
  /** The last hour of traffic, counted once the operator's page asks for it. */
  readonly traffic: Traffic;
  /** What the pages built on the middleware count with: its store, unwrapped by metrics, and its address keys. */
  readonly pagesLink: PagesLink;
  /** A client's counters read and cleared without a request. */
  readonly usage: Usage;
}

const modes = ['enforce', 'shadow'] as const;

/** A sliding window keeps each request it counts: its rows' limits are bounded. */
function refuseLargeRows(check: Checker, rows: readonly EndpointRow[]): void {
  const i = rows.findIndex((row) => row.limit > MAX_SLIDING_LIMIT);
  if (i >= 0) {
    check.fail(
      'ERR_INVALID_ROW',
      `listing[${i}].limit`,
      `must be at most ${MAX_SLIDING_LIMIT} with sliding windows, which keep every request of the window; ` +
        `got ${(rows[i] as EndpointRow).limit}.`,
    );
  }
}

/**
 * Checks the listing and options and compiles everything the request path needs. Throws ListingLimitsError. The
 * options no feature owns are checked first; then each feature is given its options, once, and checks and compiles
 * them: the store (timed by the metrics), the headers, identification, the records of bans and grants, the ban rule,
 * the grants, and the endpoints.
 * @internal
 */
export function configure(listing: unknown, options: ListingLimitsOptions = {}): Config {
  const check = new Checker('listingLimits');
  const rows = checkTable(check, listing, 'listing', true);
  check.options(options, 'options', 'of options');
  check.unknownKeys(options, limiterOptionNames, (key) => `options.${key}`);
  const window = options.window === undefined ? 'fixed' : check.oneOf(options.window, windowKinds, 'options.window');
  const cacheMs = options.cacheMs === undefined ? 60_000 : check.ms(options.cacheMs, 'options.cacheMs');
  const shadow = options.mode !== undefined && check.oneOf(options.mode, modes, 'options.mode') === 'shadow';
  check.callback(options.onError, 'options.onError', '(error, req) => void');
  check.callback(options.onLimit, 'options.onLimit', '(event, req) => void');
  check.callback(options.onChange, 'options.onChange', '(event, req) => void');
  check.callback(options.skip, 'options.skip', '(req) => boolean');
  check.callback(options.handler, 'options.handler', '(req, res, next, info) => void');
  if (window === 'sliding') refuseLargeRows(check, rows);
  const report = reporter(options.onError);
  const warn = warner(options.onError);
  const table = endpointsOf(rows);

  const store = checkStore(options.store);
  const registry = checkMetrics(check, options.metrics);
  // Each request done is counted once, into the metrics' totals and the last hour alike.
  const traffic = new Traffic(
    table.map((endpoint) => endpoint.name),
    registry !== undefined,
  );
  // The metrics time the store from its first counter on.
  const metrics = registry && new Metrics(traffic);
  const contract = metrics ? metrics.timed(contractOf(store)) : contractOf(store);
  const headers = compileHeaders(check, options.headers);
  const { identify, ipOf } = compileIdentify(check, options, cacheMs);
  const waiting = contract.failure && new Waiting(contract.failure, memoryCounterOf);
  const endpoints = table.map(({ name, limits }) =>
    compileEndpoint(check, contract, waiting, { name, window, limits }),
  );
  const paths = new Map(table.map((endpoint) => [rowShape(endpoint), endpoint.name]));
  const grantTable = {
    paths,
    shapes: new Set(paths.keys()),
    rows,
    maxLimit: window === 'sliding' ? MAX_SLIDING_LIMIT : undefined,
  };
  const records = new Records(contract.state, {
    rows,
    ipv6Subnet: options.ipv6Subnet ?? 64,
    checkGrant: (checker, grant, field) => checkGrant(checker, grant, field, grantTable),
    onChange: options.onChange,
    report,
    firstReadMs: contract.failure?.timeoutMs ?? 1000,
    // A store in this process answers at once: its calls need no bound.
    callTimeoutMs:
      contract.failure?.callTimeoutMs ?? (contract.state instanceof MemoryState ? undefined : DEFAULT_CALL_TIMEOUT_MS),
    // Any answer of the store closes the breaker of the part that gave it: the state's reads too.
    answered: waiting && ((route) => waiting.succeeded(route)),
    onReset: (key) => usage.forget(key),
    // An unban forgets first what led to the ban.
    forget: async (key, bound): Promise<void> => banRule?.forget(key, bound),
  });
  const { cache } = records;
  const ban = checkBanOption(check, options);
  const banRule = ban && new BanRule(contract, ban, { shadow, onBan: options.onBan, report, waiting }, records);
  const grants = compileGrants(check, options, { contract, window, waiting, table: grantTable, ipOf, cacheMs, cache });
  const usage = new Usage(endpoints, grants, records);
  if (metrics) metrics.register(check, registry as NonNullable<typeof registry>, cache);
  const match = compileMatcher(
    table.map((endpoint, i) => ({
      method: endpoint.method,
      path: endpoint.path,
      value: endpoints[i] as CompiledEndpoint,
    })),
  );
  const stopWatching =
    contract.watchConnection?.((message) => warn('LISTING_LIMITS_STORE_NOT_CONNECTED', message)) ?? (() => {});
  return {
    match,
    paths: table.map((endpoint) => endpoint.path),
    endpoints: tableOf(table, match),
    warn,
    stopWatching,
    identify,
    skip: options.skip,
    headers,
    handler: options.handler,
    banRule,
    records,
    scope: ban?.scope ?? 'site',
    grant: grants.step,
    shadow,
    onLimit: options.onLimit,
    report,
    metrics,
    waiting,
    traffic,
    pagesLink: { records, store, ipOf, traffic },
    usage,
  };
}
