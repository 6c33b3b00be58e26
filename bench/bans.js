// Bans at scale: an unrelated request's latency with 0 and 10,000 bans in force, what a batch of 250 new bans costs,
// and what a ban takes in this process's heap and in Redis. In process, with mocked requests. Run with --expose-gc;
// `npm run bench` runs it, and `npm run build && node --expose-gc bench/bans.js` runs it alone.
const { Bench } = require('tinybench');
const Redis = require('ioredis');
const { listingLimits, listings, memoryStore, redisStore } = require('../dist/index.cjs');
const { startRedis } = require('./http.js');
const { bansLines } = require('./reports.js');

const BANS = 10_000;
const BATCH = 250;
/** Listing B as the contract has it: `GET /v1/bots/:id` allows 2 a second, so the third request is refused. */
const rows = listings.B;
const ban = { after: 1, within: 60_000, duration: 3_600_000 };
const app = { get: () => false };

const gc = () => {
  global.gc();
  global.gc();
};
const heap = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

/** One request through the middleware; resolves once it is let through or answered. */
function through(middleware, path, client) {
  const headers = client.token ? { authorization: client.token } : {};
  const req = { method: 'GET', path, headers, ip: client.ip ?? '203.0.113.9', app };
  return new Promise((resolve) => {
    const res = { statusCode: 200, setHeader() {}, getHeader() {}, end: () => resolve(res.statusCode) };
    middleware(req, res, () => resolve(200));
  });
}

/** The client banned `i`-th: an address of an IPv6 /64 of its own, as an attacker with a /48 has 65,536 of. */
const banned = (i) => ({ ip: `2001:db8:${(i >> 16) & 0xffff}:${i & 0xffff}::1` });

/**
 * Bans clients `from` to `to - 1` by the rule (two requests served, the third refused), while an unrelated client
 * sends one request after another: how long the bans took and the longest an unrelated request waited, in ms.
 */
async function banByRule(middleware, from, to, settled) {
  const start = performance.now();
  let banning = true;
  let longest = 0;
  const unrelated = (async () => {
    for (let n = 0; banning; n++) {
      const sent = performance.now();
      await through(middleware, '/v1/statistics', { token: `Bot unrelated-${n % 100}` });
      longest = Math.max(longest, performance.now() - sent);
    }
  })();
  for (let i = from; i < to; i++) {
    for (let r = 0; r < 3; r++) await through(middleware, '/v1/bots/1', banned(i));
  }
  await settled();
  const ms = performance.now() - start;
  banning = false;
  await unrelated;
  return { ms, longestUnrelatedMs: longest };
}

/** Mean latency (µs) of an unrelated client's request, allowed on a roomy table. */
async function unrelated(middleware, time) {
  const bench = new Bench({ time, warmupTime: 200 });
  let n = 0;
  bench.add('unrelated', () => through(middleware, '/v1/statistics', { token: `Bot unrelated-${n++ % 100}` }));
  await bench.run();
  return bench.tasks[0].result.latency.mean * 1000;
}

/** The store's case: a middleware banning by rule, its latency and batches with 0 and BANS bans in force. */
async function scale(make, settled, time) {
  const roomy = rows.map((row) => (row.path === '/v1/statistics' ? { ...row, limit: 1_000_000_000 } : row));
  const middleware = listingLimits(roomy, { ...make(), ban });
  try {
    const idle = await unrelated(middleware, time);
    const first = await banByRule(middleware, 0, BATCH, settled);
    await banByRule(middleware, BATCH, BANS - BATCH, settled);
    const last = await banByRule(middleware, BANS - BATCH, BANS, settled);
    const bans = (await middleware.bans()).length;
    if (bans !== BANS) throw new Error(`expected ${BANS} bans in force, found ${bans}`);
    const loaded = await unrelated(middleware, time);
    return {
      unrelatedUs: { 0: idle, [BANS]: loaded },
      batchMs: { 0: first.ms, [BANS - BATCH]: last.ms },
      longestUnrelatedMs: { 0: first.longestUnrelatedMs, [BANS - BATCH]: last.longestUnrelatedMs },
    };
  } finally {
    middleware.close();
  }
}

/** Heap per ban an instance keeps: of one following a Redis store's bans (its cache alone), and of the memory store. */
async function bytesPerBan(redisPort) {
  const result = {};
  const memory = listingLimits(rows, { store: memoryStore() });
  let before = heap();
  for (let i = 0; i < BANS; i++)
    await memory.ban({ key: `t:ban-${String(i).padStart(43, '0')}` }, { duration: 3_600_000 });
  result.memoryStore = (heap() - before) / BANS;
  memory.close();
  if (redisPort === undefined) return result;
  const [writer, follower] = [new Redis({ port: redisPort }), new Redis({ port: redisPort })];
  const prefix = 'bench-bytes';
  const maker = listingLimits(rows, { store: redisStore(writer, { prefix }) });
  for (let i = 0; i < BANS; i++)
    await maker.ban({ key: `t:ban-${String(i).padStart(43, '0')}` }, { duration: 3_600_000 });
  // Two followers, the second measured once the first has settled every buffer a first read leaves behind.
  const follow = async () => {
    const reader = listingLimits(rows, { store: redisStore(follower, { prefix }) });
    if ((await reader.bans()).length !== BANS) throw new Error('the follower has not read every ban');
    return reader;
  };
  const readers = [await follow()];
  before = heap();
  readers.push(await follow());
  result.redisStoreCache = (heap() - before) / BANS;
  const usage = async (key) =>
    Number(await writer.call('MEMORY', 'USAGE', `${prefix}:{runtime}:${key}`, 'SAMPLES', '0'));
  result.redisPerRecord = ((await usage('record')) + (await usage('changes')) + (await usage('ends'))) / BANS;
  result.redisHistory = await usage('history');
  maker.close();
  for (const reader of readers) reader.close();
  writer.disconnect();
  follower.disconnect();
  return result;
}

async function runBans({ time = 1000 } = {}) {
  if (typeof global.gc !== 'function') throw new Error('bench/bans.js needs node --expose-gc');
  const redis = await startRedis();
  try {
    const results = { bans: BANS, batch: BATCH };
    results.memory = await scale(
      () => ({ store: memoryStore() }),
      async () => {},
      time,
    );
    if (redis) {
      const client = new Redis({ port: redis.port });
      await client.ping(); // connected: no request is counted in memory while the client connects
      let made = 0;
      results.redis = await scale(
        () => ({ store: redisStore(client, { prefix: `bench-bans-${++made}` }) }),
        // Every ban written: the store answers a command after every command sent before it.
        () => client.ping(),
        time,
      );
      client.disconnect();
    }
    results.bytes = await bytesPerBan(redis?.port);
    return results;
  } finally {
    redis?.stop();
  }
}

module.exports = { runBans };

if (require.main === module) {
  runBans().then(
    (results) => console.log(bansLines(results).join('\n')),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
