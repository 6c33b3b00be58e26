// Stores: factories that give each endpoint the rate-limiter-flexible limiter that counts for it.
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { EndpointRow } from './listings.js';
import { MemoryLimiter } from './memory.js';

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
 * The default store: counters in this process's memory, one {@link MemoryLimiter} (a map) per endpoint. Counters
 * are not shared between processes; an entry whose window has ended is removed when its key is next counted, or
 * by the sweep that runs as keys are added.
 */
export function memoryStore(): Store {
  // Each endpoint has a storage of its own, so keys need no prefix.
  return (endpoint) => new MemoryLimiter({ points: endpoint.limit, duration: endpoint.windowMs / 1000, keyPrefix: '' });
}
