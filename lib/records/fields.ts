// The kinds of record of the runtime state, by the prefix of their field: how each is checked, kept and ended.
import {
  type BanRecord,
  checkBanRecord,
  type CheckGrant,
  checkGrantRecord,
  checkLostRecord,
  checkResetRecord,
  checkSessionRecord,
  type EndedLogin,
  type GrantRecord,
  type LostEntry,
  type ResetRecord,
} from './kinds.js';
import { endOf } from './views.js';

/** Where an instance keeps the records of a kind, by the id of their field. */
export interface KindCache {
  get(id: string): { readonly seq: number } | undefined;
  add(id: string, record: { readonly seq: number }, now: number): unknown;
  delete(id: string): boolean;
}

/** A kind of record: how an entry of it is checked, and where an instance keeps its records. */
export interface Kind {
  check(id: string, text: string): { readonly seq: number };
  cache(id: string): KindCache;
  /** Whether a record of it is an operator's: kept as a lost record when the store loses it. */
  operators(record: unknown): boolean;
  /** When a record of it ends (epoch ms; Infinity for never). */
  end(record: unknown): number;
}

/** Where an instance keeps each kind: bans by the id of their field (a client's or an address's). */
interface Caches {
  readonly bans: (id: string) => KindCache;
  readonly grants: KindCache;
  readonly lost: KindCache;
  readonly logins: KindCache;
  readonly resets: KindCache;
}

/**
 * The kinds of record, by the prefix of their field: a new kind is a check, a cache and a line here. Logins and resets
 * are no operator's ban or grant: a store that loses them loses nothing to restore (logins then end, as their epoch is
 * gone).
 */
export function recordKinds(caches: Caches, checkGrant: CheckGrant): ReadonlyMap<string, Kind> {
  return new Map<string, Kind>([
    [
      'ban',
      {
        check: checkBanRecord,
        cache: caches.bans,
        operators: (ban) => (ban as BanRecord).by === 'operator',
        end: (ban) => (ban as BanRecord).until,
      },
    ],
    [
      'grant',
      {
        check: (id, json) => checkGrantRecord(id, json, checkGrant),
        cache: () => caches.grants,
        operators: () => true,
        end: (grant) => (grant as GrantRecord).until ?? Infinity,
      },
    ],
    [
      'lost',
      {
        check: (id, json) => checkLostRecord(id, json, checkGrant),
        cache: () => caches.lost,
        operators: () => true,
        end: (lost) => endOf((lost as LostEntry).record),
      },
    ],
    [
      'session',
      {
        check: checkSessionRecord,
        cache: () => caches.logins,
        operators: () => false,
        end: (r) => ('until' in (r as object) ? (r as EndedLogin).until : Infinity),
      },
    ],
    [
      'reset',
      {
        check: checkResetRecord,
        cache: () => caches.resets,
        operators: () => false,
        end: (r) => (r as ResetRecord).until,
      },
    ],
  ]);
}
