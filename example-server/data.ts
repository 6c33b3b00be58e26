// The example server's data: users, servers, bots, their upvotes and uptime, the same from a fixed seed every time.
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

/** How many of each the data holds. */
const COUNTS = Object.freeze({ users: 60, servers: 120, bots: 150 });

/** The moment the data describes: every generated date is before it. 2026-01-01T00:00:00Z. */
const DATA_TIME = Date.UTC(2026, 0, 1);

const SEED = 20260101;
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export interface User {
  readonly id: string;
  readonly username: string;
  readonly bio: string;
  readonly created_at: string;
}

/** One upvote of a server or bot. A user may upvote the same entry again on a later day. */
export interface Upvote {
  readonly user_id: string;
  readonly username: string;
  readonly voted_at: string;
}

export interface Server {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly owner_id: string;
  readonly member_count: number;
  readonly created_at: string;
  /** Newest first. */
  readonly upvotes: readonly Upvote[];
}

/** What a bot reports with `POST /v1/bots/:id`. `shards`, when known, holds each shard's server count. */
export interface BotStats {
  readonly server_count: number;
  readonly shard_count: number;
  readonly shards: readonly number[];
  readonly stats_updated_at: string;
}

export interface Bot {
  readonly id: string;
  readonly name: string;
  readonly prefix: string;
  readonly description: string;
  readonly tags: readonly string[];
  readonly owner_id: string;
  readonly created_at: string;
  /** Replaced whole by each accepted POST. */
  stats: BotStats;
  /** Newest first. */
  readonly upvotes: readonly Upvote[];
  /** Status checks of the bot over the last 30 days, and how many found it online. */
  readonly uptime: { readonly checks: number; readonly online: number };
}

export interface ExampleData {
  /** In id order, which is the order of every list. */
  readonly users: ReadonlyMap<string, User>;
  readonly servers: ReadonlyMap<string, Server>;
  readonly bots: ReadonlyMap<string, Bot>;
}

const ADJECTIVES = ['quiet', 'lunar', 'rapid', 'misty', 'amber', 'brave', 'cosmic', 'frosty', 'golden', 'hidden'];
const ANIMALS = ['fox', 'owl', 'otter', 'lynx', 'heron', 'panda', 'raven', 'badger', 'koala', 'gecko'];
const BIOS = ['Builds things at night.', 'Moderator and tea drinker.', 'Here for the bots.', 'Game nights on Fridays.'];
const PLACES = ['Pixel', 'Midnight', 'Cozy', 'Retro', 'Neon', 'Forest', 'Harbor', 'Summit', 'Lazy', 'Arcade'];
const ROOMS = ['Lounge', 'Guild', 'Café', 'Hangout', 'Club', 'Den', 'Workshop', 'Realm', 'Corner', 'Hub'];
const TOPICS = ['gaming', 'art', 'music', 'coding', 'anime', 'study', 'memes', 'science', 'books', 'movies'];
const BOT_WORDS = ['Quiz', 'Tune', 'Mod', 'Meme', 'Level', 'Poll', 'Ticket', 'Weather', 'Dice', 'Welcome'];
const BOT_KINDS = ['Bot', 'Helper', 'Buddy', 'Master', 'Keeper', 'Tron'];
const BOT_TAGS = ['moderation', 'music', 'fun', 'utility', 'economy', 'leveling', 'games', 'logging'];
const PREFIXES = ['!', '?', '$', '.', '>', '%', '-', '~'];

/** Splits `total` servers over `shards` shards as evenly as whole numbers allow. */
function splitOverShards(total: number, shards: number): number[] {
  const base = Math.floor(total / shards);
  return Array.from({ length: shards }, (_, i) => base + (i < total % shards ? 1 : 0));
}

/** Shards a bot of that many servers runs: one per 2,500 servers started. */
export function shardsFor(serverCount: number): number {
  return Math.max(1, Math.ceil(serverCount / 2500));
}

/** Fresh data, equal on every call: each app instance gets its own copy to change. */
export function generateData(): ExampleData {
  const rng = xoroshiro128plus(SEED);
  const int = (from: number, to: number) => uniformInt(rng, from, to);
  const pick = <T>(list: readonly T[]): T => list[int(0, list.length - 1)] as T;
  const some = <T>(list: readonly T[], from: number, to: number): T[] => {
    const chosen = new Set<T>();
    const wanted = int(from, to);
    while (chosen.size < wanted) chosen.add(pick(list));
    return [...chosen];
  };
  const iso = (ms: number) => new Date(ms).toISOString();
  /** Roughly log-uniform, so that most entries are small and a few are large. */
  const skewed = (maxPowerOfTen: number) => Math.round(10 ** (int(0, maxPowerOfTen * 100) / 100));

  const users = new Map<string, User>();
  const created = new Map<string, number>();
  const taken = new Set<string>();
  for (let i = 1; i <= COUNTS.users; i++) {
    const id = String(i);
    let username = `${pick(ADJECTIVES)}_${pick(ANIMALS)}`;
    if (taken.has(username)) username += i;
    taken.add(username);
    const at = DATA_TIME - int(30, 2000) * DAY;
    created.set(id, at);
    users.set(id, { id, username, bio: pick(BIOS), created_at: iso(at) });
  }
  const userIds = [...users.keys()];

  /** An owner, and a creation date after the owner joined. */
  const owned = () => {
    const owner_id = pick(userIds);
    const joined = created.get(owner_id) ?? DATA_TIME;
    return { owner_id, created_at: iso(joined + int(1, Math.floor((DATA_TIME - joined) / DAY) - 1) * DAY) };
  };
  const upvotes = (): Upvote[] =>
    Array.from({ length: int(0, 80) }, () => {
      const user = users.get(pick(userIds)) as User;
      return { user_id: user.id, username: user.username, at: DATA_TIME - int(1, 30 * 24 * 60) * MINUTE };
    })
      .sort((a, b) => b.at - a.at)
      .map(({ at, ...vote }) => ({ ...vote, voted_at: iso(at) }));

  const servers = new Map<string, Server>();
  for (let i = 1; i <= COUNTS.servers; i++) {
    const id = String(i);
    const name = `${pick(PLACES)} ${pick(ROOMS)}`;
    const tags = some(TOPICS, 1, 3);
    servers.set(id, {
      id,
      name,
      description: `A friendly ${tags[0]} community.`,
      tags,
      ...owned(),
      member_count: skewed(5),
      upvotes: upvotes(),
    });
  }

  const bots = new Map<string, Bot>();
  for (let i = 1; i <= COUNTS.bots; i++) {
    const id = String(i);
    const tags = some(BOT_TAGS, 1, 3);
    const server_count = skewed(5);
    const shard_count = shardsFor(server_count);
    const checks = int(2000, 8640);
    bots.set(id, {
      id,
      name: `${pick(BOT_WORDS)}${pick(BOT_KINDS)}`,
      prefix: pick(PREFIXES),
      description: `A ${tags.join(', ')} bot.`,
      tags,
      ...owned(),
      stats: {
        server_count,
        shard_count,
        shards: splitOverShards(server_count, shard_count),
        stats_updated_at: iso(DATA_TIME - int(1, 24 * 60) * MINUTE),
      },
      upvotes: upvotes(),
      uptime: { checks, online: checks - int(0, Math.floor(checks / 20)) },
    });
  }

  return { users, servers, bots };
}
