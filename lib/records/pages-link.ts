// What a middleware gives the pages built on it (listing-limits/pages): its records, its store, its keys of addresses.
import type { IpKey } from '../contract/keys.js';
import type { Store } from '../stores/store.js';
import type { Records } from './records.js';

/**
 * Where the link sits on the middleware, out of sight of its enumerable fields: one symbol for every copy of the
 * package, so that the pages of one copy (CommonJS, say) serve the middleware of another (an ES module); a map of
 * this module's own would know the middlewares of its own copy only.
 */
const LINK = Symbol.for('listing-limits.pages-link');

/**
 * The one way the pages reach a middleware beyond its public methods: the records they read and change (the same the
 * middleware asks at each request), the store the middleware counts in (the forms' limiters count there too), how it
 * keys a client's address, and how often it refused a client in the last hour.
 */
export interface PagesLink {
  /** The middleware's bans, grants, grant requests, logins, lost and foreign records. */
  readonly records: Records;
  /** The store the middleware was given, or its own `memoryStore()`. */
  readonly store: Store;
  /** The key of a client address as the middleware counts it: IPv4-mapped folded, IPv6 by `ipv6Subnet`. */
  readonly ipOf: IpKey;
  /** The last hour of this instance: how often a client key was refused in it. */
  readonly traffic: { refusalsOf(key: string): number };
}

/** Puts the link on what listingLimits() returns. */
export function linkPages<T extends object>(middleware: T, link: PagesLink): T {
  return Object.defineProperty(middleware, LINK, { value: link });
}

/** The link of what listingLimits() returned; undefined for anything else. */
export function pagesLinkOf(middleware: unknown): PagesLink | undefined {
  if (typeof middleware !== 'function') return undefined;
  return (middleware as { [LINK]?: PagesLink })[LINK];
}
