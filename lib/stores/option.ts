// The `store` option, as listingLimits() and the pages take it: a store, checked; memoryStore() when it is not given.
import { Checker, className, show } from '../shared/check.js';
import { memoryStore } from './memory/store.js';
import { redisStore } from './redis/store.js';
import { clusterStore } from './cluster/store.js';
import type { Store } from './store.js';

/** The `store` option (the pages' too, with their own checker): memoryStore() when it is not given. */
export function checkStore(store: unknown, check: Checker = new Checker('listingLimits')): Store {
  if (store === undefined) return memoryStore();
  if (store === memoryStore)
    check.invalid('options.store', 'is the memoryStore function itself; call it: `memoryStore()`.');
  if (store === redisStore)
    check.invalid(
      'options.store',
      'is the redisStore function itself; call it with your client: `redisStore(client)`.',
    );
  if (store === clusterStore)
    check.invalid('options.store', 'is the clusterStore function itself; call it: `clusterStore()`.');
  if (typeof (store as { consume?: unknown } | null)?.consume === 'function') {
    const limiter = className(store) || 'RateLimiterMemory';
    check.invalid(
      'options.store',
      `is a ${limiter}, one limiter; a store makes a limiter for each counter of the table. Use memoryStore() or ` +
        `redisStore(client), or a function that makes one: \`(counter) => new ${limiter}({ keyPrefix: ` +
        'counter.name, points: counter.limit, duration: counter.windowMs / 1000 })`.',
    );
  }
  if (typeof store !== 'function') {
    check.invalid(
      'options.store',
      'must be a store: a function (counter) => rate-limiter-flexible limiter, such as memoryStore(); ' +
        `got ${show(store)}.`,
    );
  }
  return store as Store;
}
