// The kinds of record of the runtime state (bans, grants, lost records, logins, resets), their checks, the history's.
import { Checker, isPlainObject, MAX_DURATION_MS, show } from '../shared/check.js';
import { ListingLimitsError } from '../shared/errors.js';
import { checkRow } from '../contract/table.js';
import type { ClientKind } from '../contract/keys.js';
import type { RecordChange } from '../stores/state.js';
import type { ChangeEvent, Grant } from './types.js';

/** A ban, as the state keeps it: `ban:<key>` for a client, `ban:addr:<address key>` for an address. */
export interface BanRecord {
  readonly key: string;
  readonly kind: ClientKind;
  readonly reason: string;
  readonly since: number;
  readonly until: number;
  readonly by: 'rule' | 'operator';
  readonly tokenEnd?: string;
  /** The named operator who made it. */
  readonly operator?: string;
}

/** A grant made at runtime: `grant:<key>`. */
export interface GrantRecord {
  readonly key: string;
  readonly grant: Grant;
  readonly since: number;
  readonly until: number | null;
  readonly note: string | null;
  readonly tokenEnd?: string;
  readonly operator?: string;
}

/** An operator's ban or grant the store lost, `lost:<its field>`: kept to restore or dismiss, never applied. */
export interface LostEntry {
  readonly field: string;
  readonly record: BanRecord | GrantRecord;
  readonly lostAt: number;
}

/** `session:epoch`: a new epoch ("log out everywhere") ends every login made before. */
export interface EpochRecord {
  readonly epoch: string;
  readonly since: number;
}

/** `session:<login id>`: a login ended by its logout, until it would have ended by itself. */
export interface EndedLogin {
  readonly id: string;
  readonly endedAt: number;
  readonly until: number;
}

/** `reset:<client key>`: its counters were cleared, so every instance forgets the refusals it remembers of it. */
export interface ResetRecord {
  readonly key: string;
  readonly at: number;
  readonly until: number;
}

export type Stored<R> = R & { readonly seq: number };

/** A record written as JSON (null: removed) when `when` holds (default `'always'`), with its history's entry. */
export interface Write {
  readonly field: string;
  readonly record: AnyRecord | null;
  readonly when?: RecordChange['when'];
  readonly event?: ChangeEvent;
}

/** Why a stored entry is not a record this instance applies, in words for `onError` and the operator's page. */
export class Problem {
  constructor(readonly message: string) {}
}

/** What `check` returns, or the problem it found. */
export function attempt<T>(check: () => T): T | Problem {
  try {
    return check();
  } catch (error) {
    if (error instanceof Problem) return error;
    throw error;
  }
}

export const LONGEST_TEXT = 500;
/** An operator's name: shown on the pages and in cookies, so plain ASCII without spaces. */
const OPERATOR_NAME = /^[A-Za-z0-9][\w.@-]{0,63}$/;
export const isName = (value: unknown): value is string => typeof value === 'string' && OPERATOR_NAME.test(value);

/** An operator's name, or undefined when none is given. */
export function checkName(check: Checker, value: unknown, field: string): string | undefined {
  if (value === undefined || isName(value)) return value;
  return check.invalid(
    field,
    "must be an operator's name of 1 to 64 characters: letters, digits and `_.@-`, starting with a letter or a " +
      `digit; got ${show(value)}.`,
  );
}
const LATEST_TIME = 8.64e15;
const clientKinds: readonly ClientKind[] = ['token', 'ip', 'custom'];

/** The key of an address's ban (token rotation, or an operator's ban of `{ ip }`), apart from the IP client's own. */
export const addressBan = (ip: string): string => `addr:${ip}`;

export type AnyRecord = BanRecord | GrantRecord | LostEntry | EpochRecord | EndedLogin | ResetRecord;

/** Infinity for never; a lost record's, when the record it keeps would have ended. */
export function endOf(record: AnyRecord): number {
  if ('record' in record) return endOf(record.record);
  return 'until' in record ? (record.until ?? Infinity) : Infinity;
}

export function checkText(check: Checker, value: unknown, field: string, longest = LONGEST_TEXT, trim = false): string {
  if (typeof value !== 'string' || (trim ? value.trim() : value) === '' || value.length > longest)
    check.invalid(field, `must be a non-empty string of at most ${longest} characters; got ${show(value)}.`);
  return trim ? value.trim() : value;
}

/** The options `{ by }` of a call that takes no other. */
export function byOption(check: Checker, options: unknown): string | undefined {
  const o = check.options(options, 'options', '{ by }');
  check.unknownKeys(o, ['by'], (k) => `options.${k}`);
  return checkName(check, o.by, 'options.by');
}

/** The table's own check of a grant (its rows must be the table's). */
export type CheckGrant = (check: Checker, grant: unknown, field: string) => Grant;

function problem(message: string): never {
  throw new Problem(message);
}

function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= LATEST_TIME;
}

function checkedField<T>(o: Record<string, unknown>, name: string, ok: (value: unknown) => boolean, what: string): T {
  if (!ok(o[name])) problem(`"${name}" must be ${what}; got ${show(o[name])}`);
  return o[name] as T;
}

const isText = (value: unknown) => typeof value === 'string' && value !== '' && value.length <= LONGEST_TEXT;
const isKey = (value: unknown) => typeof value === 'string' && value !== '';
const isNote = (value: unknown) => value === null || isText(value);

function operatorOf(o: Record<string, unknown>): string | undefined {
  return o.operator === undefined ? undefined : checkedField<string>(o, 'operator', isName, "an operator's name");
}

function tokenEndOf(o: Record<string, unknown>): string | undefined {
  const end = o.tokenEnd;
  if (end === undefined || end === '') return undefined;
  return checkedField<string>(o, 'tokenEnd', (v) => typeof v === 'string' && v.length <= 4, 'up to 4 characters');
}

export function objectOf(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    problem('is not JSON');
  }
  if (!isPlainObject(value)) problem(`is not a JSON object; got ${show(value)}`);
  return value;
}

const isSeq = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/** 0 for a record an older version wrote without a sequence number. */
function seqOf(o: Record<string, unknown>): number {
  return o.seq === undefined ? 0 : checkedField<number>(o, 'seq', isSeq, 'a sequence number');
}

function banRecordOf(o: Record<string, unknown>): BanRecord {
  const since = checkedField<number>(o, 'since', isTime, 'a time in epoch ms');
  const until = checkedField<number>(o, 'until', isTime, 'a time in epoch ms');
  if (until <= since || until - since > MAX_DURATION_MS)
    problem(`"until" must be after "since", by at most one year; got ${until - since} ms`);
  return {
    key: checkedField(o, 'key', isKey, 'a non-empty string'),
    kind: checkedField(o, 'kind', (v) => clientKinds.includes(v as ClientKind), "'token', 'ip' or 'custom'"),
    reason: checkedField(o, 'reason', isText, `a non-empty string of at most ${LONGEST_TEXT} characters`),
    since,
    until,
    by: checkedField(o, 'by', (v) => v === 'rule' || v === 'operator', "'rule' or 'operator'"),
    tokenEnd: tokenEndOf(o),
    operator: operatorOf(o),
  };
}

function grantRecordOf(o: Record<string, unknown>, checkGrant: CheckGrant): GrantRecord {
  const since = checkedField<number>(o, 'since', isTime, 'a time in epoch ms');
  const until = checkedField<number | null>(o, 'until', (v) => v === null || isTime(v), 'a time in epoch ms or null');
  if (until !== null && (until <= since || until - since > MAX_DURATION_MS))
    problem(`"until" must be after "since", by at most one year; got ${until - since} ms`);
  let grant: Grant;
  try {
    grant = checkGrant(new Checker('grant'), o.grant, 'grant');
  } catch (error) {
    if (!(error instanceof ListingLimitsError)) throw error;
    return problem(`is not a grant of this table: ${error.message.replace(/^grant: /, '')}`);
  }
  return {
    key: checkedField(o, 'key', isKey, 'a non-empty string'),
    grant,
    since,
    until,
    note: checkedField(o, 'note', isNote, `null or a string of at most ${LONGEST_TEXT} characters`),
    tokenEnd: tokenEndOf(o),
    operator: operatorOf(o),
  };
}

// Member by member: V8 gives each object a spread makes a hidden class of its own, 3 heap objects per ban kept.
export function storedBan(ban: BanRecord, seq: number): Stored<BanRecord> {
  const { key, kind, reason, since, until, by, tokenEnd, operator } = ban;
  return { key, kind, reason, since, until, by, tokenEnd, operator, seq };
}

export function checkBanRecord(id: string, o: Record<string, unknown>): Stored<BanRecord> {
  const ban = banRecordOf(o);
  if (id !== ban.key && !(id === addressBan(ban.key) && ban.kind === 'ip'))
    problem(`is the ban of ${show(ban.key)}, not of ${show(id)}`);
  return storedBan(ban, seqOf(o));
}

export function checkGrantRecord(id: string, o: Record<string, unknown>, checkGrant: CheckGrant): Stored<GrantRecord> {
  const grant = grantRecordOf(o, checkGrant);
  if (id !== grant.key) problem(`is the grant of ${show(grant.key)}, not of ${show(id)}`);
  const { key, since, until, note, tokenEnd, operator } = grant;
  return { key, grant: grant.grant, since, until, note, tokenEnd, operator, seq: seqOf(o) };
}

export function checkLostRecord(id: string, o: Record<string, unknown>, checkGrant: CheckGrant): Stored<LostEntry> {
  const lostField = checkedField<string>(o, 'field', (v) => v === id, show(id));
  const record = checkedField<Record<string, unknown>>(o, 'record', isPlainObject, 'an object');
  let checked: BanRecord | GrantRecord;
  if (lostField.startsWith('ban:')) checked = banRecordOf(record);
  else if (lostField.startsWith('grant:')) checked = grantRecordOf(record, checkGrant);
  else return problem(`keeps a record of no known kind: ${show(lostField)}`);
  return {
    field: lostField,
    record: checked,
    lostAt: checkedField(o, 'lostAt', isTime, 'a time in epoch ms'),
    seq: seqOf(o),
  };
}

/** 16 random bytes, base64url. */
const LOGIN_ID = /^[\w-]{22}$/;

export function checkSessionRecord(id: string, o: Record<string, unknown>): Stored<EpochRecord | EndedLogin> {
  if (id === 'epoch') {
    const epoch = checkedField<string>(o, 'epoch', (v) => typeof v === 'string' && LOGIN_ID.test(v), 'a random id');
    return { epoch, since: checkedField(o, 'since', isTime, 'a time in epoch ms'), seq: seqOf(o) };
  }
  if (!LOGIN_ID.test(id)) problem(`is no login's id: ${show(id)}`);
  const endedAt = checkedField<number>(o, 'endedAt', isTime, 'a time in epoch ms');
  const until = checkedField<number>(o, 'until', isTime, 'a time in epoch ms');
  if (until - endedAt > MAX_DURATION_MS) problem(`"until" must be at most one year after "endedAt"`);
  return { id: checkedField(o, 'id', (v) => v === id, show(id)), endedAt, until, seq: seqOf(o) };
}

export function checkResetRecord(id: string, o: Record<string, unknown>): Stored<ResetRecord> {
  const at = checkedField<number>(o, 'at', isTime, 'a time in epoch ms');
  const until = checkedField<number>(o, 'until', isTime, 'a time in epoch ms');
  if (until <= at || until - at > MAX_DURATION_MS) problem(`"until" must be after "at", by at most one year`);
  return { key: checkedField(o, 'key', (v) => v === id, show(id)), at, until, seq: seqOf(o) };
}

/** Its shape only: the table may have changed since. */
function grantShape(value: unknown): Grant {
  if (value === 'unlimited') return value;
  if (isPlainObject(value) && Object.keys(value).join() === 'multiplier') {
    const m = value.multiplier;
    if (typeof m === 'number' && Number.isFinite(m) && m > 0) return { multiplier: m };
  }
  if (isPlainObject(value) && Object.keys(value).join() === 'rows' && Array.isArray(value.rows)) {
    try {
      const check = new Checker('history');
      if (value.rows.length > 0)
        return { rows: value.rows.map((row: unknown, i) => checkRow(check, row, `rows[${i}]`)) };
    } catch (error) {
      if (!(error instanceof ListingLimitsError)) throw error;
    }
  }
  return problem(`"grant" must be a grant; got ${show(value)}`);
}

const actions: readonly ChangeEvent['action'][] = ['ban', 'unban', 'grant', 'revoke', 'reset'];

export function checkEvent(text: string): ChangeEvent {
  const o = objectOf(text);
  const optional = <T>(name: string, ok: (v: unknown) => boolean, what: string): T | undefined =>
    o[name] === undefined || o[name] === null ? undefined : checkedField<T>(o, name, ok, what);
  const until = optional<number>('until', isTime, 'a time in epoch ms');
  const grant = o.grant === undefined || o.grant === null ? undefined : grantShape(o.grant);
  return {
    action: checkedField(o, 'action', (v) => actions.includes(v as ChangeEvent['action']), actions.join(', ')),
    key: checkedField(o, 'key', isKey, 'a non-empty string'),
    kind: checkedField(o, 'kind', (v) => clientKinds.includes(v as ClientKind), "'token', 'ip' or 'custom'"),
    by: checkedField(o, 'by', (v) => v === 'rule' || v === 'operator', "'rule' or 'operator'"),
    at: new Date(checkedField<number>(o, 'at', isTime, 'a time in epoch ms')),
    reason: optional('reason', isText, `a string of at most ${LONGEST_TEXT} characters`),
    until: until === undefined ? undefined : new Date(until),
    grant,
    note: optional('note', isText, `a string of at most ${LONGEST_TEXT} characters`),
    endpoint: optional('endpoint', isText, `a string of at most ${LONGEST_TEXT} characters`),
    operator: operatorOf(o),
  };
}
