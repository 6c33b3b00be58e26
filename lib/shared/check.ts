// Shared validation helpers: coded errors naming the field, unknown keys with "did you mean", values shown safely.
import { closest, distance } from 'fastest-levenshtein';
import { ListingLimitsError, type ListingLimitsErrorCode } from './errors.js';

export const DAY_MS = 24 * 3600 * 1000;

/** The longest window, ban or block accepted: one year, in milliseconds. */
export const MAX_DURATION_MS = 365 * DAY_MS;

/** The longest delay Node's timers keep: a longer one fires at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const LONGEST_SHOWN = 60;

/** A value as an error message shows it: data as JSON, functions and instances by name only (never their source). */
export function show(value: unknown): string {
  if (typeof value === 'function') {
    const name = value.name ? ` ${value.name}` : '';
    return /^class[\s{]/.test(Function.prototype.toString.call(value)) ? `the class${name}` : `the function${name}`;
  }
  const instanceOf = className(value);
  if (instanceOf !== undefined) return `an instance of ${instanceOf || 'an anonymous class'}`;
  if (value === undefined) return 'undefined';
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'symbol') return value.toString();
  if (typeof value === 'number') return String(value);
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return clip(text, LONGEST_SHOWN);
}

/** `text` cut to its first `most` characters and "…", where it is longer. */
export function clip(text: string, most: number): string {
  return text.length > most ? `${text.slice(0, most)}…` : text;
}

/** A whole number's unit (as messages say it) and bounds; `fallback` stands for undefined. */
export type Whole = { unit: string; least: number; most?: number; fallback?: number };

export class Checker {
  constructor(readonly source: string) {}

  fail(code: ListingLimitsErrorCode, field: string, message: string): never {
    throw new ListingLimitsError(code, field, message, this.source);
  }

  invalid(field: string, message: string): never {
    return this.fail('ERR_INVALID_OPTION', field, message);
  }

  options(value: unknown, field: string, shape: string): Record<string, unknown> {
    if (value === undefined) return {};
    if (!isPlainObject(value)) this.invalid(field, `must be an object ${shape}; got ${show(value)}.`);
    return value;
  }

  unknownKeys(value: object, known: readonly string[], field: (key: string) => string, what = 'an option'): void {
    for (const key of Object.keys(value)) {
      if (!known.includes(key)) {
        this.fail(
          'ERR_UNKNOWN_OPTION',
          field(key),
          `is not ${what}. Did you mean \`${closest(key, known as string[])}\`?`,
        );
      }
    }
  }

  count(value: unknown, field: string, code: ListingLimitsErrorCode = 'ERR_INVALID_OPTION'): number {
    if (isPositiveInteger(value)) return value;
    return this.fail(code, field, `must be a positive integer; got ${show(value)}.`);
  }

  seconds(value: unknown, field: string, code: ListingLimitsErrorCode = 'ERR_INVALID_OPTION'): number {
    if (isPositiveInteger(value) && value % 1000 === 0 && value <= MAX_DURATION_MS) return value;
    return this.fail(
      code,
      field,
      'must be a positive whole number of seconds in milliseconds (e.g. 15000), ' +
        `at most ${MAX_DURATION_MS} (one year); got ${show(value)}.`,
    );
  }

  ms(value: unknown, field: string, fallback?: number): number {
    if (value === undefined && fallback !== undefined) return fallback;
    if (isPositiveInteger(value) && value <= MAX_DURATION_MS) return value;
    return this.invalid(
      field,
      `must be a positive whole number of milliseconds, at most ${MAX_DURATION_MS} (one year); got ${show(value)}.`,
    );
  }

  whole(value: unknown, field: string, { unit, least, most = Number.MAX_SAFE_INTEGER, fallback }: Whole): number {
    if (value === undefined && fallback !== undefined) return fallback;
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= least && value <= most) return value;
    const range = most === Number.MAX_SAFE_INTEGER ? `${least} or more` : `from ${least} to ${most}`;
    return this.invalid(field, `must be a whole number of ${unit}, ${range}; got ${show(value)}.`);
  }

  boolean(value: unknown, field: string, fallback = false): boolean {
    if (value === undefined) return fallback;
    if (typeof value !== 'boolean') this.invalid(field, `must be true or false; got ${show(value)}.`);
    return value;
  }

  function<T>(value: unknown, field: string, fallback: T, shape?: string): T {
    if (value === undefined) return fallback;
    if (typeof value !== 'function')
      this.invalid(field, `must be a function${shape ? ` ${shape}` : ''}; got ${show(value)}.`);
    return value as T;
  }

  callback<T>(value: T, field: string, shape: string): T {
    return this.function(value, field, value, shape);
  }

  baseUrl(value: unknown, field: string): { origin: string; path: string } {
    let url: URL | undefined;
    try {
      url = typeof value === 'string' || value instanceof URL ? new URL(value) : undefined;
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.search || url.hash) {
      const given = show(value instanceof URL ? String(value) : value);
      this.invalid(field, `must be an http or https URL without query or fragment; got ${given}.`);
    }
    return { origin: url.origin, path: url.pathname.replace(/\/+$/, '') };
  }

  /** An `Authorization` value that fetch neither refuses nor trims, or undefined. */
  token(value: unknown, field: string): string | undefined {
    if (value === undefined) return undefined;
    if (typeof value !== 'string' || !/^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value)) {
      this.invalid(field, 'must be a non-empty header value of printable ASCII, without spaces at either end.');
    }
    return value;
  }

  oneOf<T extends string>(
    value: unknown,
    choices: readonly T[],
    field: string,
    code: ListingLimitsErrorCode = 'ERR_INVALID_OPTION',
  ): T {
    if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as T;
    const list = choices.map((c) => JSON.stringify(c)).join(', ');
    const near = typeof value === 'string' ? suggestion(value, choices) : undefined;
    return this.fail(
      code,
      field,
      `must be one of ${list}; got ${show(value)}.${near ? ` Did you mean \`${near}\`?` : ''}`,
    );
  }
}

export function suggestion(value: string, choices: readonly string[]): string | undefined {
  const exact = choices.find((c) => c.toLowerCase() === value.toLowerCase());
  if (exact) return exact;
  if (value.length < 3) return undefined;
  return typoOf(value, choices);
}

export function className(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof Date) return undefined;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return undefined;
  const name: unknown = (proto as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' ? name : '';
}

/** The choice that `value` is a typo of (at most half its letters differ, case aside). */
export function typoOf(value: string, choices: readonly string[]): string | undefined {
  const lower = value.toLowerCase();
  const lowered = choices.map((choice) => choice.toLowerCase());
  const best = closest(lower, lowered);
  return distance(lower, best) <= Math.max(Math.floor(best.length / 2), 1) ? choices[lowered.indexOf(best)] : undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}
