// Stores: factories that give each endpoint the rate-limiter-flexible limiter that counts for it.
import { type RateLimiterAbstract, RateLimiterMemory } from 'rate-limiter-flexible';
import type { EndpointRow } from './listings.js';

/** A row of the table in use, with the name that labels its counter (`"GET /v1/bots/:id"`). */
export interface Endpoint extends EndpointRow {
  /** `<METHOD> <path>`: the bucket name in headers, and the counter's namespace in a shared store. */
  readonly name: string;
}

/**
 * A store is a factory: called once per endpoint when the middleware is created, it returns the limiter that
 * counts that endpoint's requests, with `points = endpoint.limit` and `duration = endpoint.windowMs / 1000`.
 * Any rate-limiter-flexible limiter class fits (Redis, Postgres, Mongo, Memcached, ...).
 */
export type Store = (endpoint: Endpoint) => RateLimiterAbstract;

/**
 * The default store: counters in this process's memory, one map per endpoint. Counters are not shared
 * between processes; each entry is removed when its window ends.
 */
export function memoryStore(): Store {
  // Each endpoint has a storage of its own, so keys need no prefix.
  return (endpoint) => new RateLimiterMemory({ points: endpoint.limit, duration: endpoint.windowMs / 1000, keyPrefix: '' });
}
