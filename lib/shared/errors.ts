// The package's errors and warnings, each with a stable `code`.

/** `instanceof cls` by a brand on the prototype, so that it holds across the ES module and CommonJS copies. */
export function brandOf(cls: abstract new (...args: never[]) => object, name: string): void {
  const brand = Symbol.for(`listing-limits.${name}`);
  Object.defineProperty(cls.prototype, brand, { value: true });
  Object.defineProperty(cls, Symbol.hasInstance, {
    // A subclass keeps the ordinary rule.
    value(this: unknown, value: unknown): boolean {
      if (this !== cls) return Function.prototype[Symbol.hasInstance].call(this, value);
      return typeof value === 'object' && value !== null && (value as { [brand]?: unknown })[brand] === true;
    },
  });
}

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
 * A configuration that cannot work, naming its field; or an operator's call whose store failed, changing nothing.
 * `instanceof` holds for an instance of any copy of the package, ES module or CommonJS.
 */
export class ListingLimitsError extends Error {
  /** Stable, machine-readable reason. */
  readonly code: ListingLimitsErrorCode;
  /** The option or row field at fault, e.g. `options.store` or `listing[2].limit`. */
  readonly field: string;

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
}
brandOf(ListingLimitsError, 'ListingLimitsError');

/** What the middleware does with a request that its store could not count. */
export type StoreFailureMode = 'open' | 'closed';

/**
 * A store's rejection when it could not count: `'open'` passes the request without headers, `'closed'` answers 503.
 * `instanceof` holds for an instance of any copy of the package, ES module or CommonJS.
 */
export class StoreUnavailableError extends Error {
  readonly code = 'ERR_STORE_UNAVAILABLE';
  /** What the middleware does with the request. */
  readonly mode: StoreFailureMode;

  constructor(mode: StoreFailureMode, options?: { cause?: unknown }) {
    super(`listingLimits: the store could not count the request; failing ${mode}.`, options);
    this.name = 'StoreUnavailableError';
    this.mode = mode;
  }
}
brandOf(StoreUnavailableError, 'StoreUnavailableError');

/** Stable codes of {@link RuntimeStateError}. */
export type RuntimeStateErrorCode = 'ERR_FOREIGN_ENTRY' | 'ERR_STATE_LOST' | 'ERR_STATE_WRITE';

/** Told to `onError`, never thrown: an invalid entry skipped, a state lost or replaced, a rule's ban not written. */
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
  | 'LISTING_LIMITS_PER_PROCESS'
  | 'LISTING_LIMITS_STORE_NOT_CONNECTED'
  | 'LISTING_LIMITS_TRUST_PROXY';

/** Told to `onError`, and once as a process warning, of a setup mistake that leaves the limits miscounting. */
export class ListingLimitsWarning extends Error {
  /** Stable, machine-readable reason: the code of the process warning. */
  readonly code: ListingLimitsWarningCode;

  constructor(code: ListingLimitsWarningCode, message: string) {
    super(message);
    this.name = 'ListingLimitsWarning';
    this.code = code;
  }
}
