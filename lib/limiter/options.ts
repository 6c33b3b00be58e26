// Options of listingLimits(): checked, then compiled by each feature's module into the steps of the request path.
import { BanRule, checkBanOption } from './ban-rule.js';
import { Checker } from '../shared/check.js';
import { type CompiledEndpoint, compileEndpoint, makeCounters } from './endpoint.js';
import { checkGrant, compileGrants, refuseLargeRow } from './grants.js';
import { compileHeaders } from '../contract/headers.js';
import { reporter, warner } from '../shared/hooks.js';
import { compileIdentify, identifyOptions } from './identify.js';
import { compileMatcher } from '../contract/match.js';
import { tableOf } from './mount.js';
import { checkMetrics, Metrics } from './observe/metrics.js';
import { Records } from '../records/records.js';
import { checkStore } from '../stores/option.js';
import { partsOf } from '../stores/rlf.js';
import { checkTable, endpointsOf, rowShape } from '../contract/table.js';
import { NO_ENDPOINT, Traffic } from './observe/traffic.js';
import { SiteTraffic } from './observe/site.js';
import { Usage } from './observe/usage.js';
import type { ListingLimitsOptions } from './types.js';
import { windowKinds } from '../contract/limit.js';
import { Waiting } from '../stores/waiting.js';
import { DEFAULT_CALL_TIMEOUT_MS } from '../stores/call-bound.js';
import { MemoryState } from '../stores/memory/state.js';
import { warnPerProcess } from '../stores/cluster/instance.js';

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
  'onRequestFiled',
  'metrics',
  'onError',
] as const;

const modes = ['enforce', 'shadow'] as const;

/** @internal */
export type Config = ReturnType<typeof configure>;

/**
 * Checks the options no feature owns, then has each feature check and compile its own. Throws ListingLimitsError.
 * @internal
 */
export function configure(listing: unknown, options: ListingLimitsOptions = {}) {
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
  check.callback(options.onRequestFiled, 'options.onRequestFiled', '(request) => void');
  check.callback(options.skip, 'options.skip', '(req) => boolean');
  check.callback(options.handler, 'options.handler', '(req, res, next, info) => void');
  if (window === 'sliding')
    rows.forEach((row, i) => refuseLargeRow(check, row, `listing[${i}].limit`, 'ERR_INVALID_ROW'));
  const report = reporter(options.onError);
  const warn = warner(options.onError);
  const table = endpointsOf(rows);

  const store = checkStore(options.store);
  const registry = checkMetrics(check, options.metrics);
  const parts = partsOf(store);
  const names = table.map((endpoint) => endpoint.name);
  const shared = parts.state?.traffic;
  const site =
    shared &&
    new SiteTraffic(shared, {
      endpoints: new Set([...names, NO_ENDPOINT]),
      callTimeoutMs: parts.failure?.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
      report,
      skipped: (entry, problem) => records.cache.foreignFound(entry, problem, problem),
    });
  // Each request done is counted once, into the metrics' totals and the last hour alike.
  const traffic = new Traffic(names, registry !== undefined, site);
  // The metrics time the store from its first counter on.
  const metrics = registry && new Metrics(traffic);
  const headers = compileHeaders(check, options.headers);
  const { identify, ipOf, ipv6Subnet } = compileIdentify(check, options, cacheMs);
  const waiting = parts.failure && new Waiting(parts.failure);
  const counterOf = makeCounters(parts, waiting, metrics && ((seconds) => metrics.latency(seconds)));
  const endpoints = table.map(({ name, limits }) => compileEndpoint(counterOf, { name, window, limits }));
  const paths = new Map(table.map((endpoint) => [rowShape(endpoint), endpoint.name]));
  const grantTable = { paths, rows, sliding: window === 'sliding' };
  const records = new Records(parts.state, {
    rows,
    ipv6Subnet,
    checkGrant: (checker, grant, field) => checkGrant(checker, grant, field, grantTable),
    onChange: options.onChange,
    onRequestFiled: options.onRequestFiled,
    report,
    firstReadMs: parts.failure?.timeoutMs ?? 1000,
    // A store in this process answers at once: its calls need no bound.
    callTimeoutMs:
      parts.failure?.callTimeoutMs ?? (parts.state instanceof MemoryState ? undefined : DEFAULT_CALL_TIMEOUT_MS),
    // Any answer of the store closes the breaker of the part that gave it: the state's reads too.
    answered: waiting && ((route) => waiting.succeeded(route)),
    onReset: (key) => usage.forget(key),
    // An unban forgets first what led to the ban.
    forget: async (key, bound): Promise<void> => banRule?.forget(key, bound),
  });
  const { cache } = records;
  const ban = checkBanOption(check, options);
  const banRule = ban && new BanRule(counterOf, ban, { shadow, onBan: options.onBan, report }, records);
  const grants = compileGrants(check, options, { counterOf, window, table: grantTable, ipOf, cacheMs, cache });
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
    parts.watchConnection?.((message) => warn('LISTING_LIMITS_STORE_NOT_CONNECTED', message)) ?? (() => {});
  if (parts.countsAlone) warnPerProcess(warn);
  return {
    match,
    table: tableOf(table, match),
    warn,
    stopWatching,
    identify,
    skip: options.skip,
    headers,
    handler: options.handler,
    banRule,
    records,
    scope: ban?.scope ?? 'site',
    grants,
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
