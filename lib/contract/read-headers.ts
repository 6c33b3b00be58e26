// Reading an answer's rate-limit fields, in every dialect servers write them: one reader, the client's and verify's.
import { type BareItem, isInnerList, type Item, parseDictionary, parseList, Token } from 'structured-headers';
import { MAX_DURATION_MS } from '../shared/check.js';

/**
 * The dialects of rate-limit fields:
 * - `'ietf'`: `RateLimit` and `RateLimit-Policy` as Structured Field lists of named policies, as drafts 8 to 11 of
 *   the IETF's RateLimit header fields write them (`"bots";r=24;t=37` and `"bots";q=25;w=60`);
 * - `'draft-7'`: `RateLimit: limit=25, remaining=24, reset=37` with `RateLimit-Policy: 25;w=60`;
 * - `'draft-6'`: `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`, with `RateLimit-Policy: 25;w=60`;
 * - `'x-ratelimit'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` (a Unix time, or seconds until
 *   the reset) and `X-RateLimit-Reset-After`.
 */
export type Dialect = 'ietf' | 'draft-7' | 'draft-6' | 'x-ratelimit';

/** A number one field tells: where it is written, and what it comes to. */
export interface Told {
  /** The field, as findings name it: `RateLimit-Policy`. */
  readonly field: string;
  /** Its parameter or key in a structured field (`q`, `remaining`); undefined where the field or item is the number. */
  readonly key: string | undefined;
  /** Requests; or milliseconds, for a window, and for the time from the answer to a reset. */
  readonly value: number;
  /** A reset written as a Unix time (`X-RateLimit-Reset: 1767225630`): that time, in milliseconds. */
  readonly unixMs?: number | undefined;
}

/** A limit as a policy tells it: a member of `RateLimit-Policy`. */
export interface Policy {
  readonly dialect: Dialect;
  /** Of the IETF fields: the policy's name, which pairs it with a member of `RateLimit`. */
  readonly name: string | undefined;
  readonly quota: Told | undefined;
  readonly window: Told | undefined;
}

/** Where a limit stands: a member of `RateLimit`, or the fields of draft 6 or the `X-RateLimit-*` ones. */
export interface State {
  readonly dialect: Dialect;
  /** Of the IETF fields: the policy's name. */
  readonly name: string | undefined;
  /** The limit, where the dialect repeats it beside the policy (`limit=`, `X-RateLimit-Limit`). */
  readonly quota: Told | undefined;
  readonly remaining: Told | undefined;
  /** When the limit resets: the most exact first (`X-RateLimit-Reset-After` before `X-RateLimit-Reset`). */
  readonly resets: readonly Told[];
}

/** A field that is present but was not read, and why: malformed, absurd, or too long. */
export interface Skipped {
  readonly field: string;
  readonly value: string;
  readonly why: string;
}

/** What an answer's rate-limit fields say, whatever their dialect. */
export interface Fields {
  /** The rate-limit fields the answer carries, named as in RATE_LIMIT_FIELDS. */
  readonly present: readonly string[];
  readonly policies: readonly Policy[];
  readonly states: readonly State[];
  readonly skipped: readonly Skipped[];
}

/** The server's view of one limit of an endpoint, as far as an answer tells it: what the client follows. */
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
 * not followed (its field is skipped, and the table's limit stays).
 */
const MAX_SERVER_LIMIT = 1_000_000;
/** Policies read from one field at the most; the rest of a longer list is ignored. */
const MAX_POLICIES = 16;
/** The longest field read: a longer one is skipped, and the parser never sees it. */
export const MAX_FIELD_CHARS = 4096;
/** A reset larger than this many seconds is a Unix time; smaller, the seconds until the reset (a year at most). */
const UNIX_AFTER_SECONDS = MAX_DURATION_MS / 1000;

/** The fields of drafts 8 to 11 and 7, of the legacy convention, and of draft 6, in the order findings list them. */
export const RATE_LIMIT_FIELDS = [
  'RateLimit-Policy',
  'RateLimit',
  'X-RateLimit-Limit',
  'X-RateLimit-Remaining',
  'X-RateLimit-Reset',
  'X-RateLimit-Reset-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
] as const;

/** The fields of draft 6, which stand for `RateLimit` in that dialect. */
export const DRAFT_6_FIELDS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'] as const;

/** The answer's `Date`, when it has a readable one. */
function dateOf(headers: Headers): number | undefined {
  const date = Date.parse(headers.get('Date') ?? '');
  return Number.isNaN(date) ? undefined : date;
}

/** How far before the answer a time it tells may lie and still be read as now: `Date` is whole seconds. */
const PAST_SLACK_MS = 60_000;

/**
 * Milliseconds until `at`: by the answer's `Date` (the server's clock), or, when that does not place it within a
 * year ahead, by `now` (the reader's clock, which a test may have moved); undefined when neither does.
 */
function untilMs(at: number, date: number | undefined, now: number): number | undefined {
  const within = (clock: number | undefined) =>
    clock !== undefined && at - clock >= -PAST_SLACK_MS && at - clock <= MAX_DURATION_MS;
  const clock = within(date) ? date : within(now) ? now : undefined;
  return clock === undefined ? undefined : Math.max(at - clock, 0);
}

/** A policy's name, as a string: a Structured Field string or token. */
function nameOf(value: BareItem): string | undefined {
  if (typeof value === 'string') return value;
  return value instanceof Token ? value.toString() : undefined;
}

const sentence = (n: number) => new Intl.NumberFormat('en').format(n);
const COUNT = `not a whole number of requests from 0 to ${sentence(MAX_SERVER_LIMIT)}`;
const DURATION = 'not a number of seconds from 0 to a year';

/** Reads one answer's fields; `now` is when it arrived, on the reader's clock. */
class Reader {
  readonly present: string[];
  readonly policies: Policy[] = [];
  readonly states: State[] = [];
  readonly skipped: Skipped[] = [];
  /** The answer's `Date`, when it has one: the clock a Unix time in its fields is read against. */
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

  /** A field's text, or undefined when it is absent or too long to read (skipped). */
  text(field: string): string | undefined {
    const value = this.headers.get(field);
    if (value === null || value.length <= MAX_FIELD_CHARS) return value ?? undefined;
    return this.skip(field, value, `${sentence(value.length)} characters, more than ${sentence(MAX_FIELD_CHARS)}`);
  }

  /** A count the client can follow: a whole number from `least` to MAX_SERVER_LIMIT, else skipped. */
  count(value: unknown, least: number, field: string, key: string | undefined, text: string): Told | undefined {
    if (value === undefined) return undefined;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= least && value <= MAX_SERVER_LIMIT) {
      return { field, key, value };
    }
    const why = least > 0 ? `not a whole number of requests from 1 to ${sentence(MAX_SERVER_LIMIT)}` : COUNT;
    return this.skip(field, text, key === undefined ? why : `${key}=${String(value)} is ${why}`);
  }

  /** Seconds as milliseconds, from `least` to a year, else skipped. */
  seconds(value: unknown, least: number, field: string, key: string | undefined, text: string): Told | undefined {
    if (value === undefined) return undefined;
    const ms = typeof value === 'number' && Number.isFinite(value) ? Math.round(value * 1000) : Number.NaN;
    if (ms >= least && ms <= MAX_DURATION_MS) return { field, key, value: ms };
    const why = least > 0 ? 'not a number of seconds from 0 (excluded) to a year' : DURATION;
    return this.skip(field, text, key === undefined ? why : `${key}=${String(value)} is ${why}`);
  }

  /** A field that is a number: a whole count, or decimal seconds; undefined when absent, skipped when unreadable. */
  number(field: string, decimals: boolean): number | undefined {
    const text = this.text(field)?.trim();
    if (text === undefined) return undefined;
    const pattern = decimals ? /^\d{1,15}(\.\d{1,9})?$/ : /^\d{1,15}$/;
    if (pattern.test(text)) return Number(text);
    return this.skip(field, text, decimals ? DURATION : COUNT);
  }

  /**
   * A reset written as seconds until it, or, larger than a year of seconds, as a Unix time: read against the answer's
   * `Date` (the server's clock), or when that does not place it within a year, against the arrival of the answer.
   */
  reset(field: string): Told | undefined {
    const seconds = this.number(field, true);
    if (seconds === undefined) return undefined;
    if (seconds <= UNIX_AFTER_SECONDS) return this.seconds(seconds, 0, field, undefined, String(seconds));
    const unixMs = seconds * 1000;
    const ms = untilMs(unixMs, this.date, this.now);
    if (ms === undefined)
      return this.skip(field, String(seconds), 'a Unix time in the past, or more than a year ahead');
    return { field, key: undefined, value: ms, unixMs };
  }

  /** The first MAX_POLICIES items of a list field's text, inner lists left out; undefined when it does not parse. */
  list(text: string): Item[] | undefined {
    try {
      return parseList(text)
        .filter((member): member is Item => !isInnerList(member))
        .slice(0, MAX_POLICIES);
    } catch {
      return undefined;
    }
  }

  /** `RateLimit-Policy`: named policies (drafts 8 to 11), or `25;w=60` (drafts 6 and 7). */
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
      if (typeof value === 'number') {
        this.policies.push({
          dialect: draft6 ? 'draft-6' : 'draft-7',
          name: undefined,
          quota: this.count(value, 1, field, undefined, text),
          window: this.seconds(params.get('w'), 1, field, 'w', text),
        });
      } else {
        this.policies.push({
          dialect: 'ietf',
          name: nameOf(value),
          quota: this.count(params.get('q'), 1, field, 'q', text),
          window: this.seconds(params.get('w'), 1, field, 'w', text),
        });
      }
    }
  }

  /** `RateLimit`: a list of named policies' states (drafts 8 to 11), or `limit=, remaining=, reset=` (draft 7). */
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
    let members: ReturnType<typeof parseDictionary> | undefined;
    try {
      members = parseDictionary(text);
    } catch {
      members = undefined;
    }
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

  /** Fields that each hold one number: draft 6's, or the `X-RateLimit-*` ones. */
  readSingle(dialect: Dialect, limit: string, remaining: string, resets: readonly Told[]): void {
    const quota = this.number(limit, false);
    const left = this.number(remaining, false);
    this.states.push({
      dialect,
      name: undefined,
      quota: quota === undefined ? undefined : this.count(quota, 1, limit, undefined, String(quota)),
      remaining: left === undefined ? undefined : this.count(left, 0, remaining, undefined, String(left)),
      resets,
    });
  }

  read(): Fields {
    this.readPolicies();
    this.readRateLimit();
    if (DRAFT_6_FIELDS.some((name) => this.headers.has(name))) {
      const reset = this.reset('RateLimit-Reset');
      this.readSingle('draft-6', 'RateLimit-Limit', 'RateLimit-Remaining', reset ? [reset] : []);
    }
    if (this.present.some((field) => field.startsWith('X-'))) {
      const after = this.number('X-RateLimit-Reset-After', true);
      const resets = [
        after === undefined ? undefined : this.seconds(after, 0, 'X-RateLimit-Reset-After', undefined, String(after)),
        this.reset('X-RateLimit-Reset'),
      ].filter((told): told is Told => told !== undefined);
      this.readSingle('x-ratelimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', resets);
    }
    return { present: this.present, policies: this.policies, states: this.states, skipped: this.skipped };
  }
}

/**
 * What an answer's rate-limit fields say, in whichever dialects it writes them; `now` is when it arrived. A value
 * that cannot be read (malformed, a count over 1,000,000, a time beyond a year, a field over MAX_FIELD_CHARS) is
 * skipped and listed, never thrown.
 */
export function readFields(headers: Headers, now: number): Fields {
  return new Reader(headers, now).read();
}

/** The dialects in the order the client trusts them: the IETF lists, then those that tell one limit. */
const trusted: readonly Dialect[] = ['ietf', 'draft-7', 'draft-6', 'x-ratelimit'];

/** A state the client can follow: one that tells what remains and when it resets. */
function followed(state: State): { remaining: number; resetMs: number } | undefined {
  const reset = state.resets[0];
  return state.remaining && reset ? { remaining: state.remaining.value, resetMs: reset.value } : undefined;
}

/**
 * Every limit an answer reports, for the client: in the order of its IETF `RateLimit` list (at most 16), else the
 * one limit of draft 7, of draft 6, or of the `X-RateLimit-*` fields; `undefined` when it carries no rate-limit
 * field at all (a server that does not limit this client, or that sends no fields). What cannot be read is left
 * out, and the table's value stays. `now` is when the answer arrived.
 */
export function readServerLimits(headers: Headers, now: number): readonly ServerLimit[] | undefined {
  const { present, policies, states } = readFields(headers, now);
  if (present.length === 0) return undefined;
  const legacy = states.find((state) => state.dialect === 'x-ratelimit');
  const bucket = headers.get('X-RateLimit-Bucket');
  for (const dialect of trusted) {
    const limits: ServerLimit[] = [];
    for (const state of states.filter((s) => s.dialect === dialect)) {
      const read = followed(state);
      if (!read) continue;
      let { resetMs } = read;
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
        remaining: read.remaining,
        resetMs,
      });
    }
    if (limits.length > 0) return limits;
  }
  return [];
}

/** A `Retry-After` as read: its milliseconds, and whether it was an HTTP date rather than seconds. */
interface RetryAfter {
  readonly ms: number;
  readonly date: boolean;
}

/**
 * `Retry-After`, whole seconds or an HTTP date (against the answer's `Date`, else `now`); undefined when absent,
 * `{ skipped }` when unreadable. It may be long (a server may ask for hours): the client compares it with `maxWaitMs`,
 * and never sets a timer from it alone.
 */
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

/** `Retry-After` in milliseconds, for the client: undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const read = readRetryAfter(headers, now);
  return read && 'ms' in read ? read.ms : undefined;
}
