// What an answer says of its endpoint's limit: the IETF RateLimit fields (a structured-field parser), else legacy ones.
import { isInnerList, type Item, parseList } from 'structured-headers';

/** The server's view of one endpoint's counter, as far as an answer tells it. */
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

function items(value: string | null): Item[] {
  if (value === null) return [];
  try {
    return parseList(value).filter((member): member is Item => !isInnerList(member));
  } catch {
    return [];
  }
}

function param(item: Item, name: string): number | undefined {
  const value = item[1].get(name);
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function number(headers: Headers, name: string): number | undefined {
  const text = headers.get(name);
  if (text === null || !/^\d+(\.\d+)?$/.test(text.trim())) return undefined;
  return Number(text);
}

/**
 * The most restrictive policy an answer reports (fewest requests left, then the latest reset), as the server's
 * `X-RateLimit-*` fields and `Retry-After` do; undefined when it reports none. `now` is when the answer arrived.
 */
export function readServerLimit(headers: Headers, now: number): ServerLimit | undefined {
  const legacyResetMs = () => {
    const after = number(headers, 'X-RateLimit-Reset-After');
    if (after !== undefined) return after * 1000;
    const reset = number(headers, 'X-RateLimit-Reset');
    return reset === undefined ? undefined : Math.max(reset * 1000 - now, 0);
  };
  let chosen: { name: unknown; remaining: number; resetMs: number } | undefined;
  for (const item of items(headers.get('RateLimit'))) {
    const remaining = param(item, 'r');
    const t = param(item, 't');
    if (remaining === undefined || t === undefined) continue;
    if (!chosen || remaining < chosen.remaining || (remaining === chosen.remaining && t * 1000 > chosen.resetMs)) {
      chosen = { name: item[0], remaining, resetMs: t * 1000 };
    }
  }
  if (chosen) {
    const policy = items(headers.get('RateLimit-Policy')).find((item) => item[0] === chosen.name);
    const q = policy && param(policy, 'q');
    const w = policy && param(policy, 'w');
    // `t` is rounded up to whole seconds; the legacy field has the milliseconds, when it speaks of the same counter.
    const sameBucket = headers.get('X-RateLimit-Bucket') === chosen.name;
    const exact = sameBucket ? legacyResetMs() : undefined;
    return {
      limit: q !== undefined && Number.isSafeInteger(q) && q > 0 ? q : undefined,
      windowMs: w !== undefined && w > 0 ? w * 1000 : undefined,
      remaining: chosen.remaining,
      resetMs: exact !== undefined && exact <= chosen.resetMs ? exact : chosen.resetMs,
    };
  }
  const remaining = number(headers, 'X-RateLimit-Remaining');
  const resetMs = legacyResetMs();
  if (remaining === undefined || resetMs === undefined) return undefined;
  const limit = number(headers, 'X-RateLimit-Limit');
  return {
    limit: limit !== undefined && Number.isSafeInteger(limit) && limit > 0 ? limit : undefined,
    windowMs: undefined,
    remaining: Math.floor(remaining),
    resetMs,
  };
}

/** `Retry-After` in milliseconds: whole seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const text = headers.get('Retry-After')?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(at - now, 0);
}
