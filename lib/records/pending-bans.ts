// Rules' bans the store could not take yet: they hold on the instance that decided them, and are written again.
import type { Request } from 'express';
import type { BanRecord } from './kinds.js';

/** The first wait before a rule's ban the store could not take is written again; it doubles up to LAST_RETRY_MS. */
const FIRST_RETRY_MS = 500;
const LAST_RETRY_MS = 30_000;
/** Rules' bans kept to write again at the most; beyond, the oldest is no longer written (it still holds here). */
const PENDING_KEPT = 10_000;

/**
 * The rules' bans of one instance that the store has not taken, by ban key: written again, one at a time, until the
 * store takes them, they end, or `close()`. A round that fails waits twice as long as the one before (from
 * FIRST_RETRY_MS to LAST_RETRY_MS), or until the store answers a read again; a round that writes them all starts again
 * from the shortest. One timer at most, never longer than LAST_RETRY_MS.
 */
export class PendingBans {
  readonly #pending = new Map<string, { readonly ban: BanRecord; readonly req: Request | undefined }>();
  #retry: ReturnType<typeof setTimeout> | undefined;
  #retryMs = FIRST_RETRY_MS;
  #writing = false;
  #closed = false;

  constructor(
    /** Writes a ban: resolves once the store took it (or holds one of the key already), rejects when it failed. */
    private readonly write: (banKey: string, ban: BanRecord, req: Request | undefined) => Promise<unknown>,
    /** Whether the ban of `banKey` still holds on this instance alone: not lifted, nor replaced by the store's. */
    private readonly alone: (banKey: string) => boolean,
  ) {}

  keep(banKey: string, ban: BanRecord, req: Request | undefined): void {
    if (this.#closed) return;
    if (this.#pending.size >= PENDING_KEPT && !this.#pending.has(banKey))
      this.#pending.delete(this.#pending.keys().next().value as string);
    this.#pending.set(banKey, { ban, req });
    this.#schedule(this.#retryMs);
  }

  /** The ban of `banKey` was lifted: it is not written again. */
  forget(banKey: string): void {
    this.#pending.delete(banKey);
  }

  /** The store answers again: the bans it could not take are written now, not at the end of a long wait. */
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
      if (!this.alone(banKey) || ban.until <= Date.now()) {
        this.#pending.delete(banKey);
        continue;
      }
      try {
        await this.write(banKey, ban, req);
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
