// Records as the lists show them: pages of bans and grants, changes as events, lost records, foreign text.
import { createHash } from 'node:crypto';
import type { BanRecord, GrantRecord, LostEntry, Stored } from './kinds.js';
import { type ClientKind, kindOfKey } from '../contract/keys.js';
import type { ActiveBan, ActiveGrant, ChangeEvent, LostRecord } from './types.js';

const SHOWN_TEXT = 200;

function byTimeAndKey(a: { since: number; key: string }, b: { since: number; key: string }): number {
  return a.since - b.since || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/** A record as the store is given it: the store adds the sequence number. */
export function withoutSeq<R extends object>(record: Stored<R> | R): R {
  const { seq: _seq, ...rest } = record as R & { seq?: number };
  return rest as R;
}

export function sameRecord(a: object, b: object): boolean {
  return JSON.stringify(withoutSeq(a)) === JSON.stringify(withoutSeq(b));
}

export function shownText(json: string): string {
  return json.length > SHOWN_TEXT ? `${json.slice(0, SHOWN_TEXT)}…` : json;
}

export function digest(value: string): string {
  return createHash('sha256').update(value).digest('base64url').slice(0, 16);
}

/** The first `n` in order: the first page of 10,000 costs about 10,000 comparisons, not a sort of them all. */
function firstInOrder<T extends { since: number; key: string }>(items: readonly T[], n: number): T[] {
  if (n >= items.length) return [...items].sort(byTimeAndKey);
  const kept: T[] = [];
  for (const item of items) {
    if (kept.length === n && byTimeAndKey(item, kept[n - 1] as T) >= 0) continue;
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byTimeAndKey(kept[mid] as T, item) <= 0) lo = mid + 1;
      else hi = mid;
    }
    kept.splice(lo, 0, item);
    if (kept.length > n) kept.pop();
  }
  return kept;
}

/** At most `limit` items from `offset` (past the last, the last page), where it starts, and how many there are. */
export function listPage<T extends { since: number; key: string }, V>(
  items: readonly T[],
  offset: number,
  limit: number,
  view: (item: T) => V,
): { total: number; from: number; rows: V[] } {
  const total = items.length;
  const from = offset < total || total === 0 ? offset : Math.floor((total - 1) / limit) * limit;
  return {
    total,
    from,
    rows: firstInOrder(items, from + limit)
      .slice(from)
      .map(view),
  };
}

export function activeBan(ban: BanRecord): ActiveBan {
  const { key, kind, reason, by, tokenEnd = '', operator } = ban;
  return { key, kind, reason, since: new Date(ban.since), until: new Date(ban.until), by, tokenEnd, operator };
}

export function activeGrant(grant: GrantRecord): ActiveGrant {
  return {
    key: grant.key,
    grant: grant.grant,
    since: new Date(grant.since),
    until: grant.until === null ? undefined : new Date(grant.until),
    note: grant.note ?? undefined,
    tokenEnd: grant.tokenEnd ?? '',
    operator: grant.operator,
  };
}

export function eventText(event: ChangeEvent): string {
  return JSON.stringify({ ...event, at: event.at.getTime(), until: event.until?.getTime() });
}

export function eventOf(
  action: ChangeEvent['action'],
  key: string,
  kind: ClientKind,
  at: number,
  more?: Partial<ChangeEvent>,
): ChangeEvent {
  const none = { reason: undefined, until: undefined, grant: undefined, note: undefined, endpoint: undefined };
  return { action, key, kind, by: 'operator', at: new Date(at), ...none, operator: undefined, ...more };
}

export function banEvent(ban: BanRecord): ChangeEvent {
  const { by, reason, operator } = ban;
  return eventOf('ban', ban.key, ban.kind, ban.since, { by, reason, until: new Date(ban.until), operator });
}

export function grantEvent({ key, grant, since, until, note, operator }: GrantRecord): ChangeEvent {
  const end = until === null ? undefined : new Date(until);
  return eventOf('grant', key, kindOfKey(key), since, { until: end, grant, note: note ?? undefined, operator });
}

export function lostRecord(lost: Stored<LostEntry>): LostRecord {
  const r = lost.record;
  const base = { id: lost.field, key: r.key, lostAt: new Date(lost.lostAt) };
  if ('by' in r) return { ...base, kind: 'ban', ban: activeBan(r), grant: undefined };
  return { ...base, kind: 'grant', ban: undefined, grant: activeGrant(r) };
}
