// Bans for circumventing the limits (rule 5): option `ban`, checked and compiled into the steps that ban and refuse.
import type { Checker } from '../shared/check.js';
import { type Context, GOING, refuseBanned, type Step } from './context.js';
import type { Counter } from '../stores/counter.js';
import { counterOf } from './endpoint.js';
import { type ClientKind, tokenEnd } from '../contract/keys.js';
import { observe, type OnError } from '../shared/hooks.js';
import { addressBan } from '../records/kinds.js';
import type { Records } from '../records/records.js';
import type { Count, StoreContract } from '../stores/store.js';
import type { BanInfo, BanOptions, ListingLimitsOptions } from './types.js';
import type { Deadline, Waiting } from '../stores/waiting.js';
import type { CallBound } from '../stores/call-bound.js';

const banOptionFields = ['after', 'within', 'duration', 'tokensPerIp', 'tokensWithin', 'scope'] as const;

/** Option `ban`, checked: where bans are enforced is known. */
type CheckedBan = BanOptions & { readonly scope: 'site' | 'table' };

/**
 * Options `ban` and `onBan`, checked: undefined without `ban`. Its `scope`, where bans are enforced, is `'site'` (every
 * request through the middleware) unless it says `'table'`.
 */
export function checkBanOption(check: Checker, options: ListingLimitsOptions): CheckedBan | undefined {
  const { onBan } = options;
  if (onBan !== undefined && typeof onBan !== 'function')
    check.invalid('options.onBan', 'must be a function (info, req) => void.');
  if (options.ban === undefined) {
    if (onBan) check.invalid('options.onBan', 'needs options.ban, which decides when a client is banned.');
    return undefined;
  }
  const ban = check.options(options.ban, 'options.ban', '{ after, within, duration }');
  check.unknownKeys(ban, banOptionFields, (key) => `options.ban.${key}`);
  // In the order the fields are checked: the first at fault is told.
  const checked = {
    within: check.seconds(ban.within, 'options.ban.within'),
    scope: ban.scope === undefined ? 'site' : check.oneOf(ban.scope, ['site', 'table'] as const, 'options.ban.scope'),
    after: check.count(ban.after, 'options.ban.after'),
    duration: check.seconds(ban.duration, 'options.ban.duration'),
  };
  if (ban.tokensPerIp === undefined) {
    if (ban.tokensWithin !== undefined) check.invalid('options.ban.tokensWithin', 'needs options.ban.tokensPerIp.');
    return checked;
  }
  return {
    ...checked,
    tokensPerIp: check.count(ban.tokensPerIp, 'options.ban.tokensPerIp'),
    tokensWithin:
      ban.tokensWithin === undefined ? checked.within : check.seconds(ban.tokensWithin, 'options.ban.tokensWithin'),
  };
}

/**
 * The rule that bans (rule 5) of one middleware. A ban is decided from the value an atomic count returns (the
 * `after`-th refusal, the token that makes one too many), so requests in flight together cannot all slip past it, and
 * `onBan` fires for the one request that crossed the threshold. The ban itself is one record of the store's runtime
 * state (see Records): in force on this instance from the moment it is decided, and on the others when they read it.
 */
export class BanRule {
  readonly #options: BanOptions;
  readonly #shadow: boolean;
  readonly #onBan: ListingLimitsOptions['onBan'];
  readonly #report: OnError;
  readonly #strikes: Counter<Count>;
  readonly #seen: Counter<Count> | undefined;
  readonly #tokens: Counter<Count> | undefined;
  readonly #waiting: Waiting | undefined;
  readonly #records: Records;

  constructor(
    store: StoreContract,
    options: BanOptions,
    mode: { shadow: boolean; onBan: ListingLimitsOptions['onBan']; report: OnError; waiting: Waiting | undefined },
    records: Records,
  ) {
    this.#options = options;
    this.#records = records;
    this.#shadow = mode.shadow;
    this.#onBan = mode.onBan;
    this.#report = mode.report;
    this.#waiting = mode.waiting;
    // In shadow mode the counters that lead to bans have names of their own: nothing a shadow instance counts can
    // make an enforcing instance on the same store ban.
    const name = (what: string) => `listing-limits ${mode.shadow ? 'shadow ' : ''}${what}`;
    this.#strikes = counterOf(store, mode.waiting, {
      name: name('strikes'),
      limit: options.after,
      windowMs: options.within,
    });
    if (options.tokensPerIp !== undefined) {
      const windowMs = options.tokensWithin ?? options.within;
      this.#seen = counterOf(store, mode.waiting, { name: name('seen-tokens'), limit: 1, windowMs });
      this.#tokens = counterOf(store, mode.waiting, {
        name: name('tokens-per-ip'),
        limit: options.tokensPerIp,
        windowMs,
      });
    }
  }

  /** Whether addresses are banned for presenting too many tokens (`tokensPerIp`). */
  get countsTokens(): boolean {
    return this.#tokens !== undefined;
  }

  #deadline(ctx: Context): Deadline | undefined {
    if (this.#waiting) ctx.deadline ??= this.#waiting.start();
    return ctx.deadline;
  }

  /**
   * Before counting, with `tokensPerIp`: a token new to its address counts on the address's tokens, any other reads
   * them; past `tokensPerIp` the address is banned (by the token that is one too many) and the request refused. The
   * count is not reset by the ban, so the store's order decides: a request whose count or peek follows the banning
   * count sees more than `tokensPerIp` and is refused, one before it is not.
   */
  readonly tokens: Step = (ctx) => {
    const { client } = ctx;
    if (client.kind !== 'token') return;
    const seen = (this.#seen as Counter<Count>).count(`${client.ip}|${client.key}`, this.#deadline(ctx));
    if (!(seen instanceof Promise)) return this.#tokensOf(ctx, seen.count === 1);
    return seen.then((counted) => this.#tokensOf(ctx, counted.count === 1));
  };

  #tokensOf(ctx: Context, first: boolean): void | Promise<void> {
    const tokens = this.#tokens as Counter<Count>;
    const ip = ctx.client.ip;
    if (first) {
      const counted = tokens.count(ip, ctx.deadline);
      if (counted instanceof Promise) return counted.then((c) => this.#tokenDecision(ctx, c.count, true));
      return this.#tokenDecision(ctx, counted.count, true);
    }
    // In this process's memory everything is decided in order: the cache knows every ban decided before.
    if (tokens.countsNow) return this.#shadow ? undefined : void refuseBanned(this.#records.cache, ctx);
    return tokens.peek(ip, ctx.deadline).then((peeked) => this.#tokenDecision(ctx, peeked?.count ?? 0, false));
  }

  #tokenDecision(ctx: Context, n: number, counted: boolean): void {
    const limit = this.#options.tokensPerIp as number;
    if (n <= limit) return;
    const ip = ctx.client.ip;
    this.#ban(ctx, ip, addressBan(ip), 'ip', 'token-rotation', counted && n === limit + 1);
    if (!this.#shadow && ctx.state === GOING) refuseBanned(this.#records.cache, ctx);
  }

  /**
   * After a refusal: the `after`-th refusal within `within` bans the client, and is itself answered as usual; a later
   * one is refused as banned. The count is not reset by the ban, so the store's order decides which is which.
   */
  strike(ctx: Context): void | Promise<void> {
    const { client } = ctx;
    const counted = this.#strikes.count(client.key, this.#deadline(ctx));
    const decide = (n: number) => {
      const { after } = this.#options;
      if (n < after) return;
      if (!this.#shadow && refuseBanned(this.#records.cache, ctx)) return;
      this.#ban(ctx, client.key, client.key, client.kind, 'limit', n === after);
    };
    return counted instanceof Promise ? counted.then((c) => decide(c.count)) : decide(counted.count);
  }

  /**
   * Bans `key` (stored as `banKey`) from now on, unless this instance knows a ban of it in force. Past the threshold
   * without crossing it (a ban that ended within the count's window, or one another instance decided and this one
   * has not read yet), the store decides: it keeps a ban in force, else takes this one. `onBan` is told once per
   * ban: by the request that crossed the threshold, or when the store took the ban. In shadow mode only `onBan` is
   * told, when the threshold is crossed. The request does not wait for the store.
   */
  #ban(ctx: Context, key: string, banKey: string, kind: ClientKind, reason: BanInfo['reason'], crossed: boolean): void {
    const now = Date.now();
    const until = now + this.#options.duration;
    const info = { key, kind, reason, until: new Date(until), shadow: this.#shadow };
    if (this.#shadow) {
      if (crossed) observe(this.#onBan, info, ctx.req, this.#report);
      return;
    }
    // Requests in flight together with the one that banned find the ban here and add nothing to it.
    if (this.#records.cache.banned(banKey, now)) return;
    if (crossed) observe(this.#onBan, info, ctx.req, this.#report);
    // A token's ban keeps what the pages show of it (its last characters), as its grant request shows it.
    const end = kind === 'token' ? tokenEnd(ctx.client.token ?? '') || undefined : undefined;
    const record = { key, kind, reason, since: now, until, by: 'rule' as const, tokenEnd: end };
    void this.#records.ruleBans.hold(banKey, record, ctx.req).then((taken) => {
      if (taken && !crossed) observe(this.#onBan, info, ctx.req, this.#report);
    });
  }

  /**
   * Forgets what led to the bans of `key` (its refusals, and its address's token count) on every instance, within an
   * operator's call's bound.
   */
  async forget(key: string, bound: CallBound): Promise<void> {
    const forgotten: Promise<unknown>[] = [this.#strikes.resetWithin(key, bound)];
    if (this.#tokens) forgotten.push(this.#tokens.resetWithin(key, bound));
    await Promise.all(forgotten);
  }
}
