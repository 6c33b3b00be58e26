// listingLimits(): checks and compiles the options, and gives the request path the middleware's methods.
import type { NextFunction } from 'express';
import { ListingLimitsError } from '../shared/errors.js';
import { linkPages } from '../records/pages-link.js';
import type { AnyListingName, EndpointRow } from '../contract/listings.js';
import { watchMountOrder } from './mount.js';
import { once } from '../shared/once.js';
import { type Config, configure } from './options.js';
import { requestPath } from './request.js';
import type { ClientRef } from '../records/types.js';
import type { ListingLimitsMiddleware, ListingLimitsOptions } from './types.js';

const warnUncalled = once((message: string) => process.emitWarning(message, { code: 'LISTING_LIMITS_NOT_CALLED' }));

/** `app.use(listingLimits)`: every request gets an error that says so (the app has no limits), the first a warning. */
function uncalled(next: NextFunction): never {
  const error = new ListingLimitsError(
    'ERR_NOT_CALLED',
    'listingLimits',
    'was given to app.use() itself, so Express calls it with each request; call it and mount what it returns: ' +
      "app.use(listingLimits('B', options)).",
  );
  warnUncalled(error.message);
  next(error);
  return undefined as never;
}

/**
 * Express middleware that enforces a limits table: listing `'A'` (`'a'`, `'servers'`) or `'B'` (`'b'`, `'bots'`) of the
 * contract, or custom rows.
 * Validates everything at once and throws a `ListingLimitsError` naming the field when the configuration
 * cannot work. Requests that match no row pass through untouched.
 */
export function listingLimits(
  listing: AnyListingName | readonly EndpointRow[],
  options?: ListingLimitsOptions,
): ListingLimitsMiddleware {
  // `app.use(listingLimits)`: Express calls the factory itself with each request, and its `next` third.
  // eslint-disable-next-line prefer-rest-params
  const next: unknown = arguments[2];
  if (typeof next === 'function' && typeof listing === 'object' && listing !== null && !Array.isArray(listing))
    return uncalled(next as NextFunction);
  const config = configure(listing, options);
  const middleware = requestPath(config);
  config.records.start();
  config.traffic.site?.start();
  const stopMountOrder = watchMountOrder(middleware, config.table, config.warn);
  return linkPages(Object.assign(middleware, methods(config, stopMountOrder)), config.pagesLink);
}

/** The middleware's methods: the records' (`ban()` … `requests`), a client's counters, the last hour, `close()`. */
function methods(config: Config, stopMountOrder: () => void) {
  const { records, usage, traffic } = config;
  return {
    ...records.methods,
    close: () => {
      stopMountOrder();
      config.stopWatching();
      traffic.site?.stop();
      records.close();
    },
    usage: (client: ClientRef) => usage.of(client),
    reset: (client: ClientRef, endpoint?: string, options?: { by?: string }) => usage.reset(client, endpoint, options),
    traffic: () => {
      traffic.keepHour();
      return traffic.summary();
    },
  };
}
