// What a limit is: at most so many requests per window, and how its window is counted, fixed or sliding.

/**
 * How a window is counted. `'fixed'`: a key's window starts with its first request and lasts `windowMs`, then the
 * count starts again, so up to 2 × limit requests can fall within one window's length across the boundary.
 * `'sliding'`: at most `limit` requests in any interval of `windowMs`.
 */
export type WindowKind = 'fixed' | 'sliding';

/** One limit of a counter: at most `limit` requests per `windowMs`. */
export interface Limit {
  readonly limit: number;
  readonly windowMs: number;
}
