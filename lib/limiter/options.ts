// Options of listingLimits(): checked, then compiled by each feature's module into the steps of the request path.
import type { Request } from 'express';
import { BanRule, banScope, checkBanOption } from './ban-rule.js';
import { Checker, show } from '../shared/check.js';
import type { Step } from './context.js';
import { type CompiledEndpoint, compileEndpoint } from './endpoint.js';
import { checkGrant, compileGrants } from './grants.js';
import { compileHeaders, type HeaderWriter } from '../contract/headers.js';
import { type OnError, reporter, type Warn, warner } from '../shared/hooks.js';
import { compileIdentify, compileIpKey, type Identify, identifyOptions } from './identify.js';
import { ipKey } from '../contract/keys.js';
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
import { Waiting } from '../stores/waiting.js';
import { DEFAULT_CALL_TIMEOUT_MS } from '../stores/call-bound.js';
import { MemoryState } from '../stores/memory/state.js';
import { type WindowKind } from '../contract/limit.js';

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
  /** Whether bans are enforced on requests that match no row too. */
  readonly site: boolean;
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

function fn<T>(check: Checker, value: T, field: string, shape: string): T {
  if (value !== undefined && typeof value !== 'function')
    check.invalid(field, `must be a function ${shape}; got ${show(value)}.`);
  return value;
}

/** The window kind; a sliding window keeps each request it counts, so its rows' limits are bounded. */
function checkWindow(check: Checker, value: unknown, rows: readonly EndpointRow[]): WindowKind {
  const window = value === undefined ? 'fixed' : check.oneOf(value, ['fixed', 'sliding'] as const, 'options.window');
  if (window === 'sliding') {
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
  return window;
}

/**
 * Checks the listing and options and compiles everything the request path needs. Throws ListingLimitsError.
 * @internal
 */
export function configure(listing: unknown, options: unknown): Config {
  const check = new Checker('listingLimits');
  const rows = checkTable(check, listing, 'listing', true);
  const o = check.options(options, 'options', 'of options') as ListingLimitsOptions;
  check.unknownKeys(o, limiterOptionNames, (key) => `options.${key}`);
  const window = checkWindow(check, o.window, rows);
  const table = endpointsOf(rows);
  const registryOfMetrics = checkMetrics(check, o.metrics);
  // Each request done is counted once, into the metrics' totals and the last hour alike.
  const traffic = new Traffic(
    table.map((endpoint) => endpoint.name),
    registryOfMetrics !== undefined,
  );
  // The metrics time the store from its first counter on.
  const metrics = registryOfMetrics && new Metrics(traffic);
  const given = checkStore(o.store);
  const contract = contractOf(given);
  const store = metrics ? metrics.timed(contract) : contract;
  const headers = compileHeaders(check, o.headers);
  const cacheMs = o.cacheMs === undefined ? 60_000 : check.ms(o.cacheMs, 'options.cacheMs');
  const shadow =
    (o.mode === undefined ? 'enforce' : check.oneOf(o.mode, ['enforce', 'shadow'], 'options.mode')) === 'shadow';
  const onError = fn(check, o.onError, 'options.onError', '(error, req) => void');
  const report = reporter(onError);
  const warn = warner(onError);
  fn(check, o.onLimit, 'options.onLimit', '(event, req) => void');
  fn(check, o.onChange, 'options.onChange', '(event, req) => void');

  const waiting = store.failure && new Waiting(store.failure, memoryCounterOf);
  const endpoints = table.map(({ name, limits }) => compileEndpoint(check, store, waiting, { name, window, limits }));
  const ipOf = compileIpKey(check, o);
  const identify = compileIdentify(check, o, ipOf, cacheMs);
  const ban = checkBanOption(check, o);
  const site = banScope(check, o) === 'site';
  const paths = new Map(table.map((endpoint) => [rowShape(endpoint), endpoint.name]));
  const grantTable = {
    shapes: new Set(paths.keys()),
    rows,
    maxLimit: window === 'sliding' ? MAX_SLIDING_LIMIT : undefined,
  };
  const records = new Records(store.state, {
    // An operator's call keys its address apart from the requests' remembered keys, which 10,000 bans would fill.
    ipOf: (ip) => ipKey(ip, o.ipv6Subnet ?? 64),
    checkGrant: (checker, grant, field) => checkGrant(checker, grant, field, grantTable),
    onChange: o.onChange,
    report,
    firstReadMs: store.failure?.timeoutMs ?? 1000,
    // A store in this process answers at once: its calls need no bound.
    callTimeoutMs:
      store.failure?.callTimeoutMs ?? (store.state instanceof MemoryState ? undefined : DEFAULT_CALL_TIMEOUT_MS),
    // Any answer of the store closes the breaker of the part that gave it: the state's reads too.
    answered: waiting && ((route) => waiting.succeeded(route)),
    onReset: (key) => usage.forget(key),
    table: { rows, ipv6Subnet: o.ipv6Subnet ?? 64 },
  });
  const banRule = ban && new BanRule(store, ban, { shadow, onBan: o.onBan, report, waiting }, records);
  const { cache } = records;
  const grants = compileGrants(check, o, { store, window, waiting, paths, table: grantTable, ipOf, cacheMs, cache });
  const usage = new Usage(endpoints, grants, records);
  if (metrics) metrics.register(check, registryOfMetrics as NonNullable<typeof registryOfMetrics>, cache);
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
    skip: fn(check, o.skip, 'options.skip', '(req) => boolean'),
    headers,
    handler: fn(check, o.handler, 'options.handler', '(req, res, next, info) => void'),
    banRule,
    records,
    site,
    grant: grants.step,
    shadow,
    onLimit: o.onLimit,
    report,
    metrics,
    waiting,
    traffic,
    pagesLink: { records, store: given, ipOf, traffic },
    usage,
  };
}
