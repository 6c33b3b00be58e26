// Whether the Redis store's client connects: told once when it has not, a few seconds after the middleware started.
import type { RedisClientKind } from './clients.js';
import { sendOf } from './glide.js';
import type { StoreFailurePolicy } from '../store.js';

/** How long a client may take to connect, from the start of the middleware, before the store tells that it has not. */
export const CONNECT_WITHIN_MS = 5000;

/** How often a client is looked at meanwhile: its state for ioredis and node-redis, a PING for GLIDE. */
const LOOK_EVERY_MS = 250;

/** Clients already told of, once each, whatever the stores and middlewares on them. */
const told = new WeakSet<object>();

const meanwhile: Readonly<Record<StoreFailurePolicy['onFailure'], string>> = {
  memory:
    "each instance counts in its own memory (onFailure: 'memory'), so that N instances let a client through up to " +
    'N times the limits',
  open: "requests pass uncounted (onFailure: 'open')",
  closed: "requests are answered 503 (onFailure: 'closed')",
};

/** Whether the client says it is connected and ready for commands; GLIDE says nothing (undefined). */
function ready(client: unknown, kind: RedisClientKind): boolean | undefined {
  if (kind === 'glide') return undefined;
  if (kind === 'ioredis') return (client as { status?: unknown }).status === 'ready';
  const c = client as { isReady?: unknown; isOpen?: unknown };
  return typeof c.isReady === 'boolean' ? c.isReady : c.isOpen === true;
}

function whatItSays(client: unknown, kind: RedisClientKind): string {
  if (kind === 'glide') return 'it has not answered a PING';
  if (kind === 'ioredis') return `its status is ${JSON.stringify((client as { status?: unknown }).status)}`;
  return (client as { isOpen?: unknown }).isOpen === true
    ? 'it is connecting'
    : 'it is not open: call `await client.connect()` before the app takes traffic';
}

/**
 * Watches a store's client from a middleware's start: unless it is connected (GLIDE: answered a PING) within
 * {@link CONNECT_WITHIN_MS}, tells `tell` once per client what requests get meanwhile. Answers its stop.
 */
export function connectionWatch(
  client: unknown,
  kind: RedisClientKind,
  prefix: string,
  onFailure: StoreFailurePolicy['onFailure'],
): (tell: (message: string) => void) => () => void {
  return (tell) => {
    if (ready(client, kind) === true) return () => {};
    let done = false;
    let poll: NodeJS.Timeout | undefined;
    const stop = () => {
      done = true;
      clearTimeout(poll);
      clearTimeout(deadline);
    };
    const deadline = setTimeout(() => {
      if (done) return;
      stop();
      if (told.has(client as object)) return;
      told.add(client as object);
      const name = kind === 'glide' ? 'Valkey GLIDE' : kind;
      tell(
        `listing-limits: the Redis store's client (${name}, prefix ${JSON.stringify(prefix)}) has not ` +
          `connected within ${CONNECT_WITHIN_MS / 1000} s of the middleware's start (${whatItSays(client, kind)}). ` +
          `Until it does, ${meanwhile[onFailure]}. Check its address, and that Redis is reachable from here.`,
      );
    }, CONNECT_WITHIN_MS).unref();
    const again = () => {
      if (done) return;
      poll = setTimeout(look, LOOK_EVERY_MS).unref();
    };
    function look(): void {
      const connected = ready(client, kind);
      if (connected === true) return stop();
      if (connected === false) return again();
      sendOf(client)(['PING']).then(() => {
        if (!done) stop();
      }, again);
    }
    look();
    return stop;
  };
}
