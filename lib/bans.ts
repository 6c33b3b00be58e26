// Bans for circumvention (rule 5 of the contract): kept in the store, so that every instance enforces them.
import type { Request } from 'express';
import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import type { Client, ClientKind } from './client.js';
import type { Store } from './stores.js';

/** When a client is banned. Durations in milliseconds, whole seconds. */
export interface BanOptions {
  /** Ban a client that is refused with 429 this many times... */
  readonly after: number;
  /** ...within this many milliseconds. */
  readonly within: number;
  /** How long a ban lasts, in milliseconds. */
  readonly duration: number;
  /** Ban an IP address that presents more than this many distinct Authorization values (rotating tokens)... Default: off. */
  readonly tokensPerIp?: number;
  /** ...within this many milliseconds. Default: `within`. */
  readonly tokensWithin?: number;
}

/** What `onBan` is told. */
export interface BanInfo {
  /** The banned client's storage key (`t:<hash>`, `ip:<address>` or a custom key): pass it to `unban()`. */
  readonly key: string;
  readonly kind: ClientKind;
  /** `limit`: refused `after` times within `within`; `token-rotation`: too many distinct tokens from one IP. */
  readonly reason: 'limit' | 'token-rotation';
  readonly until: Date;
}

export type OnBan = (info: BanInfo, req: Request) => void;

/** Internal counters get endpoint-like names of their own, so a store keeps them apart from the endpoints'. */
function counter(store: Store, name: string, limit: number, windowMs: number): RateLimiterAbstract {
  return store({ method: 'GET', path: `/${name}`, name: `listing-limits ${name}`, limit, windowMs });
}

export class Bans {
  readonly #banned: RateLimiterAbstract;
  readonly #strikes: RateLimiterAbstract;
  readonly #seen: RateLimiterAbstract | undefined;
  readonly #tokens: RateLimiterAbstract | undefined;
  readonly #options: BanOptions;
  readonly #onBan: OnBan | undefined;

  constructor(store: Store, options: BanOptions, onBan: OnBan | undefined) {
    this.#options = options;
    this.#onBan = onBan;
    this.#banned = counter(store, 'bans', 1, options.duration);
    this.#strikes = counter(store, 'strikes', options.after, options.within);
    if (options.tokensPerIp !== undefined) {
      const within = options.tokensWithin ?? options.within;
      this.#seen = counter(store, 'seen-tokens', 1, within);
      this.#tokens = counter(store, 'tokens-per-ip', options.tokensPerIp, within);
    }
  }

  /** The end of the client's ban, or of its IP address's ban, in epoch milliseconds; undefined when not banned. */
  async bannedUntil(client: Client): Promise<number | undefined> {
    const keys = this.#tokens && client.ip !== client.key ? [client.key, client.ip] : [client.key];
    const states = await Promise.all(keys.map((key) => this.#banned.get(key)));
    let until: number | undefined;
    for (const state of states) {
      // Only bans write to this counter. The memory store keeps an expired entry until its timer removes it:
      // a ban with no time left is over.
      if (state && state.consumedPoints > 0 && state.msBeforeNext > 0) {
        until = Math.max(until ?? 0, Date.now() + state.msBeforeNext);
      }
    }
    return until;
  }

  /** Counts a refusal; the `after`-th within `within` bans the client. */
  async strike(client: Client, req: Request): Promise<void> {
    const strikes = await this.#strikes.penalty(client.key);
    if (strikes.consumedPoints >= this.#options.after) await this.#ban(client.key, client.kind, 'limit', req);
  }

  /** Notes a token seen from an IP address; more distinct tokens than `tokensPerIp` within the window ban the address. */
  async sawToken(client: Client, req: Request): Promise<void> {
    if (!this.#seen || !this.#tokens || client.kind !== 'token') return;
    const seen = await this.#seen.penalty(`${client.ip}:${client.key}`);
    if (!seen.isFirstInDuration) return;
    const tokens = await this.#tokens.penalty(client.ip);
    if (tokens.consumedPoints > (this.#options.tokensPerIp ?? 0)) await this.#ban(client.ip, 'ip', 'token-rotation', req);
  }

  async #ban(key: string, kind: ClientKind, reason: BanInfo['reason'], req: Request): Promise<void> {
    await this.#banned.set(key, 1, this.#options.duration / 1000);
    await this.#strikes.delete(key);
    this.#onBan?.({ key, kind, reason, until: new Date(Date.now() + this.#options.duration) }, req);
  }

  /** Lifts the ban of a client key as reported to `onBan`, and forgets its refusals. True when it was banned. */
  async unban(key: string): Promise<boolean> {
    const [banned] = await Promise.all([this.#banned.delete(key), this.#strikes.delete(key)]);
    return banned;
  }
}
