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

/**
 * Grant requests by id, one JSON object each, each change atomic and numbered (`seq`, the object's first member).
 * Each call costs O(log n); a full store drops an ended request, else the oldest of the largest group.
 */
export interface GrantRequestStore {
  /**
   * Files a pending request, unless its key or network has as many pending as `bounds` allows. A store that takes it
   * after `applyBy` (`performance.now()`) refuses it.
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
   * Sets `id` to `value` when it holds `expected`; resolves the text written (numbered unless `value` has a `seq`),
   * or undefined. Refused after `applyBy`, as `file()` is.
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
  /** A page of the pending requests (oldest first) or decided ones (newest first), and how many are in force. */
  page(
    status: 'pending' | 'decided',
    offset: number,
    limit: number,
    now: number,
  ): Promise<{ total: number; values: string[] }>;
  /** The requests of a client key or of a network, newest change first, at most `limit`. */
  find(by: 'key' | 'network', value: string, limit: number): Promise<string[]>;
}
