// What a limit is: at most so many requests per window, and how its window is counted, fixed or sliding.

export const windowKinds = ['fixed', 'sliding'] as const;

/**
 * `'fixed'`: a window starts with a key's first request and lasts `windowMs` (so up to 2 × limit may pass across its
 * end); `'sliding'`: at most `limit` requests in any `windowMs`.
 */
export type WindowKind = (typeof windowKinds)[number];

/** One limit of a counter: at most `limit` requests per `windowMs`. */
export interface Limit {
  readonly limit: number;
  readonly windowMs: number;
}

/** The largest integer a Structured Field carries (RFC 9651 §3.3.1), and so the largest limit. */
export const LARGEST_FIELD_INTEGER = 999_999_999_999_999;
