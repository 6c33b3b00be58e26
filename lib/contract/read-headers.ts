// Reading an answer's rate-limit fields: its endpoint's limits for the client, the structured-field lists for both.
import { isInnerList, type Item, parseList } from 'structured-headers';
import { MAX_DURATION_MS } from '../shared/check.js';

/** The server's view of one limit of an endpoint, as far as an answer tells it. */
export interface ServerLimit {
  /** Requests per window (`q`, or `X-RateLimit-Limit`). */
  readonly limit: number | undefined;
  /** Window length (`w`); the legacy fields do not tell it. */
  readonly windowMs: number | undefined;
  /** Requests left in the window (`r`, or `X-RateLimit-Remaining`). */
  readonly remaining: number;
  /** Milliseconds until the window ends, from when the answer arrived. */
  readonly resetMs: number;
}

/**
 * The largest limit believed: a client keeps one number per request of a window, so a server that claims more is
 * not followed (its field is ignored, and the table's limit stays).
 */
const MAX_SERVER_LIMIT = 1_000_000;
/** Policies read from one answer at the most; the rest of a longer list is ignored. */
const MAX_POLICIES = 16;
/** The rate-limit fields an answer may carry, apart from Retry-After. */
export const RATE_LIMIT_FIELDS = [
  'RateLimit-Policy',
  'RateLimit',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-RateLimit-Reset-After',
] as const;

/** The items of a Structured Field list (RFC 9651 §3.1), its inner lists left out; undefined when it does not parse. */
export function listItems(value: string): Item[] | undefined {
  try {
    return parseList(value).filter((member): member is Item => !isInnerList(member));
  } catch {
    return undefined;
  }
}

/** The first MAX_POLICIES items of a field that is a list; none when it is absent or does not parse. */
function items(value: string | null): Item[] {
  return value === null ? [] : (listItems(value) ?? []).slice(0, MAX_POLICIES);
}

/** A count the client can follow: a whole number from `least` to MAX_SERVER_LIMIT, else undefined. */
function count(value: unknown, least: number): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= least && value <= MAX_SERVER_LIMIT
    ? value
    : undefined;
}

/** Seconds as milliseconds, when they make a duration the package accepts (at most a year), else undefined. */
function duration(seconds: unknown, least: number): number | undefined {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds)) return undefined;
  const ms = Math.round(seconds * 1000);
  return ms >= least && ms <= MAX_DURATION_MS ? ms : undefined;
}

function decimal(headers: Headers, name: string): number | undefined {
  const text = headers.get(name)?.trim();
  return text !== undefined && /^\d{1,15}(\.\d{1,9})?$/.test(text) ? Number(text) : undefined;
}

function legacyResetMs(headers: Headers, now: number): number | undefined {
  const after = duration(decimal(headers, 'X-RateLimit-Reset-After'), 0);
  if (after !== undefined) return after;
  const reset = decimal(headers, 'X-RateLimit-Reset');
  return reset === undefined ? undefined : duration(Math.max(reset - now / 1000, 0), 0);
}

/**
 * Every limit an answer reports, in the order of its `RateLimit` field (at most 16), else the one its legacy
 * `X-RateLimit-*` fields report; `undefined` when it carries no rate-limit field at all (a server that does not
 * limit this client). A malformed or absurd value (a window over a year, a limit over MAX_SERVER_LIMIT) is
 * ignored, never thrown: the table's value stays. `now` is when the answer arrived.
 */
export function readServerLimits(headers: Headers, now: number): readonly ServerLimit[] | undefined {
  if (RATE_LIMIT_FIELDS.every((name) => headers.get(name) === null)) return undefined;
  const policies = items(headers.get('RateLimit-Policy'));
  const bucket = headers.get('X-RateLimit-Bucket');
  const limits: ServerLimit[] = [];
  for (const item of items(headers.get('RateLimit'))) {
    const remaining = count(item[1].get('r'), 0);
    let resetMs = duration(item[1].get('t'), 0);
    if (remaining === undefined || resetMs === undefined) continue;
    // `t` is rounded up to whole seconds; the legacy fields have the milliseconds, when they speak of this limit.
    const exact = item[0] === bucket ? legacyResetMs(headers, now) : undefined;
    if (exact !== undefined && exact <= resetMs) resetMs = exact;
    const policy = policies.find((p) => p[0] === item[0]);
    limits.push({
      limit: policy && count(policy[1].get('q'), 1),
      windowMs: policy && duration(policy[1].get('w'), 1),
      remaining,
      resetMs,
    });
  }
  if (limits.length > 0) return limits;
  const remaining = count(decimal(headers, 'X-RateLimit-Remaining'), 0);
  const resetMs = legacyResetMs(headers, now);
  if (remaining === undefined || resetMs === undefined) return [];
  return [{ limit: count(decimal(headers, 'X-RateLimit-Limit'), 1), windowMs: undefined, remaining, resetMs }];
}

/**
 * `Retry-After` in milliseconds: whole seconds or an HTTP date; undefined when absent or unreadable. It may be
 * long (a server may ask for hours): the client compares it with `maxWaitMs`, and never sets a timer from it alone.
 */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const text = headers.get('Retry-After')?.trim();
  if (!text) return undefined;
  if (/^\d{1,15}$/.test(text)) return Number(text) * 1000;
  // An HTTP date opens with its day's name; Date.parse alone would read "1.5" or "-1" as dates long past.
  if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /.test(text)) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(at - now, 0);
}
