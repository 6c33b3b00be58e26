// Checks an answer's rate-limit fields and Retry-After, in whichever dialect, against the rows it was counted on.
import type { Limit } from '../contract/limit.js';
import {
  type Dialect,
  DRAFT_6_FIELDS,
  type Fields,
  RATE_LIMIT_FIELDS,
  readRetryAfter,
  type Told,
} from '../contract/read-headers.js';
import { asSent, type Findings, shown } from './findings.js';

/** A response, as far as the checks need it. */
export interface ProbeAnswer {
  readonly status: number;
  readonly headers: Headers;
  /** Its rate-limit fields, as the shared reader reads them. */
  readonly fields: Fields;
  /** When it was sent, and when it arrived, on the run's clock. */
  readonly sent: number;
  readonly at: number;
}

/**
 * Whether an answer refused its request, as far as counting goes: a 429, or a server error (5xx), which may stand
 * in a 429's place and is a finding of its own there.
 */
export function isRefusal(status: number): boolean {
  return status === 429 || status >= 500;
}

/** What a server that honours the rows tells in an answer's fields. */
export interface Expectation {
  /** Per row, the requests counted in its window with this one (a refused one is counted on none): or unknown. */
  readonly counts: readonly (number | undefined)[];
  /** The row the legacy fields show (fewest requests left, then the latest reset), or undefined when unknown. */
  readonly shown: number | undefined;
}

/** The dialects as the report names them. */
const dialectNames: Readonly<Record<Dialect, string>> = {
  ietf: 'drafts 8-11',
  'draft-7': 'draft 7',
  'draft-6': 'draft 6',
  'x-ratelimit': 'X-RateLimit',
};

/** The fields listed as not sent when the others are: the IETF pair and the legacy ones. */
const NOTED_FIELDS = RATE_LIMIT_FIELDS.filter((field) => !(DRAFT_6_FIELDS as readonly string[]).includes(field));

/** What the answers of one endpoint carried: the fields and dialects, told in its report and noted. */
export class FieldsSeen {
  private readonly fields = new Set<string>();
  /** The dialects and `Retry-After`, in the order first seen. */
  readonly sent: string[] = [];

  constructor(private readonly found: Findings) {}

  private send(name: string): void {
    if (!this.sent.includes(name)) this.sent.push(name);
  }

  /** Records an answer's fields, and notes those in another draft or convention than drafts 8 to 11's. */
  record({ fields }: ProbeAnswer): void {
    for (const field of fields.present) this.fields.add(field);
    if (DRAFT_6_FIELDS.some((field) => this.fields.has(field))) this.fields.add('RateLimit');
    for (const { dialect } of [...fields.policies, ...fields.states]) this.send(dialectNames[dialect]);
    for (const { dialect, resets } of fields.states) {
      if (dialect === 'draft-7')
        this.found.noteField('RateLimit in the syntax of draft 7 (limit=, remaining=, reset=)');
      if (dialect === 'draft-6')
        this.found.noteField('RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset of draft 6');
      const reset = resets.find((told) => told.field === 'X-RateLimit-Reset');
      if (reset && reset.unixMs === undefined) {
        this.found.noteField('X-RateLimit-Reset in seconds until the reset, not a Unix time');
      }
    }
  }

  /** A 429's `Retry-After`, told in the report's list of what was sent. */
  retryAfter(date: boolean): void {
    this.send(date ? 'Retry-After (date)' : 'Retry-After');
  }

  /** Notes the fields never sent: the contract does not require them. */
  noteMissing(): void {
    const missing = NOTED_FIELDS.filter((field) => !this.fields.has(field));
    if (this.fields.size === 0) this.found.noteField('sent no rate-limit fields');
    else if (missing.length > 0) this.found.noteField(`sent no ${missing.join(', ')}`);
  }
}

/** A field's value as a finding quotes it: a structured field as sent, others as `shown`. */
function quote(headers: Headers, field: string): string {
  const value = headers.get(field) ?? '';
  return field === 'RateLimit' || field === 'RateLimit-Policy' ? asSent(value) : shown(value);
}

/** `n`, or `key=n` for a number that is a parameter or a key of its field. */
const keyed = (told: Told, n: number) => (told.key === undefined ? String(n) : `${told.key}=${n}`);

/**
 * Checks the reset a field tells against a window of `seconds`: seconds until it, at most the window; a Unix time,
 * within the window after the answer's `Date`, or this run's clock (a server whose clock is faked in a test still
 * writes `Date` from the real one). Both are whole seconds apart from the reset, rounded up: a second of slack.
 */
function checkReset(answer: ProbeAnswer, told: Told, seconds: number, found: Findings): void {
  const says = `${told.field} says ${quote(answer.headers, told.field)}`;
  if (told.unixMs !== undefined) {
    const date = Date.parse(answer.headers.get('date') ?? '');
    const within = (now: number) => told.unixMs! - now >= -1000 && told.unixMs! - now <= (seconds + 1) * 1000;
    if (!within(answer.at) && (Number.isNaN(date) || !within(date))) {
      found.findField(
        `reset ${told.field}`,
        `${says}, not within ${seconds} s (the contract's window) after the response's Date`,
      );
    }
  } else if (told.value > seconds * 1000) {
    const range = told.key === undefined ? `0 to ${seconds} s` : `${told.key}=0 to ${told.key}=${seconds}`;
    found.findField(`reset ${told.field}`, `${says}, not ${range} (the contract's window)`);
  }
}

/**
 * Checks the rate-limit fields of an answer, in every dialect it writes them: each row's policy and `RateLimit`
 * item of drafts 8 to 11, and the one limit that drafts 6 and 7 and the legacy fields show. What the expectation
 * leaves unknown is not checked; a field that cannot be read is a finding.
 */
export function checkFields(
  answer: ProbeAnswer,
  limits: readonly Limit[],
  expected: Expectation,
  found: Findings,
): void {
  const { headers, fields } = answer;
  const refused = isRefusal(answer.status);
  const several = limits.length > 1;
  const left = limits.map(({ limit }, i) => {
    const count = expected.counts[i];
    return count === undefined ? undefined : Math.max(limit - count, 0);
  });
  // A refusal that no row should have made tells nothing of which row made it, nor which one the fields show.
  const unforeseen = refused && !left.includes(0);
  const remaining = unforeseen ? limits.map(() => undefined) : left;
  const on = (i: number) => (refused ? `on the ${answer.status}` : `on request ${expected.counts[i]}`);

  for (const { field, why } of fields.skipped) {
    found.findField(`unread ${field}`, `${field} says ${quote(headers, field)}: ${why}`);
  }

  const policies = fields.policies.filter((policy) => policy.dialect === 'ietf');
  const states = fields.states.filter((state) => state.dialect === 'ietf');
  limits.forEach(({ limit, windowMs }, i) => {
    const seconds = windowMs / 1000;
    let name: string | undefined;
    if (policies.length > 0) {
      const matching = policies.find((p) => p.quota?.value === limit && p.window?.value === windowMs);
      name = (matching ?? (several ? undefined : policies[0]))?.name;
      if (!matching) {
        found.findField(
          `policy ${i}`,
          `RateLimit-Policy says ${quote(headers, 'RateLimit-Policy')}, contract says q=${limit};w=${seconds}`,
        );
      }
    }
    const state = states.find((s) => s.name === name) ?? (several ? undefined : states[0]);
    if (!state) return;
    const r = state.remaining;
    if (r && remaining[i] !== undefined && r.value !== remaining[i]) {
      found.findField(`r ${i}`, `RateLimit says ${quote(headers, 'RateLimit')} ${on(i)}, expected r=${remaining[i]}`);
    }
    const [t] = state.resets;
    if (t) checkReset(answer, t, seconds, found);
  });

  // Drafts 6 and 7 and the legacy fields show one limit: the row of fewest requests left, then of the latest reset.
  const row = unforeseen ? undefined : expected.shown;
  const shownLimit = row === undefined ? undefined : limits[row];
  const seconds = (shownLimit?.windowMs ?? Math.max(...limits.map((l) => l.windowMs))) / 1000;
  const others = fields.policies.filter((policy) => policy.dialect !== 'ietf');
  if (shownLimit && others.length > 0) {
    const { limit, windowMs } = shownLimit;
    if (!others.some((p) => p.quota?.value === limit && p.window?.value === windowMs)) {
      found.findField(
        'policy shown',
        `RateLimit-Policy says ${quote(headers, 'RateLimit-Policy')}, contract says ${limit};w=${windowMs / 1000}`,
      );
    }
  }
  for (const state of fields.states.filter((s) => s.dialect !== 'ietf')) {
    const { quota, remaining: told } = state;
    if (quota && shownLimit && quota.value !== shownLimit.limit) {
      found.findField(
        `limit ${quota.field}`,
        `${quota.field} says ${quote(headers, quota.field)}, contract says ${keyed(quota, shownLimit.limit)}`,
      );
    }
    const expectedLeft = row === undefined ? undefined : remaining[row];
    if (told && expectedLeft !== undefined && told.value !== expectedLeft) {
      found.findField(
        `remaining ${told.field}`,
        `${told.field} says ${quote(headers, told.field)} ${on(row as number)}, expected ${keyed(told, expectedLeft)}`,
      );
    }
    for (const reset of state.resets) checkReset(answer, reset, seconds, found);
  }
}

/**
 * Checks the `Retry-After` of a 429 refused by a row of window `windowMs`; returns its seconds when they are usable.
 * Absent, it is noted (the contract does not require it); present, it must not be longer than the window, nor
 * earlier than the reset the answer's own fields tell. `label` opens the findings of one row of an endpoint of
 * several. A server error in a 429's place is a finding of its own: its `Retry-After` is not checked.
 */
export function checkRetryAfter(
  answer: ProbeAnswer,
  windowMs: number,
  found: Findings,
  seen: FieldsSeen,
  label = '',
): number | undefined {
  if (answer.status !== 429) return undefined;
  const read = readRetryAfter(answer.headers, answer.at);
  const window = windowMs / 1000;
  if (read === undefined) {
    found.noteField(`${label}no Retry-After on 429`);
    return undefined;
  }
  const says = `${label}Retry-After says ${shown(answer.headers.get('retry-after') ?? '')}`;
  if ('skipped' in read) {
    found.findField(`retry-after ${label}`, `${says}: ${read.skipped}`);
    return undefined;
  }
  seen.retryAfter(read.date);
  if (read.date) found.noteField('Retry-After as an HTTP date, not seconds');
  const seconds = Math.round(read.ms / 1000);
  if (seconds > window) {
    found.findField(`retry-after ${label}`, `${says}, longer than the contract's window of ${window} s`);
  }
  // The reset of the limit that refused it, in whole seconds: of several, the latest of those with no request left.
  const states = answer.fields.states.filter((state) => state.dialect !== 'x-ratelimit' && state.resets[0]);
  const spent = states.filter((state) => state.remaining?.value === 0);
  const resets = (spent.length > 0 ? spent : states.slice(0, 1)).map((state) => state.resets[0] as Told);
  const latest = resets.reduce<Told | undefined>((a, b) => (a && a.value >= b.value ? a : b), undefined);
  if (latest && seconds * 1000 < latest.value) {
    const n = latest.value / 1000;
    const reset = latest.key === undefined ? `${latest.field} says ${n}` : `${latest.field} ${latest.key}=${n}`;
    found.findField(`retry-after-t ${label}`, `${says}, earlier than ${reset}`);
  }
  return seconds;
}
