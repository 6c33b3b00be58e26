// Extended limits for approved clients (rule 6 of the contract): a multiplier, replacement rows, or no limit.
import type { Request } from 'express';
import { LRUCache } from 'lru-cache';
import type { Client } from './client.js';
import { headerTemplate } from './headers.js';
import type { EndpointRow } from './listings.js';
import type { CompiledEndpoint } from './options.js';
import type { Store } from './stores.js';

/**
 * What an approved client gets instead of the contract's limits: `'unlimited'`; `{ multiplier }`, every
 * limit multiplied (rounded down, at least 1); or `{ rows }`, rows that replace the table's rows of the
 * same method and path (the others keep the table's limits).
 */
export type Grant = 'unlimited' | { readonly multiplier: number } | { readonly rows: readonly EndpointRow[] };

/** Finds the grant of a client, or undefined for none. Results are cached for `cacheMs`. */
export type GrantLookup = (
  client: { readonly token: string | undefined; readonly ip: string | undefined },
  req: Request,
) => Grant | undefined | Promise<Grant | undefined>;

/** Grants by Authorization value or by IP address (as `req.ip` reports it), or a lookup function. */
export type Grants = Readonly<Record<string, Grant>> | GrantLookup;

export const UNLIMITED = 'unlimited';

/** The granted variant of an endpoint: its own limiter and counters, named for the grant. */
function granted(store: Store, base: CompiledEndpoint, limit: number, windowMs: number, label: string): CompiledEndpoint {
  const endpoint = { ...base.endpoint, limit, windowMs, name: `${base.endpoint.name} (${label})` };
  return { endpoint, limiter: store(endpoint), headers: headerTemplate(endpoint.name, limit, windowMs) };
}

/**
 * Compiles grants into `(client, req, endpoint) => endpoint to count on | 'unlimited'`. Granted endpoints are
 * made once per distinct grant and endpoint, so granted counters never mix with the table's.
 */
export function compileGrants(
  grants: Grants,
  store: Store,
  cacheMs: number,
  check: (grant: unknown, at: string) => void,
): (client: Client, req: Request, base: CompiledEndpoint) => Promise<CompiledEndpoint | typeof UNLIMITED> {
  const variants = new Map<string, CompiledEndpoint>();
  const variant = (base: CompiledEndpoint, grant: Exclude<Grant, typeof UNLIMITED>): CompiledEndpoint => {
    const { name, limit, windowMs } = base.endpoint;
    let grantedLimit = limit;
    let grantedWindow = windowMs;
    if ('multiplier' in grant) {
      grantedLimit = Math.max(1, Math.floor(limit * grant.multiplier));
    } else {
      const row = grant.rows.find((r) => `${r.method} ${r.path}` === name);
      if (!row) return base;
      grantedLimit = row.limit;
      grantedWindow = row.windowMs;
    }
    const label = 'multiplier' in grant ? `x${grant.multiplier}` : `${grantedLimit}/${grantedWindow / 1000}s`;
    const id = `${name} ${label}`;
    let found = variants.get(id);
    if (!found) {
      found = granted(store, base, grantedLimit, grantedWindow, label);
      variants.set(id, found);
    }
    return found;
  };

  let find: (client: Client, req: Request) => Promise<Grant | undefined>;
  if (typeof grants === 'function') {
    const cache = new LRUCache<string, { grant: Grant | undefined }>({ max: 10_000, ttl: cacheMs, perf: Date });
    find = async (client, req) => {
      const cacheKey = client.kind === 'token' ? client.key : client.ip;
      const cached = cache.get(cacheKey);
      if (cached) return cached.grant;
      const grant = (await grants({ token: client.token, ip: req.ip }, req)) ?? undefined;
      if (grant !== undefined) check(grant, 'options.grants() result');
      cache.set(cacheKey, { grant });
      return grant;
    };
  } else {
    const table = new Map(Object.entries(grants));
    find = async (client, req) => (client.token !== undefined ? table.get(client.token) : undefined) ?? table.get(req.ip ?? '');
  }

  return async (client, req, base) => {
    const grant = await find(client, req);
    if (grant === undefined) return base;
    if (grant === UNLIMITED) return UNLIMITED;
    return variant(base, grant);
  };
}
