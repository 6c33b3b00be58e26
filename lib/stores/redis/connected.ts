// Whether the Redis store's client connects: told once when it has not, a few seconds after the middleware started.
import type { RedisConnection } from './clients.js';
import type { StoreFailurePolicy } from '../store.js';
import { meanwhile } from '../failure-options.js';

/** How long a client may take to connect, from the start of the middleware, before the store tells that it has not. */
export const CONNECT_WITHIN_MS = 5000;

/** How often a client is looked at meanwhile: its state for ioredis and node-redis, a PING for GLIDE. */
const LOOK_EVERY_MS = 250;

/**
 * Watches a store's client from a middleware's start: unless it is connected (GLIDE: answered a PING) within
 * {@link CONNECT_WITHIN_MS}, tells `tell` once per client what requests get meanwhile. Answers its stop.
 */
export function connectionWatch(
  client: RedisConnection,
  prefix: string,
  onFailure: StoreFailurePolicy['onFailure'],
): (tell: (message: string) => void) => () => void {
  return (tell) => {
    if (client.ready() === true) return () => {};
    let pinging = false;
    const look = () => {
      const ready = client.ready();
      if (ready === true) return stop();
      if (ready === false || pinging) return;
      pinging = true;
      client.call(['PING'], '').then(stop, () => (pinging = false));
    };
    const poll = setInterval(look, LOOK_EVERY_MS).unref();
    const deadline = setTimeout(() => {
      stop();
      client.notConnected(
        tell,
        `listing-limits: the Redis store's client (${client.name}, prefix ${JSON.stringify(prefix)}) has not ` +
          `connected within ${CONNECT_WITHIN_MS / 1000} s of the middleware's start (${client.says()}). ` +
          `Until it does, ${meanwhile[onFailure]}. Check its address, and that Redis is reachable from here.`,
      );
    }, CONNECT_WITHIN_MS).unref();
    function stop(): void {
      clearInterval(poll);
      clearTimeout(deadline);
    }
    look();
    return stop;
  };
}
