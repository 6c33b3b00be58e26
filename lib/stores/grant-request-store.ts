// Where a store keeps grant requests: the interface of the place, with the bounds of each call.

/** Where a request is counted and found. */
export interface GrantRequestPlace {
  /** The client key of its token. */
  readonly key: string;
  /** The network it was filed from (`ip:203.0.113.0/24`), or '' for one filed without an address. */
  readonly network: string;
  /** The wider network it belongs to (`ip:203.0.0.0/16`), whose oldest request goes first when the store is full. */
  readonly group: string;
}

/** What the store needs to know of a request to index it. */
export interface GrantRequestMeta extends GrantRequestPlace {
  readonly status: 'pending' | 'decided';
  /** When the store drops it, epoch ms. */
  readonly endsAt: number;
}

/** How many requests a client key and a network may have pending at once, and how many the store keeps in all. */
export interface GrantRequestBounds {
  readonly perKey: number;
  readonly perNetwork: number;
  readonly max: number;
}

/** What filing did: filed; refused as its key or its network has as many pending as it may; its id taken. */
export type FileResult = 'done' | 'key' | 'network' | 'conflict';

/** Ended requests a call drops at the most, so that a call costs about the same however many have ended. */
export const ENDED_PER_CALL = 10;

/**
 * Grant requests by id, one JSON object each, each change atomic. The store numbers every write: a request's `seq`
 * (its object's first member) is the order of its last change, and the lists follow it. Every call costs the same
 * however many requests are kept (a few steps of O(log n) each): a store that is full drops an ended request, else
 * the oldest of the group that has the most, never refuses a new one; a page reads only its rows.
 */
export interface GrantRequestStore {
  /**
   * Files a new pending request: refused when its key, or its network, has `bounds.perKey` (`bounds.perNetwork`)
   * pending already; with `bounds.max` kept, one is dropped first. Ended requests are dropped on the way. A store
   * that takes it after `applyBy` (`performance.now()`) refuses it, as a state's change (see `StateChange`).
   */
  file(
    id: string,
    value: string,
    meta: GrantRequestMeta,
    bounds: GrantRequestBounds,
    now: number,
    applyBy?: number,
  ): Promise<FileResult>;
  /**
   * Sets `id` to `value`, indexed by `meta`, when it holds `expected` now; resolves the text written (with the store's
   * next sequence number as its first member, unless `value` has one: a request put back as it was), or undefined.
   * A store that takes it after `applyBy` refuses it, as `file()` does.
   */
  put(
    id: string,
    value: string,
    expected: string,
    meta: GrantRequestMeta,
    now: number,
    applyBy?: number,
  ): Promise<string | undefined>;
  get(id: string): Promise<string | undefined>;
  /**
   * Rows `offset` to `offset + limit` of the pending requests (oldest change first) or of the decided ones (newest
   * first), ended ones left out as far as the order allows (the caller filters the rest), and how many of them are
   * kept and not ended.
   */
  page(
    status: 'pending' | 'decided',
    offset: number,
    limit: number,
    now: number,
  ): Promise<{ total: number; values: string[] }>;
  /** The requests of a client key or of a network, newest change first, at most `limit`. */
  find(by: 'key' | 'network', value: string, limit: number): Promise<string[]>;
}
