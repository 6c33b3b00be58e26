// What a call of the client rejects with: a stable `code`, the endpoint, and what the server answered.
import { brandOf } from '../shared/errors.js';

/** Stable codes of {@link ListingClientError}. */
export type ListingClientErrorCode =
  | 'ERR_WAIT_TOO_LONG'
  | 'ERR_BANNED'
  | 'ERR_RATE_LIMITED'
  | 'ERR_HTTP'
  | 'ERR_NETWORK'
  | 'ERR_TIMEOUT'
  | 'ERR_TOO_LARGE'
  | 'ERR_UNKNOWN_ENDPOINT'
  | 'ERR_INVALID_PARAMS'
  | 'ERR_CLOSED';

/**
 * What a call of `listingClient()` rejects with; an aborted call rejects with its signal's reason instead.
 * `instanceof` holds for a ListingClientError of any copy of the package, ES module or CommonJS.
 */
export class ListingClientError extends Error {
  /** Stable, machine-readable reason. */
  readonly code: ListingClientErrorCode;
  /** The endpoint of the call, `<METHOD> <path>` as in the table. */
  readonly endpoint: string;
  /** The HTTP status of the last answer, when there was one. */
  readonly status: number | undefined;
  /** `ERR_WAIT_TOO_LONG`: the wait it would have had; `ERR_RATE_LIMITED`: the last wait asked. */
  readonly waitMs: number | undefined;
  /** `ERR_BANNED`: when the ban ends. */
  readonly bannedUntil: Date | undefined;
  /** The parsed body of the last answer (JSON, else text), when there was one. */
  readonly body: unknown;

  constructor(
    code: ListingClientErrorCode,
    endpoint: string,
    message: string,
    details: { status?: number; waitMs?: number; bannedUntil?: Date; body?: unknown; cause?: unknown } = {},
  ) {
    super(`listingClient: ${endpoint}: ${message}`, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'ListingClientError';
    this.code = code;
    this.endpoint = endpoint;
    this.status = details.status;
    this.waitMs = details.waitMs;
    this.bannedUntil = details.bannedUntil;
    this.body = details.body;
  }
}
brandOf(ListingClientError, 'ListingClientError');
