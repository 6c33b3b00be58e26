// Memory: bytes per tracked counter in the memory store (and in rate-limiter-flexible's RateLimiterMemory, for
// comparison), and the heap after a flood of distinct tokens. Run with --expose-gc.
const { RateLimiterMemory } = require('rate-limiter-flexible');
const { listingLimits, listings, memoryStore } = require('../dist/index.cjs');

const gc = () => {
  global.gc();
  global.gc();
};
const heap = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

const row = { ...listings.B[1], name: 'GET /v1/bots' };

/** Heap per key after `n` distinct keys have each been counted once by the limiter. */
async function bytesPerCounter(n, limiter) {
  const before = heap();
  for (let i = 0; i < n; i++) await limiter.consume(`t:${String(i).padStart(43, '0')}`);
  const bytes = (heap() - before) / n;
  // Uses the limiter after the measure, so that its counters cannot be collected before it.
  await limiter.get('t:0');
  return bytes;
}

/**
 * Heap per refusal a counter of an asynchronous store remembers (the Redis store's local refusals): `n` distinct
 * keys (at most the counter's bound) each refused once, through a counter on rate-limiter-flexible's memory limiter.
 * The counter is not exported: it comes from lib/ as `npm run build:example` compiles it, file by file, into build/.
 */
async function bytesPerRefusal(n) {
  const { Resilient, REMEMBERED_REFUSALS } = require('../build/lib/stores/resilient.js');
  const { partsOf } = require('../build/lib/stores/rlf.js');
  const count = Math.min(n, REMEMBERED_REFUSALS);
  const spec = { name: 'GET /v1/bots', window: 'fixed', limits: [{ limit: 1, windowMs: 60_000 }] };
  const store = () => new RateLimiterMemory({ points: 1, duration: 60 });
  const counter = new Resilient(spec, partsOf(store).counter(spec), undefined, undefined);
  const keys = Array.from({ length: count }, (_, i) => `t:${String(i).padStart(43, '0')}`);
  for (const key of keys) await counter.hit(key); // counted: no refusal yet
  const before = heap();
  for (const key of keys) await counter.hit(key); // refused by the store: remembered
  const bytes = (heap() - before) / count;
  if (counter.refusals !== count) throw new Error(`expected ${count} refusals, got ${counter.refusals}`);
  return bytes;
}

/**
 * Heap per key of a sliding window that holds `requests` requests (`n` keys, each counted that many times within
 * its window): what a client costs that has spent that much of its limit.
 */
function bytesPerSlidingKey(n, requests) {
  const limits = memoryStore().limits({
    name: 'GET /v1/bots',
    window: 'sliding',
    limits: [{ limit: requests, windowMs: 60_000 }],
  });
  const before = heap();
  for (let i = 0; i < n; i++) {
    const key = `t:${String(i).padStart(43, '0')}`;
    for (let r = 0; r < requests; r++) limits.countNow(key);
  }
  const bytes = (heap() - before) / n;
  if (limits.size !== n) throw new Error(`expected ${n} keys, got ${limits.size}`);
  return bytes;
}

async function flood(n, options) {
  const middleware = listingLimits('B', options);
  const app = { get: () => false };
  const res = { statusCode: 200, setHeader() {}, end() {} };
  const before = heap();
  for (let i = 0; i < n; i++) {
    const req = {
      method: 'GET',
      path: '/v1/bots',
      headers: { authorization: `Bot flood-${i}` },
      ip: '203.0.113.9',
      app,
    };
    await new Promise((resolve) => {
      res.end = resolve;
      middleware(req, res, resolve);
    });
  }
  return { heapGrowthBytes: heap() - before, heapUsedBytes: process.memoryUsage().heapUsed };
}

async function runMemory({ n = 100_000 } = {}) {
  if (typeof global.gc !== 'function') throw new Error('bench/memory.js needs node --expose-gc');
  return {
    bytesPerCounter: await bytesPerCounter(n, memoryStore()(row)),
    bytesPerCounterRateLimiterMemory: await bytesPerCounter(
      n,
      new RateLimiterMemory({ points: row.limit, duration: row.windowMs / 1000, keyPrefix: '' }),
    ),
    bytesPerRememberedRefusal: await bytesPerRefusal(n),
    // A sliding window keeps each request's time: a key with 1, 25 and 100 requests in its window.
    bytesPerSlidingKey: Object.fromEntries(
      [1, 25, 100].map((requests) => [requests, bytesPerSlidingKey(10_000, requests)]),
    ),
    floodWithoutAuthenticate: await flood(n),
    floodWithAuthenticate: await flood(n, { authenticate: () => false }),
    n,
  };
}

module.exports = { runMemory };
