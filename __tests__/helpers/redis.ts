// Real Redis for the tests: redis-server on a free port (or REDIS_URL), stopped and paused at will, and a local cluster.
import { type ChildProcess, execFile, spawn, type SpawnOptions } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createRequire } from 'node:module';
import type * as Glide from '@valkey/valkey-glide';
import type { GlideClient, GlideClusterClient } from '@valkey/valkey-glide';
import Redis, { Cluster } from 'ioredis';
import { inCI, redisMissing, redisUrl, serverMissing } from './redis-env';

const run = promisify(execFile);

/**
 * `describe` for tests that need Redis; `describe.skip` when there is none and this is not CI (globalSetup says
 * so in one line). Under CI they always run, and fail in their set-up when Redis is missing.
 */
export const describeRedis = redisMissing && !inCI ? describe.skip : describe;

/** `describe` for tests that start and stop their own redis-server. */
export const describeRedisServer = serverMissing && !inCI ? describe.skip : describe;

/** A free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.unref();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Runs `start` again, up to five times in all, while it fails because another process took the port it picked
 * between the pick and its server's bind.
 */
export async function onFreePort<T>(start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      if (attempt === 5 || !(error instanceof Error) || !error.message.includes('Address already in use')) throw error;
    }
  }
}

/**
 * Spawns a server and resolves once what it writes holds `ready`. Rejects, with all it wrote, if it exits first (with
 * "Address already in use" in it when another process took its port, for {@link onFreePort}) or is not ready in 60 s.
 */
export async function startServer(
  command: string,
  args: readonly string[],
  ready: string,
  options: SpawnOptions = {},
): Promise<ChildProcess> {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const limit = setTimeout(() => child.kill('SIGKILL'), 60_000);
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes(ready)) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', reject);
    child.once('exit', (code, signal) =>
      reject(new Error(`${command} ${args.join(' ')} exited with ${code ?? signal}:\n${log}`)),
    );
  }).finally(() => clearTimeout(limit));
  log = '';
  child.stdout?.removeAllListeners('data').resume();
  child.stderr?.removeAllListeners('data').resume();
  return child;
}

/** One redis-server process on 127.0.0.1, in its own temp dir, without persistence. */
export class RedisServer {
  private process: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly extraArgs: readonly string[],
  ) {}

  /**
   * Starts redis-server on a free port; `extraArgs` are more `--name value` settings, or makes them for each attempt
   * (a cluster node's bus port, picked as the port is).
   */
  static async start(extraArgs: readonly string[] | (() => Promise<string[]>) = []): Promise<RedisServer> {
    if (serverMissing) throw new Error(`Cannot start Redis for the tests: ${serverMissing}.`);
    return onFreePort(async () => {
      const args = typeof extraArgs === 'function' ? await extraArgs() : extraArgs;
      const server = new RedisServer(await freePort(), mkdtempSync(join(tmpdir(), 'listing-limits-redis-')), args);
      try {
        await server.start();
        return server;
      } catch (error) {
        await server.close();
        throw error;
      }
    });
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Starts the server again (after `stop()`), on the same port and so at the same address. */
  async start(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir];
    args.push('--save', '', '--appendonly', 'no', ...this.extraArgs);
    this.process = await startServer('redis-server', args, 'Ready to accept connections');
  }

  /** Stops the server, as a crash or an outage would: connections drop, and the data is gone. */
  async stop(): Promise<void> {
    const child = this.process;
    this.process = undefined;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL'); // ends a paused server too
    await exited;
  }

  /** Freezes the server (SIGSTOP): connections stay open, but nothing is answered until `resume()`. */
  pause(): void {
    this.process?.kill('SIGSTOP');
  }

  resume(): void {
    this.process?.kill('SIGCONT');
  }

  /** Stops the server for good and removes its dir. */
  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The Redis of the tests that need any Redis: REDIS_URL when set, else a server started here. */
export async function startRedis(): Promise<{ url: string; close(): Promise<void> }> {
  if (redisUrl) return { url: redisUrl, close: async () => {} };
  if (redisMissing) throw new Error(`Cannot start Redis for the tests: ${redisMissing}.`);
  const server = await RedisServer.start();
  return { url: server.url, close: () => server.close() };
}

/** An ioredis client to `url`, connected; it reconnects every 50 ms, and its errors while Redis is down are expected. */
export async function ioredisClient(url: string): Promise<Redis> {
  const client = new Redis(url, { retryStrategy: () => 50 });
  client.on('error', () => {});
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
  return client;
}

/** GLIDE, loaded only when asked for: a run without it skips (or, under CI, fails) only the tests that use it. */
const glide = () => createRequire(__filename)('@valkey/valkey-glide') as typeof Glide;

/**
 * A Valkey GLIDE client to `url`, connected. Its requests may wait 10 s (GLIDE's default is 250 ms), so that a busy
 * machine never fails one the test counts on; the store's `timeoutMs` bounds each request's wait for it anyway.
 * GLIDE's log, which writes every error Redis answers to stdout, is off: the tests judge by what the store does.
 */
export async function glideClient(url: string): Promise<GlideClient> {
  const { GlideClient, Logger } = glide();
  Logger.setLoggerConfig('off');
  const { hostname, port } = new URL(url);
  return GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }], requestTimeout: 10_000 });
}

/** Every key under `pattern`, by SCAN (never KEYS). */
export async function scanKeys(client: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys.sort();
}

/**
 * A local Redis Cluster: cluster-enabled servers joined with `redis-cli --cluster create`, masters only by default;
 * with `replicas`, that many of each master, which the cluster promotes when its master fails (after
 * `nodeTimeoutMs`). `fullCoverage: false` sets `cluster-require-full-coverage no`: the other masters keep serving
 * their slots while one is down.
 */
export class RedisCluster {
  private constructor(readonly servers: readonly RedisServer[]) {}

  static async start(
    masters = 3,
    { replicas = 0, nodeTimeoutMs = 5000, fullCoverage = true } = {},
  ): Promise<RedisCluster> {
    const servers: RedisServer[] = [];
    try {
      for (let i = 0; i < masters * (1 + replicas); i++) {
        const settings = ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'];
        settings.push('--cluster-node-timeout', String(nodeTimeoutMs));
        if (!fullCoverage) settings.push('--cluster-require-full-coverage', 'no');
        settings.push('--cluster-port');
        servers.push(await RedisServer.start(async () => [...settings, String(await freePort())]));
      }
      const nodes = servers.map((s) => `127.0.0.1:${s.port}`);
      await run('redis-cli', [
        '--cluster',
        'create',
        ...nodes,
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ]);
      const cluster = new RedisCluster(servers);
      await cluster.waitUntilOk();
      return cluster;
    } catch (error) {
      await Promise.all(servers.map((s) => s.close()));
      throw error;
    }
  }

  /** The nodes, as ioredis `Cluster` takes them. */
  get nodes(): { host: string; port: number }[] {
    return this.servers.map((s) => ({ host: '127.0.0.1', port: s.port }));
  }

  /** Until every node says the cluster is ok, and every replica is in sync with its master. */
  private async waitUntilOk(): Promise<void> {
    const ask = (s: RedisServer, ...command: string[]) =>
      run('redis-cli', ['-p', String(s.port), ...command]).then((r) => r.stdout);
    for (let attempt = 0; attempt < 200; attempt++) {
      const infos = await Promise.all(this.servers.map((s) => ask(s, 'cluster', 'info')));
      const replication = await Promise.all(this.servers.map((s) => ask(s, 'info', 'replication')));
      const synced = replication.every(
        (info) => info.includes('role:master') || info.includes('master_link_status:up'),
      );
      if (infos.every((info) => info.includes('cluster_state:ok')) && synced) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('The Redis Cluster did not reach cluster_state:ok with its replicas in sync.');
  }

  /** A GLIDE cluster client to this cluster, connected, set up as {@link glideClient} is. */
  async glideClient(): Promise<GlideClusterClient> {
    const { GlideClusterClient, Logger } = glide();
    Logger.setLoggerConfig('off');
    return GlideClusterClient.createClient({ addresses: this.nodes, requestTimeout: 10_000 });
  }

  /** An ioredis Cluster client to this cluster, connected. */
  async client(): Promise<Cluster> {
    const client = new Cluster(this.nodes, { clusterRetryStrategy: () => 50 });
    client.on('error', () => {});
    if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve));
    return client;
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => s.close()));
  }
}

/**
 * A master, a replica and three sentinels (`redis-server <config> --sentinel`) that watch it as `primary`, with a
 * quorum of two and `down-after-milliseconds` of `downAfterMs`: killing the master makes them promote the replica.
 */
export class RedisSentinels {
  private constructor(
    readonly master: RedisServer,
    readonly replica: RedisServer,
    private readonly sentinels: readonly { port: number; process: ChildProcess; dir: string }[],
    readonly downAfterMs: number,
  ) {}

  static async start(downAfterMs = 1000): Promise<RedisSentinels> {
    const master = await RedisServer.start();
    const replica = await RedisServer.start(['--replicaof', '127.0.0.1', String(master.port)]);
    const sentinels: { port: number; process: ChildProcess; dir: string }[] = [];
    const group = new RedisSentinels(master, replica, sentinels, downAfterMs);
    try {
      for (let i = 0; i < 3; i++) sentinels.push(await group.startSentinel());
      await group.waitUntilWatched();
      return group;
    } catch (error) {
      await group.close();
      throw error;
    }
  }

  /** The sentinels' URLs, comma-separated. */
  get urls(): string {
    return this.sentinels.map((s) => `redis://127.0.0.1:${s.port}`).join(',');
  }

  private startSentinel(): Promise<{ port: number; process: ChildProcess; dir: string }> {
    return onFreePort(() => this.startSentinelOnce());
  }

  private async startSentinelOnce(): Promise<{ port: number; process: ChildProcess; dir: string }> {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'listing-limits-sentinel-'));
    // Sentinel rewrites its configuration file: one of its own, in its own dir.
    const config = join(dir, 'sentinel.conf');
    const lines = [`port ${port}`, 'bind 127.0.0.1', `dir ${dir}`];
    lines.push(`sentinel monitor primary 127.0.0.1 ${this.master.port} 2`);
    lines.push(`sentinel down-after-milliseconds primary ${this.downAfterMs}`);
    writeFileSync(config, `${lines.join('\n')}\n`);
    const child = await startServer('redis-server', [config, '--sentinel'], '+monitor master primary').catch(
      (error: unknown) => {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      },
    );
    return { port, process: child, dir };
  }

  /** Until every sentinel knows the two others and the replica, in sync: a failover can be agreed on and done. */
  private async waitUntilWatched(): Promise<void> {
    const ask = (port: number, ...command: string[]) =>
      run('redis-cli', ['-p', String(port), ...command]).then((r) => r.stdout);
    // Sentinels find each other by the hello messages they publish on the master every 2 s: a bound for a hang.
    for (let attempt = 0; attempt < 500; attempt++) {
      const known = await Promise.all(
        this.sentinels.map(async ({ port }) => {
          const others = await ask(port, 'sentinel', 'sentinels', 'primary');
          const replicas = await ask(port, 'sentinel', 'replicas', 'primary');
          return (others.match(/^name$/gm) ?? []).length === 2 && replicas.includes(String(this.replica.port));
        }),
      );
      const synced = (await ask(this.replica.port, 'info', 'replication')).includes('master_link_status:up');
      if (known.every(Boolean) && synced) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('The sentinels did not come to know each other and the replica.');
  }

  async close(): Promise<void> {
    await Promise.all(
      this.sentinels.map(async ({ process: child, dir }) => {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = new Promise((resolve) => child.once('exit', resolve));
          child.kill('SIGKILL');
          await exited;
        }
        rmSync(dir, { recursive: true, force: true });
      }),
    );
    await Promise.all([this.master.close(), this.replica.close()]);
  }
}

/** Every command a Redis server has run, by name, from INFO commandstats. */
export async function commandCalls(redis: Redis): Promise<Map<string, number>> {
  const info = String(await redis.info('commandstats'));
  return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1] as string, Number(m[2])]));
}

/** How many scripts (EVAL and EVALSHA) a Redis server has run. */
export async function scriptRuns(redis: Redis): Promise<number> {
  const calls = await commandCalls(redis);
  return (calls.get('eval') ?? 0) + (calls.get('evalsha') ?? 0);
}

/**
 * A Redis for the tests of one describe block (REDIS_URL, or a redis-server of its own) and an ioredis client to
 * it: started before the block's tests, closed after them.
 */
export function redisForBlock(): { readonly url: string; readonly client: Redis } {
  let server: Awaited<ReturnType<typeof startRedis>> | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    client = await ioredisClient(server.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.close();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the Redis of this block is not started yet');
    return value;
  };
  return {
    get url() {
      return started(server).url;
    },
    get client() {
      return started(client);
    },
  };
}
