// The rate-limit response headers: the IETF RateLimit fields (in the syntax of draft 10, 8 or 7) and legacy ones.
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Checker } from '../shared/check.js';
import { remembered } from '../shared/remembered.js';

export const headerSyntaxes = ['draft-7', 'draft-8', 'draft-10'] as const;

/** The draft `RateLimit` and `RateLimit-Policy` follow; drafts 7 and 8 as express-rate-limit writes them. */
export type HeaderSyntax = (typeof headerSyntaxes)[number];

/** A policy's member of `RateLimit-Policy`, and the start of its member of `RateLimit`, before the requests left. */
interface PolicyStrings {
  readonly policy: string;
  readonly prefix: string;
}

/** A limit's header strings in each syntax, computed once when the middleware is created. */
export interface HeaderTemplate extends Readonly<Record<HeaderSyntax, PolicyStrings>> {
  readonly limit: string;
  readonly bucket: string;
}

/** Quotes a string as a Structured Field sf-string (RFC 9651 §3.3.3). */
export function sfString(value: string): string {
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

export function headerTemplate(name: string, limit: number, windowMs: number): HeaderTemplate {
  const quoted = sfString(name);
  const w = windowMs / 1000;
  return {
    'draft-10': { policy: `${quoted};q=${limit};w=${w}`, prefix: `${quoted};r=` },
    'draft-8': { policy: `${quoted}; q=${limit}; w=${w}; pk=:`, prefix: `${quoted}; r=` },
    'draft-7': { policy: `${limit};w=${w}`, prefix: `limit=${limit}, remaining=` },
    limit: String(limit),
    bucket: name,
  };
}

/** Draft 8's partition key as express-rate-limit writes it, so that the client's key is never sent as it is. */
export function partitionKey(key: string): string {
  return Buffer.from(createHash('sha256').update(key).digest('hex').slice(0, 12)).toString('base64');
}

export function secondsUntil(msBeforeNext: number): number {
  return Math.ceil(Math.max(msBeforeNext, 0) / 1000);
}

/** How `String(ms / 1000)` ends for each ms of a second (`.25` for 250), made once. */
const FRACTIONS = Array.from({ length: 1000 }, (_, ms) => (ms === 0 ? '' : String(ms / 1000).slice(1)));

/** `String(ms / 1000)`, from the digits of whole ms: converting a fraction costs several times as much. */
export function secondsText(ms: number): string {
  if (!(ms >= 0 && (ms | 0) === ms)) return String(ms / 1000);
  const whole = (ms / 1000) | 0;
  return `${whole}${FRACTIONS[ms - whole * 1000] as string}`;
}

/** At least 1, so that a client never retries at once. */
export function retryAfterSeconds(msBeforeNext: number): number {
  return Math.max(secondsUntil(msBeforeNext), 1);
}

// Another limiter's fields on the response stay: policies are appended; the legacy fields (and draft 7's `RateLimit`)
// show the most restrictive (fewest remaining, then the latest reset). Each writer returns the ms until the reset
// shown, which `Retry-After` must not precede.
export function headerWriter(syntax: HeaderSyntax) {
  const list = syntax !== 'draft-7';
  const resetKey = syntax === 'draft-10' ? ';t=' : syntax === 'draft-8' ? '; t=' : ', reset=';
  const pk = syntax === 'draft-8' ? remembered(partitionKey) : undefined;
  const one = (
    res: ServerResponse,
    template: HeaderTemplate,
    remaining: number,
    msBeforeNext: number,
    now: number,
    key: string,
  ): number => {
    const ms = Math.max(msBeforeNext, 0);
    const strings = template[syntax];
    const left = String(remaining);
    const item = `${strings.prefix}${left}${resetKey}${secondsUntil(ms)}`;
    const policy = pk ? `${strings.policy}${pk(key)}:` : strings.policy;
    // Spelled in lower case, which getHeader() then need not copy.
    const policies = res.getHeader('ratelimit-policy');
    if (policies === undefined) {
      res.setHeader('RateLimit-Policy', policy);
      res.setHeader('RateLimit', item);
    } else {
      res.setHeader('RateLimit-Policy', `${String(policies)}, ${policy}`);
      if (list) res.setHeader('RateLimit', `${String(res.getHeader('RateLimit'))}, ${item}`);
      const before = Number(res.getHeader('X-RateLimit-Remaining'));
      const beforeMs = Number(res.getHeader('X-RateLimit-Reset-After')) * 1000;
      if (before < remaining || (before === remaining && beforeMs >= ms)) return beforeMs;
      if (!list) res.setHeader('RateLimit', item);
    }
    res.setHeader('X-RateLimit-Limit', template.limit);
    res.setHeader('X-RateLimit-Remaining', left);
    res.setHeader('X-RateLimit-Reset', String(Math.ceil((now + ms) / 1000)));
    res.setHeader('X-RateLimit-Reset-After', secondsText(ms));
    res.setHeader('X-RateLimit-Bucket', template.bucket);
    return ms;
  };
  const several = (
    res: ServerResponse,
    limits: readonly { readonly limit: number; readonly headers: HeaderTemplate }[],
    counts: readonly { readonly count: number; readonly resetAt: number }[],
    now: number,
    key: string,
  ): number => {
    let waitMs = 0;
    limits.forEach(({ limit, headers }, i) => {
      const { count, resetAt } = counts[i] as { count: number; resetAt: number };
      waitMs = one(res, headers, count > limit ? 0 : limit - count, resetAt - now, now, key);
    });
    return waitMs;
  };
  return { one, several };
}

/** The writer of option `headers`: `true` (draft 10), a draft's name, or `false` for none (undefined). */
export function compileHeaders(check: Checker, value: unknown): ReturnType<typeof headerWriter> | undefined {
  if (value === undefined || value === true) return headerWriter('draft-10');
  if (value === false) return undefined;
  return headerWriter(check.oneOf(value, headerSyntaxes, 'options.headers'));
}
