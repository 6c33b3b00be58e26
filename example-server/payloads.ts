// The JSON body of every endpoint, built from the data: one function per payload shape, counts taken from the data itself.
import type { ListingName } from '../lib/index.js';
import type { Bot, ExampleData, Server, User } from './data.js';

/** Items per page of every list. */
const PAGE_SIZE = 25;

/** A page of a list: `?page=` is 1-based; a page past the last has no results. */
interface Page<T> {
  readonly results: readonly T[];
  readonly page: number;
  /** At least 1, also for an empty list. */
  readonly pages: number;
  readonly per_page: number;
  readonly total: number;
}

export function paginate<T, R>(items: readonly T[], page: number, view: (item: T) => R): Page<R> {
  const start = (page - 1) * PAGE_SIZE;
  return {
    results: items.slice(start, start + PAGE_SIZE).map(view),
    page,
    pages: Math.max(1, Math.ceil(items.length / PAGE_SIZE)),
    per_page: PAGE_SIZE,
    total: items.length,
  };
}

export function serverPayload({ upvotes, ...server }: Server) {
  return { ...server, upvotes: upvotes.length };
}

export function botPayload({ upvotes, uptime: _uptime, stats, ...bot }: Bot) {
  return { ...bot, ...stats, upvotes: upvotes.length };
}

/** The share of status checks that found the bot online, in percent with two decimals. */
export function uptimePayload(bot: Bot) {
  const { checks, online } = bot.uptime;
  return { bot_id: bot.id, checks, online, uptime: Math.round((online / checks) * 10_000) / 100 };
}

/** The entries of the listing that a user owns, in id order. */
export function ownedBy<T extends Server | Bot>(entries: ReadonlyMap<string, T>, user: User): T[] {
  return [...entries.values()].filter((entry) => entry.owner_id === user.id);
}

/** A user, with how many entries of this listing they own. */
export function userPayload(user: User, listing: ListingName, data: ExampleData) {
  return listing === 'A'
    ? { ...user, servers: ownedBy(data.servers, user).length }
    : { ...user, bots: ownedBy(data.bots, user).length };
}

const sum = (values: Iterable<number>) => {
  let total = 0;
  for (const value of values) total += value;
  return total;
};

/** Totals of the listing, counted from its data at the time of the request. */
export function statisticsPayload(listing: ListingName, data: ExampleData) {
  if (listing === 'A') {
    const servers = [...data.servers.values()];
    return {
      servers: servers.length,
      users: data.users.size,
      upvotes: sum(servers.map((s) => s.upvotes.length)),
      members: sum(servers.map((s) => s.member_count)),
    };
  }
  const bots = [...data.bots.values()];
  return {
    bots: bots.length,
    users: data.users.size,
    upvotes: sum(bots.map((b) => b.upvotes.length)),
    servers: sum(bots.map((b) => b.stats.server_count)),
    shards: sum(bots.map((b) => b.stats.shard_count)),
  };
}
