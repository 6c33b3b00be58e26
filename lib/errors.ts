// The one error class of the package: a stable `code` to match on, and the option or row field at fault.

/** Stable codes of {@link ListingLimitsError}. */
export type ListingLimitsErrorCode =
  | 'ERR_UNKNOWN_LISTING'
  | 'ERR_INVALID_ROW'
  | 'ERR_DUPLICATE_ROW'
  | 'ERR_UNKNOWN_OPTION'
  | 'ERR_INVALID_OPTION';

/** Thrown by `listingLimits()`, the stores and `verifyContract()` when their configuration cannot work. */
export class ListingLimitsError extends Error {
  /** Stable, machine-readable reason. */
  readonly code: ListingLimitsErrorCode;
  /** The option or row field at fault, e.g. `options.store` or `listing[2].limit`. */
  readonly field: string;

  /** `source` is the function whose configuration is at fault; it opens the message. */
  constructor(code: ListingLimitsErrorCode, field: string, message: string, source = 'listingLimits') {
    super(`${source}: ${field} ${message}`);
    this.name = 'ListingLimitsError';
    this.code = code;
    this.field = field;
  }
}
