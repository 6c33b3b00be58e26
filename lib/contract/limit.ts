// What a limit is: at most so many requests per window, and how its window is counted, fixed or sliding.

/** The kinds of window, as options name them. */
export const windowKinds = ['fixed', 'sliding'] as const;

/**
 * How a window is counted. `'fixed'`: a key's window starts with its first request and lasts `windowMs`, then the
 * count starts again, so up to 2 × limit requests can fall within one window's length across the boundary.
 * `'sliding'`: at most `limit` requests in any interval of `windowMs`.
 */
export type WindowKind = (typeof windowKinds)[number];

/** One limit of a counter: at most `limit` requests per `windowMs`. */
export interface Limit {
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * The largest limit: the largest integer a Structured Field carries (RFC 9651 §3.3.1, at most 15 digits), which every
 * limit the package writes into a header is (`q=`, `r=`, `X-RateLimit-Limit`). Larger rows and grants are refused
 * where they are given.
 */
export const LARGEST_FIELD_INTEGER = 999_999_999_999_999;
