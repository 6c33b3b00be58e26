// What a middleware gives the pages built on it (listing-limits/pages): its records, its store, its keys of addresses.
import type { IpKey } from '../contract/keys.js';
import type { Store } from '../stores/store.js';
import type { Records } from './records.js';

// One symbol for every copy of the package: the pages of one copy (CommonJS) serve the middleware of another (ESM).
const LINK = Symbol.for('listing-limits.pages-link');

/** The one way the pages reach a middleware beyond its public methods. */
export interface PagesLink {
  readonly records: Records;
  /** The store the middleware counts in: the forms' limiters count there too. */
  readonly store: Store;
  /** A client address's key as the middleware counts it. */
  readonly ipOf: IpKey;
  /** How often a client key was refused in this instance's last hour. */
  readonly traffic: { refusalsOf(key: string): number };
}

export function linkPages<T extends object>(middleware: T, link: PagesLink): T {
  return Object.defineProperty(middleware, LINK, { value: link });
}

export function pagesLinkOf(middleware: unknown): PagesLink | undefined {
  if (typeof middleware !== 'function') return undefined;
  return (middleware as { [LINK]?: PagesLink })[LINK];
}
