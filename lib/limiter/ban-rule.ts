// Bans for circumventing the limits (rule 5): option `ban`, checked and compiled into the steps that ban and refuse.
import type { Checker } from '../shared/check.js';
import { type Context, GOING, type Step } from './context.js';
import { refuseBanned } from './refusals.js';
import type { Counter, Counts } from '../stores/counter.js';
import { type CounterOf, fixedSpec } from './endpoint.js';
import { type ClientKind, tokenEnd } from '../contract/keys.js';
import { observe, type OnError } from '../shared/hooks.js';
import { addressBan } from '../records/kinds.js';
import type { Records } from '../records/records.js';
import type { BanInfo, BanOptions, ListingLimitsOptions } from './types.js';
import type { Waiting } from '../stores/waiting.js';
import type { CallBound } from '../stores/call-bound.js';
import { resetWithin } from '../stores/resilient.js';

const banOptionFields = ['after', 'within', 'duration', 'tokensPerIp', 'tokensWithin', 'scope'] as const;

/** Option `ban`, checked: where bans are enforced is known. */
type CheckedBan = BanOptions & { readonly scope: 'site' | 'table' };

/** Options `ban` and `onBan`, checked: undefined without `ban`. */
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

/** The count of a counter of one limit. */
const oneCount = (counts: Counts): number => counts[0]?.count ?? 0;

/**
 * The ban rule of one middleware. A ban is decided from what an atomic count answers, so that requests in flight
 * together cannot all slip past it, and `onBan` fires for the one request that crossed the threshold.
 */
export class BanRule {
  readonly #strikes: Counter;
  readonly #seen: Counter | undefined;
  readonly #tokens: Counter | undefined;

  constructor(
    counterOf: CounterOf,
    private readonly options: BanOptions,
    private readonly mode: {
      shadow: boolean;
      onBan: ListingLimitsOptions['onBan'];
      report: OnError;
      waiting: Waiting | undefined;
    },
    private readonly records: Records,
  ) {
    // In shadow mode the counters that lead to bans have names of their own: nothing a shadow instance counts can
    // make an enforcing instance on the same store ban.
    const name = (what: string) => `listing-limits ${mode.shadow ? 'shadow ' : ''}${what}`;
    this.#strikes = counterOf(fixedSpec(name('strikes'), options.after, options.within));
    if (options.tokensPerIp !== undefined) {
      const windowMs = options.tokensWithin ?? options.within;
      this.#seen = counterOf(fixedSpec(name('seen-tokens'), 1, windowMs));
      this.#tokens = counterOf(fixedSpec(name('tokens-per-ip'), options.tokensPerIp, windowMs));
    }
  }

  /** Whether addresses are banned for presenting too many tokens (`tokensPerIp`). */
  get countsTokens(): boolean {
    return this.#tokens !== undefined;
  }

  /**
   * With `tokensPerIp`: a token new to its address counts on the address's tokens, any other reads them. The ban does
   * not reset the count, so the store's order decides which requests are refused.
   */
  readonly tokens: Step = (ctx) => {
    const { client } = ctx;
    if (client.kind !== 'token') return;
    const seen = (this.#seen as Counter).hit(`${client.ip}|${client.key}`, ctx.within(this.mode.waiting));
    if (!(seen instanceof Promise)) return this.#tokensOf(ctx, oneCount(seen) === 1);
    return seen.then((counted) => this.#tokensOf(ctx, oneCount(counted) === 1));
  };

  #tokensOf(ctx: Context, isNew: boolean): void | Promise<void> {
    const tokens = this.#tokens as Counter;
    const ip = ctx.client.ip;
    if (isNew) {
      const counted = tokens.hit(ip, ctx.deadline);
      if (counted instanceof Promise) return counted.then((c) => this.#tokenDecision(ctx, oneCount(c), true));
      return this.#tokenDecision(ctx, oneCount(counted), true);
    }
    // In this process's memory everything is decided in order: the cache knows every ban decided before.
    if (tokens.now) return this.mode.shadow ? undefined : void refuseBanned(this.records.cache, ctx);
    return Promise.resolve(tokens.peek(ip, ctx.deadline)).then((peeked) =>
      this.#tokenDecision(ctx, oneCount(peeked), false),
    );
  }

  #tokenDecision(ctx: Context, n: number, counted: boolean): void {
    const limit = this.options.tokensPerIp as number;
    if (n <= limit) return;
    const ip = ctx.client.ip;
    this.#ban(ctx, ip, addressBan(ip), 'ip', 'token-rotation', counted && n === limit + 1);
    if (!this.mode.shadow && ctx.state === GOING) refuseBanned(this.records.cache, ctx);
  }

  /** After a refusal: the `after`-th within `within` bans the client and is answered as usual; a later one gets 403. */
  strike(ctx: Context): void | Promise<void> {
    const { client } = ctx;
    const counted = this.#strikes.hit(client.key, ctx.within(this.mode.waiting));
    const decide = (n: number) => {
      const { after } = this.options;
      if (n < after) return;
      if (!this.mode.shadow && refuseBanned(this.records.cache, ctx)) return;
      this.#ban(ctx, client.key, client.key, client.kind, 'limit', n === after);
    };
    return counted instanceof Promise ? counted.then((c) => decide(oneCount(c))) : decide(oneCount(counted));
  }

  /**
   * Bans `key` (stored as `banKey`), unless a ban of it is known. Past the threshold without crossing it (another
   * instance may have banned it), the store keeps the ban in force or takes this one; `onBan` is told once either way.
   */
  #ban(ctx: Context, key: string, banKey: string, kind: ClientKind, reason: BanInfo['reason'], crossed: boolean): void {
    const now = Date.now();
    const until = now + this.options.duration;
    const info = { key, kind, reason, until: new Date(until), shadow: this.mode.shadow };
    // Requests in flight together with the one that banned find the ban here and add nothing to it.
    if (!this.mode.shadow && this.records.cache.banned(banKey, now)) return;
    if (crossed) observe(this.mode.onBan, info, ctx.req, this.mode.report);
    if (this.mode.shadow) return;
    // A token's ban keeps what the pages show of it (its last characters), as its grant request shows it.
    const end = kind === 'token' ? tokenEnd(ctx.client.token ?? '') || undefined : undefined;
    const record = { key, kind, reason, since: now, until, by: 'rule' as const, tokenEnd: end };
    void this.records.ruleBans.hold(banKey, record, ctx.req).then((taken) => {
      if (taken && !crossed) observe(this.mode.onBan, info, ctx.req, this.mode.report);
    });
  }

  /** Forgets what led to the bans of `key` (its refusals, its address's token count), within an operator's bound. */
  async forget(key: string, bound: CallBound): Promise<void> {
    const forgotten: Promise<unknown>[] = [resetWithin(this.#strikes, key, bound)];
    if (this.#tokens) forgotten.push(resetWithin(this.#tokens, key, bound));
    await Promise.all(forgotten);
  }
}
