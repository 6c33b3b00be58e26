// The package's errors: bad configuration (a stable `code` and the field at fault), a store that could not count, and
// what every copy of the package answers to `instanceof`.

/**
 * `instanceof` for the package's error classes, true across copies of the package (an app that loads it both as an
 * ES module and as CommonJS has two of each class): an instance carries its class's brand, a symbol every copy
 * shares, on its prototype. A subclass of an app's own is tested as usual.
 */
export function branded(target: unknown, own: unknown, brand: symbol, value: unknown): boolean {
  if (target !== own) return Function.prototype[Symbol.hasInstance].call(target, value);
  return typeof value === 'object' && value !== null && (value as { [brand]?: unknown })[brand] === true;
}

export function brandOf<T extends { prototype: object }>(cls: T, brand: symbol): void {
  Object.defineProperty(cls.prototype, brand, { value: true });
}

const LIMITS_BRAND = Symbol.for('listing-limits.ListingLimitsError');
const STORE_BRAND = Symbol.for('listing-limits.StoreUnavailableError');

/** Stable codes of {@link ListingLimitsError}. */
export type ListingLimitsErrorCode =
  | 'ERR_UNKNOWN_LISTING'
  | 'ERR_INVALID_ROW'
  | 'ERR_DUPLICATE_ROW'
  | 'ERR_UNKNOWN_OPTION'
  | 'ERR_INVALID_OPTION'
  | 'ERR_UNSUPPORTED_STORE'
  | 'ERR_NOT_CALLED'
  | 'ERR_TOO_MANY_PENDING'
  | 'ERR_STORE_UNAVAILABLE';

/**
 * Thrown by `listingLimits()`, the stores and `verifyContract()` when their configuration cannot work, naming the
 * field at fault; and by an operator's call (`ban()`, `usage()`, …) whose store did not answer in time or failed
 * (`ERR_STORE_UNAVAILABLE`, field `options.store`): nothing of that call was changed.
 */
export class ListingLimitsError extends Error {
  /** Stable, machine-readable reason. */
  readonly code: ListingLimitsErrorCode;
  /** The option or row field at fault, e.g. `options.store` or `listing[2].limit`. */
  readonly field: string;

  /** `source` names the function whose configuration is at fault, as the message's first word. */
  constructor(
    code: ListingLimitsErrorCode,
    field: string,
    message: string,
    source = 'listingLimits',
    options?: { cause?: unknown },
  ) {
    super(`${source}: ${field} ${message}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ListingLimitsError';
    this.code = code;
    this.field = field;
  }

  /** True for a ListingLimitsError of any copy of the package, ES module or CommonJS. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return branded(this, ListingLimitsError, LIMITS_BRAND, value);
  }
}
brandOf(ListingLimitsError, LIMITS_BRAND);

/** What the middleware does with a request that its store could not count. */
export type StoreFailureMode = 'open' | 'closed';

/**
 * The rejection of a store that could not count a request (down, unreachable, or too slow). Its `mode` tells the
 * middleware what to do: `'open'` lets the request through without rate-limit headers, `'closed'` answers 503.
 * Any store may reject `consume()` with it; other errors from a store go to `next(err)`.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'ERR_STORE_UNAVAILABLE';
  readonly mode: StoreFailureMode;

  constructor(mode: StoreFailureMode, options?: { cause?: unknown }) {
    super(`listingLimits: the store could not count the request; failing ${mode}.`, options);
    this.name = 'StoreUnavailableError';
    this.mode = mode;
  }

  /** True for a StoreUnavailableError of any copy of the package, ES module or CommonJS. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return branded(this, StoreUnavailableError, STORE_BRAND, value);
  }
}
brandOf(StoreUnavailableError, STORE_BRAND);

/** Stable codes of {@link RuntimeStateError}. */
export type RuntimeStateErrorCode = 'ERR_FOREIGN_ENTRY' | 'ERR_STATE_LOST' | 'ERR_STATE_WRITE';

/**
 * What `onError` is told about the store's runtime state: an entry this instance skips (`ERR_FOREIGN_ENTRY`: written
 * by something else, or by another version, and not a valid record here), a state that was lost or replaced
 * (`ERR_STATE_LOST`), or a rule's ban that could not be written to the store (`ERR_STATE_WRITE`). Never thrown at a
 * request: the request is answered as if the entry were not there.
 */
export class RuntimeStateError extends Error {
  /** Stable, machine-readable reason. */
  readonly code: RuntimeStateErrorCode;
  /** The entry at fault (`record <field>` or `history`), for `ERR_FOREIGN_ENTRY`. */
  readonly entry: string | undefined;

  constructor(code: RuntimeStateErrorCode, message: string, options?: { entry?: string; cause?: unknown }) {
    super(`listing-limits: ${message}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'RuntimeStateError';
    this.code = code;
    this.entry = options?.entry;
  }
}

/** Stable codes of {@link ListingLimitsWarning}, the same as the process warnings'. */
export type ListingLimitsWarningCode =
  | 'LISTING_LIMITS_MOUNT_ORDER'
  | 'LISTING_LIMITS_MOUNT_PATH'
  | 'LISTING_LIMITS_STORE_NOT_CONNECTED'
  | 'LISTING_LIMITS_TRUST_PROXY';

/**
 * What `onError` is told of a mistake that leaves the limits not counting as configured, while every request is still
 * answered: the middleware mounted after routes of its table (`LISTING_LIMITS_MOUNT_ORDER`) or under a path its
 * table's paths start with (`LISTING_LIMITS_MOUNT_PATH`), a Redis store's client not connected a few seconds after the
 * start (`LISTING_LIMITS_STORE_NOT_CONNECTED`), clients behind a proxy that `trust proxy` does not name
 * (`LISTING_LIMITS_TRUST_PROXY`). Each is also emitted as a process warning with the same code, once.
 */
export class ListingLimitsWarning extends Error {
  /** Stable, machine-readable reason: the code of the process warning. */
  readonly code: ListingLimitsWarningCode;

  constructor(code: ListingLimitsWarningCode, message: string) {
    super(message);
    this.name = 'ListingLimitsWarning';
    this.code = code;
  }
}
