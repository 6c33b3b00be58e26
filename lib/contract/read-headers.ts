// Reading an answer's rate-limit fields, in every dialect servers write them: one reader, the client's and verify's.
import { type BareItem, isInnerList, type Item, parseDictionary, parseList, Token } from 'structured-headers';
import { MAX_DURATION_MS } from '../shared/check.js';

// 'ietf': drafts 8 to 11's lists (`"bots";r=24;t=37`); 'draft-7': `limit=25, remaining=24, reset=37`; 'draft-6':
// `RateLimit-Limit`, `-Remaining`, `-Reset`; 'x-ratelimit': `X-RateLimit-*`. Policies of the last three: `25;w=60`.
export type Dialect = 'ietf' | 'draft-7' | 'draft-6' | 'x-ratelimit';

/** A number a field tells, under `key` if any: requests, or ms (a window, or from the answer to a reset). */
export interface Told {
  readonly field: string;
  readonly key: string | undefined;
  readonly value: number;
  /** A reset written as a Unix time: that time. */
  readonly unixMs?: number | undefined;
}

/** A member of `RateLimit-Policy`; an IETF one's `name` pairs it with a member of `RateLimit`. */
export interface Policy {
  readonly dialect: Dialect;
  readonly name: string | undefined;
  readonly quota: Told | undefined;
  readonly window: Told | undefined;
}

/** Where a limit stands: a member of `RateLimit`, or draft 6's or the X- fields; `resets` most exact first. */
export interface State extends Omit<Policy, 'window'> {
  readonly remaining: Told | undefined;
  readonly resets: readonly Told[];
}

export interface Skipped {
  readonly field: string;
  readonly value: string;
  readonly why: string;
}

export interface Fields {
  readonly present: readonly string[];
  readonly policies: readonly Policy[];
  readonly states: readonly State[];
  readonly skipped: readonly Skipped[];
}

/** One limit as an answer tells the client; the legacy fields tell no window, `resetMs` counts from the arrival. */
export interface ServerLimit {
  readonly limit: number | undefined;
  readonly windowMs: number | undefined;
  readonly remaining: number;
  readonly resetMs: number;
}

/** A client keeps a number per request of a window, so a larger limit is skipped and the table's stays. */
const MAX_SERVER_LIMIT = 1_000_000;
const MAX_POLICIES = 16;
/** A longer field is skipped, and the parser never sees it. */
export const MAX_FIELD_CHARS = 4096;
/** A reset larger than this many seconds is a Unix time; smaller, the seconds until the reset (a year at most). */
const UNIX_AFTER_SECONDS = MAX_DURATION_MS / 1000;

const X_FIELDS = [
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-RateLimit-Reset-After',
] as const;
export const DRAFT_6_FIELDS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] as const;
export const RATE_LIMIT_FIELDS = ['RateLimit-Policy', 'RateLimit', ...X_FIELDS, ...DRAFT_6_FIELDS] as const;

function dateOf(headers: Headers): number | undefined {
  const date = Date.parse(headers.get('Date') ?? '');
  return Number.isNaN(date) ? undefined : date;
}

/** How far before the answer a time it tells may lie and still be read as now: `Date` is whole seconds. */
const PAST_SLACK_MS = 60_000;

/** Ms until `at` by the answer's `Date`, else by `now` (a test may move it), where either puts it within a year. */
function untilMs(at: number, date: number | undefined, now: number): number | undefined {
  const within = (clock: number | undefined) =>
    clock !== undefined && at - clock >= -PAST_SLACK_MS && at - clock <= MAX_DURATION_MS;
  const clock = within(date) ? date : within(now) ? now : undefined;
  return clock === undefined ? undefined : Math.max(at - clock, 0);
}

function nameOf(value: BareItem): string | undefined {
  return typeof value === 'string' || value instanceof Token ? value.toString() : undefined;
}

/** What `parse` reads of `text`; undefined where `text` is not a Structured Field of its kind. */
function parsed<T>(parse: (text: string) => T, text: string): T | undefined {
  try {
    return parse(text);
  } catch {
    return undefined;
  }
}

const sentence = (n: number) => new Intl.NumberFormat('en').format(n);
const notCount = (least: number) => `not a whole number of requests from ${least} to ${sentence(MAX_SERVER_LIMIT)}`;
const notSeconds = (least: number) => `not a number of seconds from 0${least > 0 ? ' (excluded)' : ''} to a year`;

class Reader {
  readonly present: string[];
  readonly policies: Policy[] = [];
  readonly states: State[] = [];
  readonly skipped: Skipped[] = [];
  private readonly date: number | undefined;

  constructor(
    private readonly headers: Headers,
    private readonly now: number,
  ) {
    this.present = RATE_LIMIT_FIELDS.filter((field) => headers.has(field));
    this.date = dateOf(headers);
  }

  skip(field: string, value: string, why: string): undefined {
    this.skipped.push({ field, value, why });
    return undefined;
  }

  text(field: string): string | undefined {
    const value = this.headers.get(field);
    if (value === null || value.length <= MAX_FIELD_CHARS) return value ?? undefined;
    return this.skip(field, value, `${sentence(value.length)} characters, more than ${sentence(MAX_FIELD_CHARS)}`);
  }

  count(value: unknown, least: number, field: string, key: string | undefined, text: string): Told | undefined {
    if (value === undefined) return undefined;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= least && value <= MAX_SERVER_LIMIT) {
      return { field, key, value };
    }
    const why = notCount(least);
    return this.skip(field, text, key === undefined ? why : `${key}=${String(value)} is ${why}`);
  }

  seconds(value: unknown, least: number, field: string, key: string | undefined, text: string): Told | undefined {
    if (value === undefined) return undefined;
    const ms = typeof value === 'number' && Number.isFinite(value) ? Math.round(value * 1000) : Number.NaN;
    if (ms >= least && ms <= MAX_DURATION_MS) return { field, key, value: ms };
    const why = notSeconds(least);
    return this.skip(field, text, key === undefined ? why : `${key}=${String(value)} is ${why}`);
  }

  number(field: string, decimals: boolean): number | undefined {
    const text = this.text(field)?.trim();
    if (text === undefined) return undefined;
    const pattern = decimals ? /^\d{1,15}(\.\d{1,9})?$/ : /^\d{1,15}$/;
    if (pattern.test(text)) return Number(text);
    return this.skip(field, text, decimals ? notSeconds(0) : notCount(0));
  }

  /** Seconds until the reset; past a year, where `unix`, its Unix time. */
  reset(field: string, unix = true): Told | undefined {
    const seconds = this.number(field, true);
    if (seconds === undefined || !unix || seconds <= UNIX_AFTER_SECONDS) {
      return this.seconds(seconds, 0, field, undefined, String(seconds));
    }
    const unixMs = seconds * 1000;
    const ms = untilMs(unixMs, this.date, this.now);
    if (ms === undefined)
      return this.skip(field, String(seconds), 'a Unix time in the past, or more than a year ahead');
    return { field, key: undefined, value: ms, unixMs };
  }

  list(text: string): Item[] | undefined {
    const members = parsed(parseList, text);
    return members?.filter((member): member is Item => !isInnerList(member)).slice(0, MAX_POLICIES);
  }

  readPolicies(): void {
    const field = 'RateLimit-Policy';
    const text = this.text(field);
    if (text === undefined) return;
    const items = this.list(text);
    if (items === undefined) {
      this.skip(field, text, 'not a Structured Field list');
      return;
    }
    const draft6 = DRAFT_6_FIELDS.some((name) => this.headers.has(name));
    for (const [value, params] of items) {
      // `25;w=60` (drafts 6 and 7), or a named policy of drafts 8 to 11.
      const named = typeof value !== 'number';
      this.policies.push({
        dialect: named ? 'ietf' : draft6 ? 'draft-6' : 'draft-7',
        name: named ? nameOf(value) : undefined,
        quota: named ? this.count(params.get('q'), 1, field, 'q', text) : this.count(value, 1, field, undefined, text),
        window: this.seconds(params.get('w'), 1, field, 'w', text),
      });
    }
  }

  readRateLimit(): void {
    const field = 'RateLimit';
    const text = this.text(field);
    if (text === undefined) return;
    const items = this.list(text);
    if (items?.some(([, params]) => params.has('r') || params.has('t'))) {
      for (const [value, params] of items) {
        const reset = this.seconds(params.get('t'), 0, field, 't', text);
        this.states.push({
          dialect: 'ietf',
          name: nameOf(value),
          quota: undefined,
          remaining: this.count(params.get('r'), 0, field, 'r', text),
          resets: reset ? [reset] : [],
        });
      }
      return;
    }
    const members = parsed(parseDictionary, text);
    const get = (key: string) => {
      const member = members?.get(key);
      return member === undefined || isInnerList(member) ? undefined : member[0];
    };
    if (!members || !['limit', 'remaining', 'reset'].some((key) => members.has(key))) {
      this.skip(field, text, 'neither a list of policies nor limit=, remaining=, reset=');
      return;
    }
    const reset = this.seconds(get('reset'), 0, field, 'reset', text);
    this.states.push({
      dialect: 'draft-7',
      name: undefined,
      quota: this.count(get('limit'), 1, field, 'limit', text),
      remaining: this.count(get('remaining'), 0, field, 'remaining', text),
      resets: reset ? [reset] : [],
    });
  }

  readSingle(dialect: Dialect, limit: string, remaining: string, resets: readonly (Told | undefined)[]): void {
    const quota = this.number(limit, false);
    const left = this.number(remaining, false);
    this.states.push({
      dialect,
      name: undefined,
      quota: this.count(quota, 1, limit, undefined, String(quota)),
      remaining: this.count(left, 0, remaining, undefined, String(left)),
      resets: resets.filter((told) => told !== undefined),
    });
  }

  read(): Fields {
    this.readPolicies();
    this.readRateLimit();
    if (DRAFT_6_FIELDS.some((name) => this.headers.has(name))) {
      this.readSingle('draft-6', 'RateLimit-Limit', 'RateLimit-Remaining', [this.reset('RateLimit-Reset')]);
    }
    if (this.present.some((field) => field.startsWith('X-'))) {
      const resets = [this.reset('X-RateLimit-Reset-After', false), this.reset('X-RateLimit-Reset')];
      this.readSingle('x-ratelimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', resets);
    }
    return { present: this.present, policies: this.policies, states: this.states, skipped: this.skipped };
  }
}

/** An answer's rate-limit fields in every dialect; an unreadable value is skipped and listed, never thrown. */
export function readFields(headers: Headers, now: number): Fields {
  return new Reader(headers, now).read();
}

/** The dialects in the order the client trusts them: the IETF lists, then those that tell one limit. */
const trusted: readonly Dialect[] = ['ietf', 'draft-7', 'draft-6', 'x-ratelimit'];

/** Every limit an answer reports, in the first dialect of `trusted` that tells one; undefined without any field. */
export function readServerLimits(headers: Headers, now: number): readonly ServerLimit[] | undefined {
  const { present, policies, states } = readFields(headers, now);
  if (present.length === 0) return undefined;
  const legacy = states.find((state) => state.dialect === 'x-ratelimit');
  const bucket = headers.get('X-RateLimit-Bucket');
  for (const dialect of trusted) {
    const limits: ServerLimit[] = [];
    for (const state of states.filter((s) => s.dialect === dialect)) {
      const reset = state.resets[0];
      if (!state.remaining || !reset) continue;
      let resetMs = reset.value;
      let policy: Policy | undefined;
      if (dialect === 'ietf') {
        policy = policies.find((p) => p.dialect === 'ietf' && p.name === state.name);
        // `t` is rounded up to whole seconds; the legacy fields have the milliseconds, when they speak of this limit.
        const exact = state.name === bucket ? legacy?.resets[0]?.value : undefined;
        if (exact !== undefined && exact <= resetMs) resetMs = exact;
      } else {
        const own = policies.filter((p) => p.dialect !== 'ietf');
        policy = own.find((p) => p.quota?.value === state.quota?.value) ?? (own.length === 1 ? own[0] : undefined);
      }
      limits.push({
        limit: state.quota?.value ?? policy?.quota?.value,
        windowMs: policy?.window?.value,
        remaining: state.remaining.value,
        resetMs,
      });
    }
    if (limits.length > 0) return limits;
  }
  return [];
}

interface RetryAfter {
  readonly ms: number;
  readonly date: boolean;
}

/** `Retry-After`, seconds or an HTTP date; it may be long: the client weighs it against `maxWaitMs`. */
export function readRetryAfter(headers: Headers, now: number): RetryAfter | { skipped: string } | undefined {
  const text = headers.get('Retry-After')?.trim();
  if (text === undefined || text === '') return text === undefined ? undefined : { skipped: 'empty' };
  if (text.length > 64) return { skipped: `${sentence(text.length)} characters, not seconds nor an HTTP date` };
  if (/^\d{1,15}$/.test(text)) return { ms: Number(text) * 1000, date: false };
  // An HTTP date opens with its day's name; Date.parse alone would read "1.5" or "-1" as dates long past.
  const at = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(at)) return { skipped: 'neither whole seconds nor an HTTP date' };
  // A date years away is still a date: the client refuses to wait that long, rather than retry sooner.
  return { ms: untilMs(at, dateOf(headers), now) ?? Math.max(at - now, 0), date: true };
}
