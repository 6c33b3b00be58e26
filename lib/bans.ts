// Bans for circumventing the limits (rule 5): option `ban`, checked and compiled into the steps that ban and refuse.
import { LRUCache } from 'lru-cache';
import type { Checker } from './check.js';
import { answerBanned, type Context, GOING, type Step } from './context.js';
import type { Counter } from './counter.js';
import { counterOf } from './endpoint.js';
import { observe, type OnError } from './hooks.js';
import { addressBan, type Registry } from './registry.js';
import type { Store } from './stores.js';
import type { BanInfo, BanOptions, ClientKind, ListingLimitsOptions } from './types.js';
import type { Deadline, Waiting } from './waiting.js';

const banFields = ['after', 'within', 'duration', 'tokensPerIp', 'tokensWithin', 'scope'] as const;

/** Bans this process keeps at the most; the oldest go first beyond that (a shared store keeps them all). */
const MIRRORED_BANS = 100_000;

/** Where bans are enforced: `'site'` (every request through the middleware) unless `ban.scope` says `'table'`. */
export function banScope(check: Checker, options: ListingLimitsOptions): 'site' | 'table' {
  const scope = (options.ban as { scope?: unknown } | undefined)?.scope;
  return scope === undefined ? 'site' : check.oneOf(scope, ['site', 'table'], 'options.ban.scope');
}

export function checkBan(check: Checker, options: ListingLimitsOptions): BanOptions | undefined {
  const { ban, onBan } = options;
  if (onBan !== undefined && typeof onBan !== 'function')
    check.invalid('options.onBan', 'must be a function (info, req) => void.');
  if (ban === undefined) {
    if (onBan) check.invalid('options.onBan', 'needs options.ban, which decides when a client is banned.');
    return undefined;
  }
  const b = check.options(ban, 'options.ban', '{ after, within, duration }');
  check.unknownKeys(b, banFields, (key) => `options.ban.${key}`);
  const within = check.seconds(b.within, 'options.ban.within');
  banScope(check, options);
  const checked: BanOptions = {
    after: check.count(b.after, 'options.ban.after'),
    within,
    duration: check.seconds(b.duration, 'options.ban.duration'),
  };
  if (b.tokensPerIp === undefined) {
    if (b.tokensWithin !== undefined) check.invalid('options.ban.tokensWithin', 'needs options.ban.tokensPerIp.');
    return checked;
  }
  return {
    ...checked,
    tokensPerIp: check.count(b.tokensPerIp, 'options.ban.tokensPerIp'),
    tokensWithin: b.tokensWithin === undefined ? within : check.seconds(b.tokensWithin, 'options.ban.tokensWithin'),
  };
}

/**
 * The bans of one middleware. A ban is decided from the value an atomic hit returns (the `after`-th refusal, the
 * token that makes one too many), so requests in flight together cannot all slip past it, and `onBan` fires for the
 * one request that crossed the threshold. Every ban is mirrored in this process at the moment it is decided, and a
 * request is checked against the mirror again just before it is answered; with a shared store the ban is also
 * written there, and read from there, for the other instances.
 */
export class Bans {
  readonly #options: BanOptions;
  readonly #shadow: boolean;
  readonly #onBan: ListingLimitsOptions['onBan'];
  readonly #report: OnError;
  /** Ban key → end of the ban (epoch ms). */
  readonly #mirror = new LRUCache<string, number>({ max: MIRRORED_BANS });
  /** The store's record of bans, when the store is shared; undefined when it is this process's memory. */
  readonly #stored: Counter | undefined;
  readonly #strikes: Counter;
  readonly #seen: Counter | undefined;
  readonly #tokens: Counter | undefined;
  readonly #waiting: Waiting | undefined;
  readonly #registry: Registry;
  /** When the last ban this process decided ends. */
  #latest = 0;

  constructor(
    check: Checker,
    store: Store,
    options: BanOptions,
    mode: { shadow: boolean; onBan: ListingLimitsOptions['onBan']; report: OnError; waiting: Waiting | undefined },
    registry: Registry,
  ) {
    this.#options = options;
    this.#registry = registry;
    this.#shadow = mode.shadow;
    this.#onBan = mode.onBan;
    this.#report = mode.report;
    this.#waiting = mode.waiting;
    // In shadow mode the counters that lead to bans have names of their own: nothing a shadow instance counts can
    // make an enforcing instance on the same store ban.
    const name = (what: string) => `listing-limits ${mode.shadow ? 'shadow ' : ''}${what}`;
    this.#strikes = counterOf(check, store, mode.waiting, {
      name: name('strikes'),
      limit: options.after,
      windowMs: options.within,
    });
    if (options.tokensPerIp !== undefined) {
      const windowMs = options.tokensWithin ?? options.within;
      this.#seen = counterOf(check, store, mode.waiting, { name: name('seen-tokens'), limit: 1, windowMs });
      this.#tokens = counterOf(check, store, mode.waiting, {
        name: name('tokens-per-ip'),
        limit: options.tokensPerIp,
        windowMs,
      });
    }
    const stored = counterOf(check, store, mode.waiting, {
      name: 'listing-limits bans',
      limit: 1,
      windowMs: options.duration,
    });
    // A store that counts synchronously is this process's memory: the mirror is then the record.
    this.#stored = mode.shadow || stored.now ? undefined : stored;
  }

  /** Whether any ban may be active, of this process's or of the store's runtime state. */
  anyBan(now: number): boolean {
    return this.#latest > now || this.#registry.anyBan(now);
  }

  /** Whether addresses are banned for presenting too many tokens (`tokensPerIp`). */
  get countsTokens(): boolean {
    return this.#tokens !== undefined;
  }

  /** The end of a mirrored ban, or undefined. */
  #mirrored(key: string, now: number): number | undefined {
    // An ended ban stays until it is evicted: it tells that a new ban of the same key is a ban again.
    const until = this.#mirror.get(key);
    return until !== undefined && until > now ? until : undefined;
  }

  /**
   * Whether the client, or its address, is banned as far as this process knows (its own decisions, and the bans of
   * the store's runtime state); answers 403 when it is.
   */
  refuseMirrored(ctx: Context): boolean {
    const { client } = ctx;
    const now = Date.now();
    const until =
      this.#mirrored(client.key, now) ??
      (this.#tokens ? this.#mirrored(addressBan(client.ip), now) : undefined) ??
      this.#registry.bannedUntil(client, now);
    if (until === undefined) return false;
    answerBanned(ctx, until);
    return true;
  }

  #deadline(ctx: Context): Deadline | undefined {
    if (this.#waiting) ctx.deadline ??= this.#waiting.start();
    return ctx.deadline;
  }

  /** Before counting: refuses a banned client (or address), from the mirror, then from a shared store. */
  readonly check: Step = (ctx) => {
    if (this.#shadow || this.refuseMirrored(ctx)) return;
    const stored = this.#stored;
    if (!stored) return;
    const { client } = ctx;
    const keys = this.#tokens ? [client.key, addressBan(client.ip)] : [client.key];
    const deadline = this.#deadline(ctx);
    return Promise.all(keys.map((key) => stored.get(key, deadline))).then((found) => {
      let until = 0;
      found.forEach((state, i) => {
        if (!state) return;
        const end = state.count > 1 ? state.count : state.resetAt;
        this.#mirror.set(keys[i] as string, end);
        until = Math.max(until, end);
      });
      if (until > Date.now()) answerBanned(ctx, until);
    });
  };

  /**
   * Before counting, with `tokensPerIp`: a token new to its address counts on the address's tokens, any other reads
   * them; past `tokensPerIp` the address is banned (by the token that is one too many) and the request refused. The
   * count is not reset by the ban, so the store's order decides: a request whose hit or read follows the banning hit
   * sees more than `tokensPerIp` and is refused, one before it is not.
   */
  readonly tokens: Step = (ctx) => {
    const { client } = ctx;
    if (client.kind !== 'token') return;
    const seen = (this.#seen as Counter).hit(`${client.ip}|${client.key}`, this.#deadline(ctx));
    if (!(seen instanceof Promise)) return this.#tokensOf(ctx, seen.count === 1);
    return seen.then((state) => this.#tokensOf(ctx, state.count === 1));
  };

  #tokensOf(ctx: Context, first: boolean): void | Promise<void> {
    const tokens = this.#tokens as Counter;
    const ip = ctx.client.ip;
    if (first) {
      const counted = tokens.hit(ip, ctx.deadline);
      if (counted instanceof Promise) return counted.then((state) => this.#tokenDecision(ctx, state.count, true));
      return this.#tokenDecision(ctx, counted.count, true);
    }
    // In this process's memory everything is decided in order: the mirror knows every ban decided before.
    if (tokens.now) return this.#shadow ? undefined : void this.refuseMirrored(ctx);
    return tokens.get(ip, ctx.deadline).then((state) => this.#tokenDecision(ctx, state?.count ?? 0, false));
  }

  #tokenDecision(ctx: Context, n: number, hit: boolean): void | Promise<void> {
    const limit = this.#options.tokensPerIp as number;
    if (n <= limit) return;
    const ip = ctx.client.ip;
    // The hit that is one too many bans; so does any request once a ban has ended within the same count window.
    const crossed = (hit && n === limit + 1) || this.#mirror.has(addressBan(ip));
    const banned = this.#ban(ctx, ip, addressBan(ip), 'ip', 'token-rotation', crossed);
    if (this.#shadow) return banned;
    const refuse = () => {
      if (ctx.state === GOING) this.refuseMirrored(ctx);
    };
    return banned ? banned.then(refuse) : refuse();
  }

  /**
   * After a refusal: the `after`-th refusal within `within` bans the client, and is itself answered as usual; a later
   * one is refused as banned. The count is not reset by the ban, so the store's order decides which is which.
   */
  strike(ctx: Context): void | Promise<void> {
    const { client } = ctx;
    const counted = this.#strikes.hit(client.key, this.#deadline(ctx));
    const decide = (n: number) => {
      const { after } = this.#options;
      if (n < after) return;
      if (!this.#shadow && this.refuseMirrored(ctx)) return;
      // The `after`-th refusal bans; so does any refusal once a ban has ended within the same count window.
      return this.#ban(ctx, client.key, client.key, client.kind, 'limit', n === after || this.#mirror.has(client.key));
    };
    return counted instanceof Promise ? counted.then((state) => decide(state.count)) : decide(counted.count);
  }

  /**
   * Bans `key` (stored as `banKey`) from now on: at once in this process, then in a shared store. `onBan` is told
   * when this request crossed the threshold. In shadow mode only `onBan` is told.
   */
  #ban(
    ctx: Context,
    key: string,
    banKey: string,
    kind: ClientKind,
    reason: BanInfo['reason'],
    crossed: boolean,
  ): void | Promise<void> {
    const now = Date.now();
    const until = now + this.#options.duration;
    const info = { key, kind, reason, until: new Date(until), shadow: this.#shadow };
    if (this.#shadow) {
      if (crossed) observe(this.#onBan, info, ctx.req, this.#report);
      return;
    }
    // Requests in flight together with the one that banned find the ban here and add nothing to it.
    if (this.#mirrored(banKey, now) !== undefined) return;
    this.#mirror.set(banKey, until);
    this.#latest = Math.max(this.#latest, until);
    if (crossed) observe(this.#onBan, info, ctx.req, this.#report);
    // Recorded for the lists, the history and the requests of every instance that match no row; not waited for.
    const record = { key, kind, reason, since: now, until, by: 'rule' as const };
    this.#registry.ban(banKey, record, ctx.req).then(undefined, (error: unknown) => this.#report(error, ctx.req));
    return this.#stored?.set(banKey, until, this.#options.duration, ctx.deadline);
  }

  /** Lifts the bans of `key` (its own, and its address's), and forgets its refusals and its address's token count. */
  async unban(key: string): Promise<boolean> {
    const now = Date.now();
    const keys = [key, addressBan(key)];
    let banned = keys.some((k) => this.#mirrored(k, now) !== undefined);
    for (const k of keys) this.#mirror.delete(k);
    const forgotten: Promise<unknown>[] = [this.#strikes.delete(key)];
    if (this.#tokens) forgotten.push(this.#tokens.delete(key));
    if (this.#stored) {
      const stored = this.#stored;
      const deleted = await Promise.all(keys.map((k) => stored.delete(k)));
      banned ||= deleted.includes(true);
    }
    if (await this.#registry.unban(key)) banned = true;
    await Promise.all(forgotten);
    return banned;
  }
}
