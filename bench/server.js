// One benchmark server: `node bench/server.js <variant> <allowed|refused> [redis-port]`; prints its port when ready.
// `-sliding` variants use sliding windows; `-bans-token` and `-bans-ip` have 10,000 other clients banned after the
// server's first requests (see serveSome), by token or by address.
const { once } = require('node:events');
const { createBenchApp } = require('./apps.js');

const BANS = 10_000;
const WARM_UP_REQUESTS = 200;
const [variant, kind, redisPort] = process.argv.slice(2);
let store;
let redis;
let connecting = Promise.resolve();
let quit = () => {};
if (variant.startsWith('listing-limits-redis')) {
  const { redisStore } = require('../dist/cjs/index.js');
  if (variant === 'listing-limits-redis-node-redis') {
    const { createClient } = require('redis');
    redis = createClient({ url: `redis://127.0.0.1:${redisPort}` });
    redis.on('error', () => {});
    connecting = redis.connect();
    quit = () => redis.quit().catch(() => {});
  } else {
    // A default ioredis client, as users get it.
    const Redis = require('ioredis');
    redis = new Redis({ port: Number(redisPort), host: '127.0.0.1' });
    connecting = new Promise((resolve) => redis.once('ready', resolve));
    quit = () => redis.disconnect();
  }
  // The prefix names the server's process, so that what Redis runs can be told apart per server.
  store = redisStore(redis, { prefix: `bench-${process.pid}` });
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
