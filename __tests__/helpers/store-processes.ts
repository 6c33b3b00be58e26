// App instances in processes of their own (store-instance.js and its kin), through any Redis client kind, and what
// they answer.
import type Redis from 'ioredis';
import { launch, type Launched } from './launch';

/** A client kind of redis-clients.js. */
export type ClientKind =
  | 'ioredis'
  | 'iovalkey'
  | 'node-redis'
  | 'glide'
  | 'ioredis-cluster'
  | 'node-redis-cluster'
  | 'glide-cluster'
  | 'ioredis-sentinel';

export interface InstanceOptions {
  readonly rows: readonly { method: string; path: string; limit: number; windowMs: number }[];
  readonly timeoutMs: number;
  readonly onFailure: 'memory' | 'open' | 'closed';
}

export interface Instance extends Launched {
  readonly url: string;
  /** How many times its client said it is (again) connected. */
  readies(): number;
  /** The codes of the errors its onError was told, in order. */
  readonly errors: string[];
}

/**
 * Starts an instance (`store-instance.js`, or another script that takes the same arguments and prints the lines of
 * instance-parts.js, with its own `options`); resolves once it listens and its client has said it is connected.
 */
export async function startInstance(
  lib: string,
  kind: ClientKind,
  target: string,
  prefix: string,
  options: object,
  script = 'store-instance.js',
): Promise<Instance> {
  let readies = 0;
  let port: number | undefined;
  const errors: string[] = [];
  type Line = { port?: number; redis?: string; error?: { code: string } };
  const args = [lib, kind, target, prefix, JSON.stringify(options)];
  const launched = await launch(script, args, (message: Line) => {
    if (message.error) errors.push(message.error.code);
    if (message.redis === 'ready') readies++;
    port ??= message.port;
    return readies > 0 ? port : undefined;
  });
  return { ...launched, url: `http://127.0.0.1:${launched.started}`, readies: () => readies, errors };
}

/** Ends instances, once they have exited. */
export async function stopInstances(instances: readonly Launched[]): Promise<void> {
  await Promise.all(instances.map((i) => i.stop()));
}

/** How one call settled in the instance: its result, or its error's code and message; and how long it took there. */
export interface Settled {
  readonly method: string;
  readonly ok: boolean;
  readonly result?: unknown;
  readonly code?: string;
  readonly message?: string;
  readonly ms: number;
}

/** Calls `limits[method](...args)` (`requests.approve` and so on) in an instance; how it settled. */
export async function settle(instance: Instance, method: string, ...args: unknown[]): Promise<Settled> {
  const res = await fetch(`${instance.url}/control/${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(args),
    signal: AbortSignal.timeout(20_000),
  });
  const answer = (await res.json()) as { result?: unknown; error?: { code?: string; message: string }; ms: number };
  if (answer.error) return { method, ok: false, code: answer.error.code, message: answer.error.message, ms: answer.ms };
  return { method, ok: true, result: answer.result, ms: answer.ms };
}

/** Like {@link settle}, for a call that must succeed: its result. */
export async function call(instance: Instance, method: string, ...args: unknown[]): Promise<unknown> {
  const settled = await settle(instance, method, ...args);
  if (!settled.ok) throw new Error(`${method}: ${settled.code} ${settled.message}`);
  return settled.result;
}

/**
 * The counter `token` counts on now with the fixed windows' middleware, as `usage()` reads it: its grant's variant
 * once the instance knows the grant, none for an unlimited one. It counts no request, so a poll uses up nothing.
 */
export async function counterOf(instance: Instance, token: string): Promise<string | undefined> {
  return ((await call(instance, 'usage', { token })) as { counter?: string }[])[0]?.counter;
}

/**
 * A GET of `token` to `path`: its status and the limit its headers show (none for an unlimited or banned client).
 * Answered within `deadlineMs` (a bound for a hang, not a speed the machine must keep up), or the test fails.
 */
export async function get(
  instance: Instance,
  path: string,
  token: string,
  deadlineMs = 20_000,
): Promise<{ status: number; limit: string | null }> {
  const res = await fetch(`${instance.url}${path}`, {
    headers: { authorization: token },
    signal: AbortSignal.timeout(deadlineMs),
  });
  await res.arrayBuffer();
  return { status: res.status, limit: res.headers.get('x-ratelimit-limit') };
}

/** The status of {@link get}. */
export const send = async (instance: Instance, path: string, token: string, deadlineMs?: number): Promise<number> =>
  (await get(instance, path, token, deadlineMs)).status;

/** `count` requests of `token` to `path` sent at once, alternating between `instances`: their statuses, tallied. */
export async function burst(
  instances: readonly Instance[],
  count: number,
  path: string,
  token: string,
  deadlineMs?: number,
): Promise<Record<number, number>> {
  const statuses = await Promise.all(
    Array.from({ length: count }, (_, i) => send(instances[i % instances.length] as Instance, path, token, deadlineMs)),
  );
  return statuses.reduce<Record<number, number>>((t, s) => ({ ...t, [s]: (t[s] ?? 0) + 1 }), {});
}

/**
 * Waits until `condition()` holds, asking every 20 ms: it must hold within `ms` of `from` (performance.now()), the
 * bound the README promises. Gives up after 20 s, a bound for a hang; resolves how long it took.
 */
export async function within(
  from: number,
  ms: number,
  what: string,
  condition: () => Promise<boolean>,
): Promise<number> {
  while (!(await condition())) {
    if (performance.now() - from > 20_000) throw new Error(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const took = performance.now() - from;
  if (took > ms) throw new Error(`${what}: took ${Math.round(took)} ms, more than ${ms}`);
  return took;
}

/** Calls of the commands `names` matches that a Redis server has run without an error, from INFO commandstats. */
async function runsOf(redis: Redis, names: RegExp): Promise<number> {
  const info = String(await redis.info('commandstats'));
  let runs = 0;
  for (const [, name, calls, failed] of info.matchAll(/^cmdstat_(\w+):calls=(\d+),.*failed_calls=(\d+)/gm)) {
    if (names.test(name as string)) runs += Number(calls) - Number(failed);
  }
  return runs;
}

/** Scripts a Redis server has run to the end, without an error (EVAL and EVALSHA; a NOSCRIPT is no run). */
export const scriptsRun = (redis: Redis): Promise<number> => runsOf(redis, /^eval(sha)?$/);

/**
 * Requests a Redis server has counted on fixed windows of one limit: its `INCR` commands (a hit is `INCR` and `PTTL`,
 * and the first of a window a script that gives the key its expiry, which counts nothing).
 */
export const hitsRun = (redis: Redis): Promise<number> => runsOf(redis, /^incr$/);
