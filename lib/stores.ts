// Stores: factories that give each endpoint the rate-limiter-flexible limiter that counts for it.
import { type RateLimiterAbstract, RateLimiterMemory, type RateLimiterRes } from 'rate-limiter-flexible';
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

/** The part of rate-limiter-flexible's memory storage that RateLimiterMemory.consume() counts with. */
interface MemoryStorage {
  incrby(key: string, points: number, durationSec: number): RateLimiterRes & { remainingPoints: number };
}

/**
 * The memory store's limiter: rate-limiter-flexible's RateLimiterMemory, whose count can also be taken at once.
 * Its consume() settles a promise with a result it computed synchronously; under load, calling next() a promise
 * hop later costs the server more than the counting itself (README, Performance).
 */
export class MemoryLimiter extends RateLimiterMemory {
  /**
   * Whether consumeNow() can be used: the storage it reads is rate-limiter-flexible's own, not part of its public
   * API, so a version without it makes the middleware use consume() instead.
   */
  readonly countsAtOnce = typeof this.#storage()?.incrby === 'function';

  #storage(): MemoryStorage | undefined {
    return (this as unknown as { _memoryStorage?: MemoryStorage })._memoryStorage;
  }

  /** What consume(key) settles with, returned at once: allowed while `consumedPoints <= points`. */
  consumeNow(key: string): RateLimiterRes {
    // What RateLimiterMemory.consume(key) does for a limiter as memoryStore() makes it: no key prefix, no
    // blockDuration, no execEvenly. The memory store's tests check that both give the same results.
    const result = (this.#storage() as MemoryStorage).incrby(key, 1, this.duration);
    result.remainingPoints = Math.max(this.points - result.consumedPoints, 0);
    return result;
  }
}

/**
 * The default store: counters in this process's memory, one map per endpoint. Counters are not shared
 * between processes; each entry is removed when its window ends.
 */
export function memoryStore(): Store {
  // Each endpoint has a storage of its own, so keys need no prefix.
  return (endpoint) => new MemoryLimiter({ points: endpoint.limit, duration: endpoint.windowMs / 1000, keyPrefix: '' });
}
