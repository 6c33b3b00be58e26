// Tells the kind of window a server counts from the requests sent on either side of the end of one of its windows.
import type { WindowKind } from '../contract/limit.js';
import { type ProbeAnswer, isRefusal } from './fields.js';
import { type Findings, requestsText, tenths } from './findings.js';
import type { FirstWindow, Row } from './steps.js';
import type { WindowSeen } from './types.js';

/**
 * Tells the kind of window from the requests across the end of the first row's window: `limit - 1` sent from its
 * middle, done at least the margin before its end, then `after`, the margin after its end, up to `fits` until the
 * first 429. Fixed windows let them all pass within less than a window; a sliding window still holds the
 * `limit - 1`, so it lets one pass and refuses the next. A side that does not fit its time tells nothing, and is
 * noted. What contradicts the `expected` kind is found; `retryAfterOf` checks a 429's Retry-After, and returns its
 * seconds when they are usable.
 */
export function kindSeen(
  expected: WindowKind,
  row: Row,
  opened: FirstWindow,
  after: readonly ProbeAnswer[],
  found: Findings,
  retryAfterOf: (answer: ProbeAnswer) => number | undefined,
): WindowSeen {
  const { limit, windowMs, seconds, label } = row;
  const { beforeStart, beforeEnd, fits } = opened;
  const last = after.at(-1) as ProbeAnswer;
  const refused = isRefusal(last.status);
  const passed = after.length - (refused ? 1 : 0);
  const span = last.at - beforeStart;
  let seen: WindowSeen = 'unclear';
  if (passed === 1 && refused) seen = 'sliding';
  else if (passed < fits && last.status !== 429) {
    found.find(
      'boundary',
      `${label}answered ${last.status} on request ${passed + 1} after the end of a window, within the contract's ` +
        `limit of ${limit}`,
    );
  } else if (passed < fits) {
    found.find(
      'boundary',
      `${label}neither fixed nor sliding window: allowed ${requestsText(limit - 1)} before the end of a window and ` +
        `${passed} after it; a fixed window allows ${fits} after it, a sliding one 1`,
    );
  } else if (span < windowMs) seen = 'fixed';
  else {
    // The contract does not say which kind it counts: a kind that cannot be told is noted, not held against it.
    found.note(
      `${label}window kind inconclusive: ${requestsText(limit - 1 + fits)} across the end of a window took ` +
        `${tenths(span)} s, not less than the window of ${seconds} s`,
    );
  }
  if (seen === 'fixed' && expected === 'sliding') {
    found.find(
      'boundary',
      `${label}fixed window: allowed ${requestsText(limit - 1 + fits)} within ${tenths(span)} s ` +
        `across the end of a window (${limit - 1} before it, ${fits} after it); ` +
        `a sliding window allows ${limit} in any ${seconds} s`,
    );
  } else if (seen === 'sliding') {
    if (expected === 'fixed') {
      found.find(
        'boundary',
        `${label}sliding window: allowed ${requestsText(limit - 1)} before the end of a window and 1 after it, ` +
          `then 429; a fixed window allows ${fits} after it`,
      );
    }
    found.refusedAs(last.status);
    const retryAfter = retryAfterOf(last);
    // The oldest request counted is the first sent from the middle of the window: it leaves a window after it.
    const soonest = Math.floor((beforeStart + windowMs - last.at) / 1000);
    const latest = Math.ceil((beforeEnd + windowMs - (after[0] as ProbeAnswer).at) / 1000);
    if (retryAfter !== undefined && (retryAfter < soonest || retryAfter > latest)) {
      found.findField(
        'retry-after-boundary',
        `${label}Retry-After says ${retryAfter} on the 429 after the end of a window; its oldest request ` +
          `counted leaves the window in ${soonest === latest ? soonest : `${soonest} to ${latest}`} s`,
      );
    }
  }
  return seen;
}
