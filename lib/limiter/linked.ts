// What a middleware tells the pages built on it: its store, how it groups addresses, its records and its traffic.
import type { IpKey } from '../contract/keys.js';
import type { RuntimeRecords } from '../records/records.js';
import type { Store } from '../stores/store.js';
import type { Traffic } from './observe/traffic.js';

/** Where the link sits on the middleware: one symbol for every copy of the package (ESM and CommonJS alike). */
const LINK = Symbol.for('listing-limits.linked');

export interface Linked {
  /** The store the middleware was given, or its own `memoryStore()`. */
  readonly store: Store;
  /** The key of a client address as the middleware counts it: IPv4-mapped folded, IPv6 by `ipv6Subnet`. */
  readonly ipOf: IpKey;
  /** Its cache of the store's runtime state: a client's ban and grant, pages of them, the operators' logins. */
  readonly records: RuntimeRecords;
  /** The last hour of this instance, per client. */
  readonly traffic: Traffic;
}

/** Puts the link on `middleware`, out of sight of its enumerable fields. */
export function link<T extends object>(middleware: T, linked: Linked): T {
  return Object.defineProperty(middleware, LINK, { value: linked });
}

/** The link of what listingLimits() returned; undefined for anything else. */
export function linkedOf(middleware: unknown): Linked | undefined {
  if (typeof middleware !== 'function') return undefined;
  return (middleware as { [LINK]?: Linked })[LINK];
}
