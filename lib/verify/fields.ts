// Checks an answer's rate-limit fields and Retry-After against the rows of the endpoint it was counted on.
import type { Limit } from '../contract/limit.js';
import { listItems, RATE_LIMIT_FIELDS } from '../contract/read-headers.js';
import { type Findings, shown } from './findings.js';

/** A response, as far as the checks need it. */
export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  /** When it was sent, and when it arrived, on the run's clock. */
  readonly sent: number;
  readonly at: number;
}

/** What a server that honours the rows tells in an answer's fields. */
export interface Expectation {
  /** Per row, the requests counted in its window with this one (a refused one is counted on none): or unknown. */
  readonly counts: readonly (number | undefined)[];
  /** The row the legacy fields show (fewest requests left, then the latest reset), or undefined when unknown. */
  readonly shown: number | undefined;
}

/** Records which rate-limit fields an answer carries, to note those never sent. */
export function fieldsOf(answer: Answer, seen: Set<string>): void {
  for (const field of RATE_LIMIT_FIELDS) if (answer.headers.has(field)) seen.add(field);
}

/**
 * Checks the rate-limit fields of an answer: each row's policy and `RateLimit` item, and the legacy fields of the
 * row they show. What the expectation leaves unknown is not checked.
 */
export function checkFields(answer: Answer, limits: readonly Limit[], expected: Expectation, found: Findings): void {
  const { headers } = answer;
  const refused = answer.status === 429;
  const several = limits.length > 1;
  const left = limits.map(({ limit }, i) => {
    const count = expected.counts[i];
    return count === undefined ? undefined : Math.max(limit - count, 0);
  });
  // A 429 that no row should have refused tells nothing of which row refused it, nor which one the fields show.
  const unforeseen = refused && !left.includes(0);
  const remaining = unforeseen ? limits.map(() => undefined) : left;
  const on = (i: number) => (refused ? 'on the 429' : `on request ${expected.counts[i]}`);

  const policy = headers.get('ratelimit-policy');
  const policies = policy === null ? undefined : listItems(policy);
  const ratelimit = headers.get('ratelimit');
  const items = ratelimit === null ? undefined : listItems(ratelimit);
  limits.forEach(({ limit, windowMs }, i) => {
    const seconds = windowMs / 1000;
    let name: unknown;
    if (policy !== null) {
      const matching = policies?.find(([, p]) => p.get('q') === limit && p.get('w') === seconds);
      name = (matching ?? (several ? undefined : policies?.[0]))?.[0];
      if (!matching) {
        found.findField(`policy ${i}`, `RateLimit-Policy says ${policy}, contract says q=${limit};w=${seconds}`);
      }
    }
    if (ratelimit === null) return;
    const item = items?.find(([n]) => n === name) ?? (several ? undefined : items?.[0]);
    if (several && !item) return;
    const r = item?.[1].get('r');
    const t = item?.[1].get('t');
    if (remaining[i] !== undefined && r !== remaining[i]) {
      found.findField(`r ${i}`, `RateLimit says ${ratelimit} ${on(i)}, expected r=${remaining[i]}`);
    }
    if (typeof t !== 'number' || t < 0 || t > seconds) {
      found.findField(`t ${i}`, `RateLimit says ${ratelimit}, not t=0 to t=${seconds} (the contract's window)`);
    }
  });

  const row = unforeseen ? undefined : expected.shown;
  const longest = Math.max(...limits.map((l) => l.windowMs)) / 1000;
  const seconds = row === undefined ? longest : (limits[row] as Limit).windowMs / 1000;
  const limitField = headers.get('x-ratelimit-limit');
  const limit = row === undefined ? undefined : (limits[row] as Limit).limit;
  if (limitField !== null && limit !== undefined && limitField !== String(limit)) {
    found.findField('x-limit', `X-RateLimit-Limit says ${shown(limitField)}, contract says ${limit}`);
  }
  const remainingField = headers.get('x-ratelimit-remaining');
  const expectedLeft = row === undefined ? undefined : remaining[row];
  if (remainingField !== null && expectedLeft !== undefined && remainingField !== String(expectedLeft)) {
    found.findField(
      'x-remaining',
      `X-RateLimit-Remaining says ${shown(remainingField)} ${on(row as number)}, expected ${expectedLeft}`,
    );
  }
  const resetAfter = headers.get('x-ratelimit-reset-after');
  if (resetAfter !== null && (!/^\d+(\.\d+)?$/.test(resetAfter) || Number(resetAfter) > seconds)) {
    found.findField(
      'x-reset-after',
      `X-RateLimit-Reset-After says ${shown(resetAfter)}, not 0 to ${seconds} s (the contract's window)`,
    );
  }
  const reset = headers.get('x-ratelimit-reset');
  if (reset !== null) {
    // An epoch second within a window from now: now by the server's Date, or else by this run's clock (a server
    // whose clock is faked in a test still writes Date from the real one). Both are whole seconds apart from Reset,
    // which is rounded up: one second of slack either way.
    const date = Date.parse(headers.get('date') ?? '');
    const within = (now: number) => Number(reset) - now / 1000 >= -1 && Number(reset) - now / 1000 <= seconds + 1;
    if (!/^\d+$/.test(reset) || !(within(answer.at) || (!Number.isNaN(date) && within(date)))) {
      found.findField(
        'x-reset',
        `X-RateLimit-Reset says ${shown(reset)}, ` +
          `not within ${seconds} s (the contract's window) after the response's Date`,
      );
    }
  }
}

/**
 * Checks the Retry-After of a 429 refused by a row of window `windowMs`; returns its seconds when they are usable.
 * `label` opens the findings of one row of an endpoint of several.
 */
export function checkRetryAfter(answer: Answer, windowMs: number, found: Findings, label = ''): number | undefined {
  const value = answer.headers.get('retry-after');
  const window = windowMs / 1000;
  if (value === null) {
    found.find(`retry-after ${label}`, `${label}no Retry-After on 429`);
    return undefined;
  }
  if (!/^\d+$/.test(value)) {
    found.find(`retry-after ${label}`, `${label}Retry-After says ${shown(value)}, not whole seconds`);
    return undefined;
  }
  const seconds = Number(value);
  if (seconds > window) {
    found.find(
      `retry-after ${label}`,
      `${label}Retry-After says ${seconds}, longer than the contract's window of ${window} s`,
    );
  }
  // The reset of the limit that refused it: of several, the latest of those with no request left.
  const items = listItems(answer.headers.get('ratelimit') ?? '') ?? [];
  const full = items.filter(([, p]) => p.get('r') === 0);
  const ts = (full.length > 0 ? full : items.slice(0, 1)).map(([, p]) => p.get('t'));
  const t = ts.every((x) => typeof x === 'number') && ts.length > 0 ? Math.max(...(ts as number[])) : undefined;
  if (t !== undefined && seconds < t) {
    found.find(`retry-after-t ${label}`, `${label}Retry-After says ${seconds}, earlier than RateLimit t=${t}`);
  }
  return seconds;
}
