// The bans: a rule's, in force here at once and written until the store takes it; an operator's, written first.
import type { Request } from 'express';
import { Checker } from '../shared/check.js';
import { RuntimeStateError } from '../shared/errors.js';
import { kindOfKey } from '../contract/keys.js';
import type { CallBound } from '../stores/call-bound.js';
import type { Parts } from './calls.js';
import { addressBan, type BanRecord, byOption, checkName, checkText, type Stored } from './kinds.js';
import type { ActiveBan } from './types.js';
import { activeBan, banEvent, eventOf, listPage } from './views.js';

/** The wait before a rule's ban the store could not take is written again; it doubles up to LAST_RETRY_MS. */
const FIRST_RETRY_MS = 500;
const LAST_RETRY_MS = 30_000;
const PENDING_KEPT = 10_000;

/** Forgets what led to a client's bans (the ban rule's counts) before an unban. */
export type ForgetBans = (key: string, bound: CallBound) => Promise<void>;

/** The rules' bans of this instance, and those the store has not taken yet, written again one at a time. */
export class RuleBans {
  readonly #pending = new Map<string, { readonly ban: BanRecord; readonly req: Request | undefined }>();
  #retry: ReturnType<typeof setTimeout> | undefined;
  #retryMs = FIRST_RETRY_MS;
  #writing = false;
  #closed = false;

  constructor(private readonly parts: Pick<Parts, 'cache' | 'calls'>) {}

  /** In force here at once, then written unless the store has one of the key (another instance's, which wins). */
  hold(banKey: string, ban: BanRecord, req: Request): Promise<boolean> {
    this.parts.cache.holdRuleBan(banKey, ban);
    return this.#write(banKey, ban, req).catch((error: unknown) => {
      const message =
        `a rule's ban of ${ban.key} could not be written to the store; it holds on this instance, and is written ` +
        'again until the store takes it.';
      this.parts.calls.report(new RuntimeStateError('ERR_STATE_WRITE', message, { cause: error }), req);
      this.#keep(banKey, ban, req);
      return false;
    });
  }

  #write(banKey: string, ban: BanRecord, req: Request | undefined): Promise<boolean> {
    const write = { field: `ban:${banKey}`, record: ban, when: 'absent', event: banEvent(ban) } as const;
    return this.parts.calls.change([write], undefined, req).then((result) => result.records[0]?.changed === true);
  }

  #keep(banKey: string, ban: BanRecord, req: Request | undefined): void {
    if (this.#closed) return;
    if (this.#pending.size >= PENDING_KEPT && !this.#pending.has(banKey))
      this.#pending.delete(this.#pending.keys().next().value as string);
    this.#pending.set(banKey, { ban, req });
    this.#schedule(this.#retryMs);
  }

  forget(banKey: string): void {
    this.#pending.delete(banKey);
  }

  /** The store answers again: what it could not take is written now, not at the end of a long wait. */
  answered(): void {
    if (this.#pending.size === 0 || this.#writing || this.#retryMs === FIRST_RETRY_MS) return;
    clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#retryMs = FIRST_RETRY_MS;
    this.#schedule(0);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#pending.clear();
  }

  #schedule(ms: number): void {
    if (this.#retry || this.#writing || this.#closed) return;
    this.#retry = setTimeout(() => void this.#writeAll(), ms);
    this.#retry.unref?.();
  }

  async #writeAll(): Promise<void> {
    this.#retry = undefined;
    this.#writing = true;
    let failed = false;
    for (const [banKey, { ban, req }] of [...this.#pending]) {
      if (this.#closed) break;
      // Lifted, or replaced by the store's: it no longer holds here alone.
      if (this.parts.cache.banOf(banKey)?.seq !== -1 || ban.until <= Date.now()) {
        this.#pending.delete(banKey);
        continue;
      }
      try {
        await this.#write(banKey, ban, req);
        this.#pending.delete(banKey);
      } catch {
        failed = true;
        break;
      }
    }
    this.#writing = false;
    this.#retryMs = failed ? Math.min(this.#retryMs * 2, LAST_RETRY_MS) : FIRST_RETRY_MS;
    if (this.#pending.size > 0) this.#schedule(this.#retryMs);
  }
}

/** An operator's ban; `known`: the end of the client's token when the caller knows it (from its grant request). */
export async function banClient(parts: Parts, client: unknown, options: unknown, known = ''): Promise<boolean> {
  const check = new Checker('limits.ban');
  const { key, kind, address, tokenEnd: end } = parts.keyOf(check, client);
  const o = check.options(options, 'options', '{ duration, reason, by }');
  check.unknownKeys(o, ['duration', 'reason', 'by'], (k) => `options.${k}`);
  const duration = check.seconds(o.duration, 'options.duration');
  const reason = o.reason === undefined ? 'operator' : checkText(check, o.reason, 'options.reason');
  const operator = checkName(check, o.by, 'options.by');
  parts.calls.writable(check);
  return parts.calls.bounded('limits.ban', async (bound) => {
    const since = Date.now();
    const tokenEnd = end || known || undefined;
    const until = since + duration;
    const ban: BanRecord = { key, kind, reason, since, until, by: 'operator', tokenEnd, operator };
    const field = `ban:${address ? addressBan(key) : key}`;
    await parts.calls.change([{ field, record: ban, event: banEvent(ban) }], bound);
    return true;
  });
}

export async function bansPage(
  parts: Parts,
  offset: number,
  limit: number,
  source = 'limitsAdmin',
): Promise<{ total: number; offset: number; bans: ActiveBan[] }> {
  await parts.calls.synced(source);
  const { total, from, rows } = listPage(parts.cache.bansInForce(), offset, limit, activeBan);
  return { total, offset: from, bans: rows };
}

export async function bansOf(parts: Parts, key: string): Promise<ActiveBan[]> {
  await parts.calls.synced('limitsAdmin');
  const now = Date.now();
  const bans = [parts.cache.banOf(key), parts.cache.banOf(addressBan(key))];
  return bans.filter((ban): ban is Stored<BanRecord> => ban !== undefined && ban.until > now).map(activeBan);
}

export function banMethods(parts: Parts, ruleBans: RuleBans, forget: ForgetBans | undefined) {
  const { cache, calls } = parts;
  return {
    ban: (client: unknown, options: unknown) => banClient(parts, client, options),
    async unban(client: unknown, options?: unknown): Promise<boolean> {
      const check = new Checker('limits.unban');
      const key = typeof client === 'string' && client !== '' ? client : parts.keyOf(check, client).key;
      const operator = byOption(check, options);
      return calls.bounded('limits.unban', async (bound) => {
        // What led to the bans first: an unban that fails after it leaves the ban in force, never a ban lifted
        // whose kept strikes would ban the client again at its next refusal.
        await forget?.(key, bound);
        const at = Date.now();
        const changes = [key, addressBan(key)].map((banKey) => {
          const known = cache.banOf(banKey);
          const kind = known?.kind ?? (banKey === key ? kindOfKey(key) : 'ip');
          const event = eventOf('unban', key, kind, at, { operator });
          return { field: `ban:${banKey}`, record: null, event };
        });
        const result = await calls.change(changes, bound);
        let lifted = false;
        for (const banKey of [key, addressBan(key)]) {
          // A rule's ban only this instance has: the store had none to lift.
          const held = cache.dropHeldBan(banKey);
          if (held) {
            ruleBans.forget(banKey);
            if (held.until > at) lifted = true;
          }
        }
        return lifted || result.records.some((done) => done.changed);
      });
    },
    bans: async (): Promise<ActiveBan[]> => (await bansPage(parts, 0, Infinity, 'limits.bans')).bans,
  };
}
