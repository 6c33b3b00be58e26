// The operator's page at scale: its size and the server's time per load with 10,000 pending requests (and with 10,000
// bans in force), with the memory store and with Redis. Over HTTP on a loopback port, timed inside the server, from
// the request's arrival to the end of its answer. `npm run bench` runs it; `npm run build && node bench/pages.js` alone.
const { monitorEventLoopDelay } = require('node:perf_hooks');
const express = require('express');
const Redis = require('ioredis');
const { listingLimits, listings, memoryStore, redisStore } = require('../dist/index.cjs');
const { limitsAdmin } = require('../dist/pages.cjs');
const { startRedis } = require('./http.js');
const { pagesLines } = require('./reports.js');

const REQUESTS = 10_000;
const BANS = 10_000;
const LOADS = 50;

/** A pending request with every text as long as it may be, of the character that escapes longest. */
const longest = (i) => ({
  token: `Bot bench-${i}-${'&'.repeat(40)}`,
  ask: { multiplier: 10 },
  proof: { kind: 'server', members: 1e12, link: `https://example.com/${'&'.repeat(480)}` },
  contact: `${'&'.repeat(180)}@example.com`,
  reason: '&'.repeat(2000),
  ip: `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::1`,
});

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/** LOADS loads of the page: its size, and the server's time per load (median, 95th percentile, longest), in ms. */
async function loads(limits) {
  const times = [];
  const app = express();
  app.use((req, res, next) => {
    const start = process.hrtime.bigint();
    res.on('finish', () => times.push(Number(process.hrtime.bigint() - start) / 1e6));
    next();
  });
  app.use('/admin', limitsAdmin(limits, { authorize: () => true }));
  const server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const url = `http://127.0.0.1:${server.address().port}/admin/`;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  let bytes = 0;
  try {
    // One load first, so that the measured ones find the code compiled.
    await (await fetch(url)).text();
    times.length = 0;
    delay.enable();
    for (let i = 0; i < LOADS; i++) {
      const res = await fetch(url);
      if (res.status !== 200) throw new Error(`the page answered ${res.status}`);
      bytes = Buffer.byteLength(await res.text());
    }
    delay.disable();
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  times.sort((a, b) => a - b);
  return {
    bytes,
    medianMs: quantile(times, 0.5),
    p95Ms: quantile(times, 0.95),
    longestMs: times[times.length - 1],
    longestBlockMs: delay.max / 1e6,
  };
}

/** The page of an empty store, then with REQUESTS pending requests, then with BANS bans in force besides. */
async function scale(store) {
  const limits = listingLimits(listings.B, { store });
  try {
    const empty = await loads(limits);
    let start = performance.now();
    for (let i = 0; i < REQUESTS; i++) await limits.requests.file(longest(i));
    const filingMs = (performance.now() - start) / REQUESTS;
    const requests = await loads(limits);
    // Filing into the full store: each new request makes room for itself.
    start = performance.now();
    for (let i = REQUESTS; i < REQUESTS + 1000; i++) await limits.requests.file(longest(i));
    const fullFilingMs = (performance.now() - start) / 1000;
    for (let i = 0; i < BANS; i++) {
      await limits.ban({ ip: `2001:db8:b:${i.toString(16)}::1` }, { duration: 3_600_000, reason: '&'.repeat(500) });
    }
    const bans = await loads(limits);
    return { empty, requests, bans, filingMs, fullFilingMs };
  } finally {
    limits.close();
  }
}

async function runPages() {
  const results = { requests: REQUESTS, bans: BANS, loads: LOADS, memory: await scale(memoryStore()) };
  const redis = await startRedis();
  if (redis) {
    const client = new Redis({ port: redis.port });
    try {
      await client.ping();
      results.redis = await scale(redisStore(client, { prefix: 'bench-pages', timeoutMs: 5000 }));
    } finally {
      client.disconnect();
      redis.stop();
    }
  }
  return results;
}

module.exports = { runPages };

if (require.main === module) {
  runPages().then(
    (results) => console.log(pagesLines(results).join('\n')),
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
