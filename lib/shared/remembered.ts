// A function's last results remembered: hashing a token or parsing an IPv6 address costs more than the request path.
import { LRUCache } from 'lru-cache';

export function remembered(fn: (value: string) => string, max = 10_000): (value: string) => string {
  const cache = new LRUCache<string, string>({ max });
  return (value) => {
    // A flood of huge tokens must not fill memory.
    if (value.length > 256) return fn(value);
    let known = cache.get(value);
    if (known === undefined) {
      known = fn(value);
      cache.set(value, known);
    }
    return known;
  };
}
