// Tells the kind of window a server counts from the requests sent on either side of the end of one of its windows.
import type { WindowKind } from '../contract/limit.js';
import { type ProbeAnswer, isRefusal } from './fields.js';
import { type Findings, requestsText, tenths } from './findings.js';
import type { FirstWindow, Row } from './steps.js';
import type { WindowSeen } from './types.js';

// After `limit - 1` requests from the window's middle, a fixed window lets `fits` pass past its end within less than
// a window; a sliding one still holds the `limit - 1`, so it lets one pass and refuses the next.
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
    // The contract does not say which kind to count: one that cannot be told is noted, not held against it.
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
