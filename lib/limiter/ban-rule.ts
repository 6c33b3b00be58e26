// Bans for circumventing the limits (rule 5): option `ban`, checked and compiled into the steps that ban and refuse.
import type { Checker } from '../shared/check.js';
import type { Request } from 'express';
import type { Client } from './identify.js';
import type { Counter, Counts } from '../stores/counter.js';
import { type CounterOf, fixedSpec } from './endpoint.js';
import { type ClientKind, tokenEnd } from '../contract/keys.js';
import { observe, type OnError } from '../shared/hooks.js';
import { addressBan } from '../records/kinds.js';
import type { Records } from '../records/records.js';
import type { BanInfo, BanOptions, ListingLimitsOptions } from './types.js';
import type { Deadline } from '../stores/waiting.js';
import type { CallBound } from '../stores/call-bound.js';
import { resetWithin } from '../stores/resilient.js';

const banOptionFields = ['after', 'within', 'duration', 'tokensPerIp', 'tokensWithin', 'scope'] as const;

type CheckedBan = BanOptions & { readonly scope: 'site' | 'table' };

/** Options `ban` and `onBan`, checked: undefined without `ban`. */
export function checkBanOption(check: Checker, options: ListingLimitsOptions): CheckedBan | undefined {
  const { onBan } = options;
  check.callback(onBan, 'options.onBan', '(info, req) => void');
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

const oneCount = (counts: Counts): number => counts[0]?.count ?? 0;

/**
 * Decides bans from what an atomic count answers: requests in flight together cannot all slip past, and `onBan` fires
 * for the one that crossed the threshold. Its steps answer whether the request path refuses the request if banned.
 */
export class BanRule {
  readonly #strikes: Counter;
  readonly #seen: Counter | undefined;
  readonly #tokens: Counter | undefined;

  constructor(
    counterOf: CounterOf,
    private readonly options: BanOptions,
    private readonly mode: { shadow: boolean; onBan: ListingLimitsOptions['onBan']; report: OnError },
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

  get countsTokens(): boolean {
    return this.#tokens !== undefined;
  }

  /** A token new to its address counts on its tokens, any other reads them; the store's order decides refusals. */
  tokens(client: Client, req: Request, deadline: Deadline | undefined): boolean | Promise<boolean> {
    if (client.kind !== 'token') return false;
    const seen = (this.#seen as Counter).hit(`${client.ip}|${client.key}`, deadline);
    if (!(seen instanceof Promise)) return this.#tokensOf(client, req, deadline, oneCount(seen) === 1);
    return seen.then((counted) => this.#tokensOf(client, req, deadline, oneCount(counted) === 1));
  }

  #tokensOf(client: Client, req: Request, deadline: Deadline | undefined, isNew: boolean): boolean | Promise<boolean> {
    const tokens = this.#tokens as Counter;
    if (isNew) {
      const counted = tokens.hit(client.ip, deadline);
      if (counted instanceof Promise) return counted.then((c) => this.#tokenDecision(client, req, oneCount(c), true));
      return this.#tokenDecision(client, req, oneCount(counted), true);
    }
    // In this process's memory everything is decided in order: the cache knows every ban decided before.
    if (tokens.now) return !this.mode.shadow;
    return Promise.resolve(tokens.peek(client.ip, deadline)).then((peeked) =>
      this.#tokenDecision(client, req, oneCount(peeked), false),
    );
  }

  #tokenDecision(client: Client, req: Request, n: number, counted: boolean): boolean {
    const limit = this.options.tokensPerIp as number;
    if (n <= limit) return false;
    this.#ban(client, req, 'token-rotation', counted && n === limit + 1);
    return !this.mode.shadow;
  }

  /** After a refusal: the `after`-th within `within` bans the client and is answered as usual; a later one gets 403. */
  strike(client: Client, req: Request, deadline: Deadline | undefined): boolean | Promise<boolean> {
    const counted = this.#strikes.hit(client.key, deadline);
    const decide = (n: number) => {
      const { after } = this.options;
      if (n < after) return false;
      if (!this.mode.shadow && this.records.cache.bannedUntil(client, Date.now()) !== undefined) return true;
      this.#ban(client, req, 'limit', n === after);
      return false;
    };
    return counted instanceof Promise ? counted.then((c) => decide(oneCount(c))) : decide(oneCount(counted));
  }

  // Past the threshold without crossing it (another instance may have banned), the store keeps its ban or takes this
  // one; `onBan` is told once either way.
  #ban(client: Client, req: Request, reason: BanInfo['reason'], crossed: boolean): void {
    const address = reason === 'token-rotation';
    const key = address ? client.ip : client.key;
    const banKey = address ? addressBan(key) : key;
    const kind: ClientKind = address ? 'ip' : client.kind;
    const now = Date.now();
    const until = now + this.options.duration;
    const info = { key, kind, reason, until: new Date(until), shadow: this.mode.shadow };
    // Requests in flight together with the one that banned find the ban here and add nothing to it.
    if (!this.mode.shadow && this.records.cache.banned(banKey, now)) return;
    if (crossed) observe(this.mode.onBan, info, req, this.mode.report);
    if (this.mode.shadow) return;
    // A token's ban keeps what the pages show of it (its last characters), as its grant request shows it.
    const end = kind === 'token' ? tokenEnd(client.token ?? '') || undefined : undefined;
    const record = { key, kind, reason, since: now, until, by: 'rule' as const, tokenEnd: end };
    void this.records.ruleBans.hold(banKey, record, req).then((taken) => {
      if (taken && !crossed) observe(this.mode.onBan, info, req, this.mode.report);
    });
  }

  /** Forgets what led to the bans of `key` (its refusals, its address's token count), within an operator's bound. */
  async forget(key: string, bound: CallBound): Promise<void> {
    const forgotten: Promise<unknown>[] = [resetWithin(this.#strikes, key, bound)];
    if (this.#tokens) forgotten.push(resetWithin(this.#tokens, key, bound));
    await Promise.all(forgotten);
  }
}
