// The contract's limits tables as plain frozen data: the one source for the middleware, its headers and the README.

/** An HTTP method, upper case. */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS' | (string & {});

/** One row of a limits table: at most `limit` requests per `windowMs` on `method path`. */
export interface EndpointRow {
  /** Upper-case HTTP method. `GET` rows also count `HEAD`, which Express serves with the GET handler. */
  readonly method: Method;
  /** Path in path-to-regexp syntax, e.g. `/v1/bots/:id`. Path parameters are ignored when counting. */
  readonly path: string;
  /** Requests allowed per window: a positive integer. */
  readonly limit: number;
  /** Window length in milliseconds: a positive whole number of seconds (a multiple of 1000). */
  readonly windowMs: number;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

function frozenTable<const T extends readonly EndpointRow[]>(rows: T): T {
  for (const row of rows) Object.freeze(row);
  return Object.freeze(rows);
}

/** The limits of the two listings of the contract: A ("servers") and B ("bots"). */
export const listings = Object.freeze({
  A: frozenTable([
    { method: 'GET', path: '/v1/statistics', limit: 1, windowMs: SECOND },
    { method: 'GET', path: '/v1/servers', limit: 15, windowMs: 2 * MINUTE },
    { method: 'GET', path: '/v1/servers/:id', limit: 6, windowMs: 15 * SECOND },
    { method: 'GET', path: '/v1/servers/:id/upvotes', limit: 15, windowMs: 15 * SECOND },
    { method: 'GET', path: '/v1/users/:id', limit: 2, windowMs: SECOND },
    { method: 'GET', path: '/v1/users/:id/servers', limit: 6, windowMs: 15 * SECOND },
  ]),
  B: frozenTable([
    { method: 'GET', path: '/v1/statistics', limit: 5, windowMs: SECOND },
    { method: 'GET', path: '/v1/bots', limit: 25, windowMs: MINUTE },
    { method: 'GET', path: '/v1/bots/:id', limit: 2, windowMs: SECOND },
    { method: 'POST', path: '/v1/bots/:id', limit: 15, windowMs: 15 * SECOND },
    { method: 'GET', path: '/v1/bots/:id/upvotes', limit: 2, windowMs: 15 * SECOND },
    { method: 'GET', path: '/v1/bots/:id/uptime', limit: 30, windowMs: 15 * SECOND },
    { method: 'GET', path: '/v1/users/:id', limit: 2, windowMs: SECOND },
    { method: 'GET', path: '/v1/users/:id/bots', limit: 10, windowMs: 15 * SECOND },
  ]),
});

/** The name of a listing of the contract. */
export type ListingName = keyof typeof listings;

/** What each listing lists: another name for it, accepted wherever a listing is named. */
export const listingFamilies = Object.freeze({ A: 'servers', B: 'bots' } as const satisfies Record<
  ListingName,
  string
>);

/** What a listing lists: `'servers'` (listing A) or `'bots'` (listing B). */
export type ListingFamily = (typeof listingFamilies)[ListingName];

/** Any name a listing answers to: its letter in either case, or what it lists (`'B'`, `'b'`, `'bots'`). */
export type AnyListingName = ListingName | Lowercase<ListingName> | ListingFamily;

/** The names of the contract's listings, in the order of `listings`. */
export const listingNames: readonly ListingName[] = Object.freeze(Object.keys(listings) as ListingName[]);
