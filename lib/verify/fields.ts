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

/** A response, with when it was sent and when it arrived, on the run's clock. */
export interface ProbeAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly fields: Fields;
  readonly sent: number;
  readonly at: number;
}

/** A server error may stand in a 429's place: it is a finding of its own there. */
export function isRefusal(status: number): boolean {
  return status === 429 || status >= 500;
}

/** What a server that honours the rows tells: per row, the requests counted with this one; the row shown. */
export interface Expectation {
  readonly counts: readonly (number | undefined)[];
  readonly shown: number | undefined;
}

const dialectNames: Readonly<Record<Dialect, string>> = {
  ietf: 'drafts 8-11',
  'draft-7': 'draft 7',
  'draft-6': 'draft 6',
  'x-ratelimit': 'X-RateLimit',
};

const NOTED_FIELDS = RATE_LIMIT_FIELDS.filter((field) => !(DRAFT_6_FIELDS as readonly string[]).includes(field));

/** What the answers of one endpoint carried, for its report and its notes. */
export class FieldsSeen {
  private readonly fields = new Set<string>();
  readonly sent: string[] = [];

  constructor(private readonly found: Findings) {}

  private send(name: string): void {
    if (!this.sent.includes(name)) this.sent.push(name);
  }

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

  retryAfter(date: boolean): void {
    this.send(date ? 'Retry-After (date)' : 'Retry-After');
  }

  noteMissing(): void {
    const missing = NOTED_FIELDS.filter((field) => !this.fields.has(field));
    if (this.fields.size === 0) this.found.noteField('sent no rate-limit fields');
    else if (missing.length > 0) this.found.noteField(`sent no ${missing.join(', ')}`);
  }
}

function quote(headers: Headers, field: string): string {
  const value = headers.get(field) ?? '';
  return field === 'RateLimit' || field === 'RateLimit-Policy' ? asSent(value) : shown(value);
}

const keyed = (told: Told, n: number) => (told.key === undefined ? String(n) : `${told.key}=${n}`);

// A Unix time is read against `Date`, or this run's clock: a server with a faked clock still writes `Date` from the
// real one. Both are whole seconds: a second of slack.
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

// What the expectation leaves unknown is not checked; a field that cannot be read is a finding.
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

// A 429's Retry-After must not be longer than the window, nor earlier than the answer's reset; returns its seconds.
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
  // Of several limits, the latest reset of those with no request left.
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
