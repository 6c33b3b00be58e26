// A function's last results remembered, for values a client sends again and again (tokens, addresses).
import { LRUCache } from 'lru-cache';

/**
 * `fn` with its last `max` results remembered: hashing a token or parsing an IPv6 address costs more than the
 * rest of the request path, and a client sends the same value again and again.
 */
export function remembered(fn: (value: string) => string, max = 10_000): (value: string) => string {
  const cache = new LRUCache<string, string>({ max });
  return (value) => {
    // Long values are not kept: a flood of huge tokens must not fill memory.
    if (value.length > 256) return fn(value);
    let known = cache.get(value);
    if (known === undefined) {
      known = fn(value);
      cache.set(value, known);
    }
    return known;
  };
}
