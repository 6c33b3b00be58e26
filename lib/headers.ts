// The rate-limit response headers: the IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers-10) and legacy ones.
import type { ServerResponse } from 'node:http';

/** What the header writer needs of an endpoint, computed once when the middleware is created. */
export interface HeaderTemplate {
  /** `"<name>";q=<limit>;w=<window seconds>`, the whole RateLimit-Policy value. */
  readonly policy: string;
  /** `"<name>";r=`, the start of every RateLimit value. */
  readonly ratelimitPrefix: string;
  readonly limit: string;
  readonly bucket: string;
}

/** Quotes a string as a Structured Field sf-string (RFC 9651 §3.3.3). */
export function sfString(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

export function headerTemplate(name: string, limit: number, windowMs: number): HeaderTemplate {
  const quoted = sfString(name);
  return {
    policy: `${quoted};q=${limit};w=${windowMs / 1000}`,
    ratelimitPrefix: `${quoted};r=`,
    limit: String(limit),
    bucket: name,
  };
}

/** Whole seconds until `msBeforeNext` has passed, rounded up. */
export function secondsUntil(msBeforeNext: number): number {
  return Math.ceil(Math.max(msBeforeNext, 0) / 1000);
}

/** Retry-After in whole seconds: rounded up, and at least 1 so that a client never retries at once. */
export function retryAfterSeconds(msBeforeNext: number): number {
  return Math.max(secondsUntil(msBeforeNext), 1);
}

/**
 * Sets every rate-limit header of a counted response. Where another limiter has already set them on this response,
 * its policies stay: the IETF fields are lists, so this limiter's item is appended to each; the legacy fields show
 * the most restrictive limiter (fewest requests remaining, then the latest reset). Returns the milliseconds until
 * the reset the legacy fields show, which `Retry-After` must not point before.
 */
export function setRateLimitHeaders(
  res: ServerResponse,
  template: HeaderTemplate,
  remaining: number,
  msBeforeNext: number,
  now: number,
): number {
  const ms = Math.max(msBeforeNext, 0);
  const item = `${template.ratelimitPrefix}${remaining};t=${secondsUntil(ms)}`;
  const policies = res.getHeader('RateLimit-Policy');
  if (policies === undefined) {
    res.setHeader('RateLimit-Policy', template.policy);
    res.setHeader('RateLimit', item);
  } else {
    res.setHeader('RateLimit-Policy', `${String(policies)}, ${template.policy}`);
    res.setHeader('RateLimit', `${String(res.getHeader('RateLimit'))}, ${item}`);
    const before = Number(res.getHeader('X-RateLimit-Remaining'));
    const beforeMs = Number(res.getHeader('X-RateLimit-Reset-After')) * 1000;
    if (before < remaining || (before === remaining && beforeMs >= ms)) return beforeMs;
  }
  res.setHeader('X-RateLimit-Limit', template.limit);
  res.setHeader('X-RateLimit-Remaining', String(remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.ceil((now + ms) / 1000)));
  res.setHeader('X-RateLimit-Reset-After', String(ms / 1000));
  res.setHeader('X-RateLimit-Bucket', template.bucket);
  return ms;
}

/**
 * Sets the headers of an endpoint of several limits: every limit's policy in the IETF fields, and the most
 * restrictive in the legacy ones, as {@link setRateLimitHeaders} stacks them. Returns what that returns.
 */
export function setLimitsHeaders(
  res: ServerResponse,
  limits: readonly { readonly limit: number; readonly headers: HeaderTemplate }[],
  counts: readonly { readonly count: number; readonly resetAt: number }[],
  now: number,
): number {
  let waitMs = 0;
  limits.forEach(({ limit, headers }, i) => {
    const { count, resetAt } = counts[i] as { count: number; resetAt: number };
    waitMs = setRateLimitHeaders(res, headers, count > limit ? 0 : limit - count, resetAt - now, now);
  });
  return waitMs;
}
