// Start-up settings of the example server, read from the environment; a bad value is a one-line error naming its variable.
import Redis from 'ioredis';
import {
  listingChoices,
  listingHint,
  type ListingName,
  listingNames,
  listingOf,
  memoryStore,
  redisStore,
  type Store,
  type WindowKind,
} from '../lib/index.js';

/** A setting that cannot work: the process prints the message alone and exits with code 1. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/** One listing to serve, and the variable its port came from (named in errors such as a port in use). */
export interface Listener {
  readonly listing: ListingName;
  readonly port: number;
  readonly portVariable: string;
}

interface Startup {
  readonly listeners: readonly Listener[];
  readonly host: string;
  /** Whether to write the access log. */
  readonly log: boolean;
  /** How every listing counts its windows. */
  readonly window: WindowKind;
  /** The admin token of the operator's page (ADMIN_TOKEN); without it the page is off. */
  readonly adminToken: string | undefined;
}

/** Where the counters of each listing live, and how to let go of them at shutdown. */
export interface StoreChoice {
  /** Said at start-up, e.g. `memory store`. */
  readonly description: string;
  /** A store of its own for each listing. */
  forListing(listing: ListingName): Store;
  /** Resolves once the store can count (Redis connected); rejects with a StartupError when it cannot. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** The default port of each listing: 3001 for the first, then one more for each (A 3001, B 3002). */
export const DEFAULT_PORTS: Readonly<Record<ListingName, number>> = Object.freeze(
  Object.fromEntries(listingNames.map((name, i) => [name, 3001 + i])) as Record<ListingName, number>,
);
/** The variable of each listing's port when every listing starts: PORT_A, PORT_B. */
const PORT_VARIABLES = listingNames.map((name) => `PORT_${name}`);
const either = (words: readonly string[]) => new Intl.ListFormat('en', { type: 'disjunction' }).format(words);
const all = (words: readonly string[]) => new Intl.ListFormat('en', { type: 'conjunction' }).format(words);
export const DEFAULT_HOST = '127.0.0.1';
/** How long start-up waits for Redis to answer. */
const REDIS_CONNECT_MS = 3000;

type Env = Readonly<Record<string, string | undefined>>;

/** An empty variable counts as unset, as `VAR= npm start` usually means. */
function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === '' ? undefined : value;
}

function port(env: Env, name: string, fallback: number): number {
  const value = read(env, name);
  if (value === undefined) return fallback;
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) {
    throw new StartupError(
      `${name} must be a port number from 0 to 65535 (0 picks a free port); got ${JSON.stringify(value)}.`,
    );
  }
  return Number(value);
}

/**
 * LISTING (a listing's name, e.g. `B` or `bots`; unset: every listing), PORT (with LISTING; default the listing's
 * {@link DEFAULT_PORTS}), PORT_<listing> (without LISTING, e.g. PORT_A), HOST (default 127.0.0.1), LOG
 * (`1` or `0`, default `1`), WINDOW (`fixed` or `sliding`, default `fixed`) and ADMIN_TOKEN (the operator's page's
 * token, 16 characters or more; unset: no page).
 */
export function startupFromEnv(env: Env): Startup {
  const given = read(env, 'LISTING');
  const listing = listingOf(given);
  if (given !== undefined && !listing) {
    throw new StartupError(
      `LISTING must be ${listingChoices(false)} (unset starts every listing); got ${JSON.stringify(given)}.` +
        listingHint(given),
    );
  }
  const log = read(env, 'LOG') ?? '1';
  if (log !== '0' && log !== '1') {
    throw new StartupError(`LOG must be 1 (access log on) or 0 (off); got ${JSON.stringify(log)}.`);
  }
  const host = read(env, 'HOST') ?? DEFAULT_HOST;
  const window = read(env, 'WINDOW') ?? 'fixed';
  if (window !== 'fixed' && window !== 'sliding') {
    throw new StartupError(`WINDOW must be fixed or sliding; got ${JSON.stringify(window)}.`);
  }
  const adminToken = read(env, 'ADMIN_TOKEN');
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new StartupError(`ADMIN_TOKEN must be at least 16 characters long; it has ${adminToken.length}.`);
  }

  let listeners: Listener[];
  if (listing) {
    for (const name of PORT_VARIABLES) {
      if (read(env, name) !== undefined) {
        throw new StartupError(`${name} is read only when every listing starts; with LISTING=${listing}, set PORT.`);
      }
    }
    listeners = [{ listing, port: port(env, 'PORT', DEFAULT_PORTS[listing]), portVariable: 'PORT' }];
  } else {
    if (read(env, 'PORT') !== undefined) {
      const withListing = either(listingNames.map((name) => `LISTING=${name}`));
      throw new StartupError(
        `PORT is read only with ${withListing}; to start every listing, set ${all(PORT_VARIABLES)}.`,
      );
    }
    listeners = listingNames.map((name) => ({
      listing: name,
      port: port(env, `PORT_${name}`, DEFAULT_PORTS[name]),
      portVariable: `PORT_${name}`,
    }));
    for (const [i, a] of listeners.entries()) {
      const b = listeners.slice(i + 1).find((other) => a.port !== 0 && other.port === a.port);
      if (b) throw new StartupError(`${a.portVariable} and ${b.portVariable} must differ; both are ${a.port}.`);
    }
  }
  return { listeners, host, log: log === '1', window, adminToken };
}

/**
 * The store the environment asks for: with REDIS_URL, Redis (one connection, a key prefix per listing, since both
 * listings have endpoints of the same name); without it, the memory store.
 */
export function storeFromEnv(env: Env, warn: (line: string) => void = console.error): StoreChoice {
  const url = read(env, 'REDIS_URL');
  if (url === undefined) {
    return {
      description: 'memory store',
      forListing: () => memoryStore(),
      ready: async () => {},
      close: async () => {},
    };
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || !parsed.hostname) {
    throw new StartupError(
      `REDIS_URL must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379; got ${JSON.stringify(url)}.`,
    );
  }
  const { host } = parsed;
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  // Until the first connection, errors are start-up's to report; after it, said once per outage (ioredis
  // reports every failed reconnection).
  let connected = false;
  let down = false;
  let lastError = 'no answer';
  client.on('error', (error: Error) => {
    lastError = error.message;
    if (connected && !down)
      warn(`example-server: Redis at ${host} is unavailable (${error.message}); counting in memory until it is back.`);
    down = connected;
  });
  client.on('ready', () => {
    if (down) warn(`example-server: Redis at ${host} is back.`);
    connected = true;
    down = false;
  });
  return {
    description: `Redis store at ${host}`,
    forListing: (listing) => redisStore(client, { prefix: `listing-limits-example:${listing}` }),
    // Requests that came before the connection would be counted in memory, not in the shared Redis.
    ready: () =>
      new Promise<void>((resolve, reject) => {
        if (client.status === 'ready') return resolve();
        const timer = setTimeout(() => {
          client.disconnect();
          reject(
            new StartupError(
              `REDIS_URL: no Redis answered at ${host} within ${REDIS_CONNECT_MS / 1000} seconds (${lastError}).`,
            ),
          );
        }, REDIS_CONNECT_MS);
        client.once('ready', () => {
          clearTimeout(timer);
          resolve();
        });
      }),
    close: async () => {
      await client.quit().catch(() => client.disconnect());
    },
  };
}
