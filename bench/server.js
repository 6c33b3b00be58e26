// One benchmark server: `node bench/server.js <variant> <allowed|refused> [redis-port, or a Cluster's ports]`; prints
// its port when ready. `listing-limits-redis-*` variants name their client (see connect).
// `-sliding` variants use sliding windows; `-bans-token` and `-bans-ip` have 10,000 other clients banned after the
// server's first requests (see serveSome), by token or by address.
const { once } = require('node:events');
const { createBenchApp, distOf } = require('./apps.js');

const BANS = 10_000;
const WARM_UP_REQUESTS = 200;
const [variant, kind, redisTarget] = process.argv.slice(2);
let store;
let connecting = Promise.resolve();
let quit = () => {};

/**
 * The Redis client of a `listing-limits-redis` variant, connected as its package's users connect it: a default ioredis
 * `Redis` (no `-CLIENT`), `-node-redis` (`createClient`), `-glide` (Valkey GLIDE's `GlideClient`) or `-cluster` (an
 * ioredis `Cluster` of the masters whose ports `redisTarget` gives, comma-separated).
 */
async function connect(client) {
  const [port] = redisTarget.split(',').map(Number);
  if (client === 'node-redis') {
    const { createClient } = require('redis');
    const redis = createClient({ url: `redis://127.0.0.1:${port}` });
    redis.on('error', () => {});
    quit = () => redis.quit().catch(() => {});
    await redis.connect();
    return redis;
  }
  if (client === 'glide') {
    const { GlideClient, Logger } = require('@valkey/valkey-glide');
    // GLIDE logs every error Redis answers (the first NOSCRIPT) to stdout, where the server prints its port.
    Logger.setLoggerConfig('off');
    const redis = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port }] });
    quit = () => redis.close();
    return redis;
  }
  const { Cluster, default: Redis } = require('ioredis');
  const redis =
    client === 'cluster'
      ? new Cluster(redisTarget.split(',').map((p) => ({ host: '127.0.0.1', port: Number(p) })))
      : new Redis({ port, host: '127.0.0.1' });
  redis.on('error', () => {});
  quit = () => redis.disconnect();
  await new Promise((resolve) => redis.once('ready', resolve));
  return redis;
}

// The variants that count in Redis: listing-limits' store, the floor (one INCR a request), express-rate-limit's.
const counting = /^(listing-limits-redis|redis-floor|express-rate-limit-redis)(?:-(node-redis|glide|cluster))?/.exec(
  variant,
);
if (counting) {
  const [, counter, client = 'ioredis'] = counting;
  const { redisStore } = require(distOf('index'));
  // The prefix names the server's process, so that what Redis runs can be told apart per server.
  connecting = connect(client).then((redis) => {
    store = counter === 'listing-limits-redis' ? redisStore(redis, { prefix: `bench-${process.pid}` }) : redis;
  });
}
const options =
  variant === 'listing-limits-memory-no-headers'
    ? { headers: false }
    : variant.endsWith('-sliding')
      ? { window: 'sliding' }
      : undefined;

/** Bans 10,000 clients other than the load's, each for an hour: by token, or by an address of a /64 of its own. */
async function banOthers(limits, by) {
  for (let i = 0; i < BANS; i++) {
    const client = by === 'token' ? { token: `Bot banned-${i}` } : { ip: `2001:db8:${i >> 16}:${i & 0xffff}::1` };
    await limits.ban(client, { duration: 3_600_000 });
  }
  const inForce = (await limits.bans()).length;
  if (inForce !== BANS) throw new Error(`expected ${BANS} bans in force, found ${inForce}`);
}

/**
 * Requests of a client of its own, one after another, before the server says it is ready: a server has served some
 * before bans arrive, as in production (the memory store's bans are made while it runs). Bans made before its first
 * request would measure something else: with 10,000 objects made before Express first matches its routes, V8 runs
 * the routes' regular expressions several times slower (bare Express too), as docs/performance.md shows.
 */
async function serveSome(port) {
  for (let i = 0; i < WARM_UP_REQUESTS; i++) {
    const res = await fetch(`http://127.0.0.1:${port}/v1/bots/${i}`, { headers: { authorization: 'Bot warm-up' } });
    await res.arrayBuffer();
  }
}

let server;
(async () => {
  await connecting;
  const app = createBenchApp(variant.replace(/-bans-(token|ip)$/, ''), kind, store, options);
  server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  await serveSome(port);
  const bans = /-bans-(token|ip)$/.exec(variant);
  if (bans) await banOthers(app.locals.limits, bans[1]);
  process.stdout.write(`${port}\n`);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});

// With BENCH_PROFILE=<file>, SIGUSR2 starts a CPU profile (after the warm-up) and SIGTERM writes it there.
const profiling = process.env.BENCH_PROFILE ? require('./profiler.js').profiler(process.env.BENCH_PROFILE) : undefined;
if (profiling) process.on('SIGUSR2', () => profiling.start());

process.on('SIGTERM', async () => {
  await profiling?.stop();
  server?.close();
  quit();
  process.exit(0);
});
