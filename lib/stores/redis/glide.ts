// The Redis store through Valkey GLIDE (`GlideClient`, `GlideClusterClient`): commands and scripts, never importing it.
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { RateLimiterValkeyGlide } from 'rate-limiter-flexible';
import { evalOf, SCRIPTS, type Script, type Send } from './scripts.js';

/** What the store uses of a GLIDE client: `customCommand`, which routes a keyed command to its slot's node. */
interface GlideLike {
  customCommand(args: string[], options: { decoder: number }): Promise<unknown>;
}

/** GLIDE's `Decoder.Bytes`: its `Decoder.String` fails a whole reply over one byte that is not UTF-8. */
const BYTES = 0;

/** A reply with text as strings, and a map (GLIDE's `{ key, value }` entries) a flat list, as the others give it. */
function plain(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return value.toString();
  if (!Array.isArray(value)) return value;
  return value.flatMap((v: unknown) =>
    typeof v === 'object' && v !== null && 'key' in v && 'value' in v ? [plain(v.key), plain(v.value)] : [plain(v)],
  );
}

export function sendOf(client: unknown): Send {
  const glide = client as GlideLike;
  return (args) => glide.customCommand(args, { decoder: BYTES }).then(plain);
}

/** What the store uses of GLIDE's `Batch` and `ClusterBatch` (non-atomic: a pipeline) and of the clients' `exec`. */
interface GlideBatch {
  customCommand(args: string[]): unknown;
}
type BatchClass = new (atomic: boolean) => GlideBatch;
interface GlideBatching {
  exec(batch: GlideBatch, raiseOnError: boolean, options: { decoder: number }): Promise<unknown[] | null>;
}

/**
 * GLIDE's batch class, from the copy of the package (CommonJS only, so in Node's cache) that made `client`;
 * undefined in a bundled app, where each command is sent alone.
 */
function batchClassOf(client: object): BatchClass | undefined {
  const loaded = createRequire(join(process.cwd(), 'noop.js')).cache;
  for (const module of Object.values(loaded)) {
    const glide = module?.exports as Record<string, unknown> | undefined;
    if (typeof glide?.Batch !== 'function' || typeof glide.ClusterBatch !== 'function') continue;
    const made = (name: string) =>
      typeof glide[name] === 'function' && client instanceof (glide[name] as new (...args: never[]) => unknown);
    if (made('GlideClusterClient')) return glide.ClusterBatch as BatchClass;
    if (made('GlideClient')) return glide.Batch as BatchClass;
  }
  return undefined;
}

/**
 * The store's commands through `client`, those of one turn sent as one non-atomic batch: a command alone costs GLIDE
 * more than all of Express does for a request. Each fails or succeeds alone.
 */
export function batchedSendOf(client: object): Send {
  const glide = client as GlideLike & GlideBatching;
  const Batch = batchClassOf(glide);
  if (!Batch) return sendOf(client);
  let waiting: { args: string[]; resolve(value: unknown): void; reject(error: unknown): void }[] = [];
  const flush = () => {
    const commands = waiting;
    waiting = [];
    Promise.resolve()
      .then(() => {
        const batch = new Batch(false);
        for (const { args } of commands) batch.customCommand(args);
        return glide.exec(batch, false, { decoder: BYTES });
      })
      .then(
        (answers) => {
          commands.forEach(({ resolve, reject }, i) => {
            const answer = answers?.[i];
            if (answer instanceof Error) reject(answer);
            else resolve(plain(answer));
          });
        },
        (error: unknown) => commands.forEach(({ reject }) => reject(error)),
      );
  };
  return (args) =>
    new Promise((resolve, reject) => {
      if (waiting.length === 0) setImmediate(flush);
      waiting.push({ args, resolve, reject });
    });
}

/** A script's count and the ms its key has left, as rate-limiter-flexible's storage steps answer them. */
function countAndTtl(answer: unknown): [number, number] {
  const [count, ttl] = answer as unknown[];
  return [Number(count), Number(ttl)];
}

/**
 * rate-limiter-flexible's GLIDE limiter on the store's own keys, values and hits (its own storage uses Valkey
 * functions, which Redis does not run).
 */
export class GlideLimiter extends RateLimiterValkeyGlide {
  readonly #send: Send;
  readonly #read: Script;
  readonly #consume: Script;

  constructor(options: { keyPrefix: string; points: number; duration: number }, client: unknown, send: Send) {
    super({ storeClient: client, ...options });
    this.#send = send;
    this.#read = evalOf(send, SCRIPTS.read);
    this.#consume = evalOf(send, SCRIPTS.consume);
  }

  /** rate-limiter-flexible's storage step: a write of `points` (`set`, `block`) or `points` more (`consume`). */
  _upsert(rlKey: string, points: number, msDuration: number, forceExpire = false): Promise<[number, number]> {
    const seconds = Math.floor(msDuration / 1000);
    if (forceExpire) {
      const expiry = seconds > 0 ? ['EX', String(seconds)] : [];
      return this.#send(['SET', rlKey, String(points), ...expiry], rlKey).then(() => [
        points,
        seconds > 0 ? seconds * 1000 : -1,
      ]);
    }
    return this.#consume([rlKey], [String(points), String(seconds)]).then(countAndTtl);
  }

  _get(rlKey: string): Promise<[number, number] | null> {
    return this.#read([rlKey], []).then((answer) => (Array.isArray(answer) ? countAndTtl(answer) : null));
  }

  _delete(rlKey: string): Promise<boolean> {
    return this.#send(['DEL', rlKey], rlKey).then((removed) => Number(removed) > 0);
  }
}
