// In-process micro-benchmark: the middleware's own cost per request, with mocked request and response objects.
const { ServerResponse } = require('node:http');
const { Bench } = require('tinybench');
const { listingLimits, listings, MAX_SLIDING_LIMIT } = require('../dist/index.cjs');

const roomy = (rows) => rows.map((row) => ({ ...row, limit: 1_000_000_000 }));
const bigTable = Array.from({ length: 1000 }, (_, i) => ({
  method: 'GET',
  path: `/v1/resource${i}/:id`,
  limit: 1_000_000_000,
  windowMs: 60_000,
}));

const app = { get: () => false };
// A real ServerResponse with no socket: setHeader() costs what it costs in a server, nothing is sent.
const response = () => new ServerResponse({ method: 'GET', httpVersionMajor: 1, httpVersionMinor: 1, headers: {} });

/** Runs one request through a middleware and resolves when it calls next(). */
function through(middleware, method, path, authorization) {
  const req = { method, path, headers: authorization ? { authorization } : {}, ip: '203.0.113.9', app };
  return new Promise((resolve) => middleware(req, response(), resolve));
}

async function runMicro({ time = 1500 } = {}) {
  const listingB = listingLimits(roomy(listings.B));
  const listingBNoHeaders = listingLimits(roomy(listings.B), { headers: false });
  // The seven headers every counted response must carry, set as the middleware sets them: what they cost alone.
  const headersAlone = (_req, res, next) => {
    res.setHeader('RateLimit-Policy', '"GET /v1/bots/:id";q=1000000000;w=1');
    res.setHeader('RateLimit', `"GET /v1/bots/:id";r=${999999999};t=${1}`);
    res.setHeader('X-RateLimit-Limit', '1000000000');
    res.setHeader('X-RateLimit-Remaining', String(999999999));
    res.setHeader('X-RateLimit-Reset', String(Math.ceil((Date.now() + 1000) / 1000)));
    res.setHeader('X-RateLimit-Reset-After', String(1000 / 1000));
    res.setHeader('X-RateLimit-Bucket', 'GET /v1/bots/:id');
    next();
  };
  const big = listingLimits(bigTable);
  // Fixed and sliding windows side by side on one table that a sliding window can keep (10,000 a second), spread
  // over 100 tokens so that no key reaches it.
  const keepable = listings.B.map((row) => ({ ...row, limit: MAX_SLIDING_LIMIT, windowMs: 1000 }));
  const fixedWindows = listingLimits(keepable);
  const slidingWindows = listingLimits(keepable, { window: 'sliding' });
  const tokens = Array.from({ length: 100 }, (_, i) => `Bot micro-${i}`);
  let turn = 0;
  const nextToken = () => tokens[turn++ % tokens.length];
  const noop = (_req, _res, next) => next();
  const bench = new Bench({ time, warmupTime: 300 });
  bench
    .add('no-op middleware (overhead of the harness)', () => through(noop, 'GET', '/v1/bots/123', 'Bot x'))
    .add('listing B, token', () => through(listingB, 'GET', '/v1/bots/123', 'Bot micro-token'))
    .add('listing B, IP', () => through(listingB, 'GET', '/v1/bots/123'))
    .add('listing B, token, headers: false', () => through(listingBNoHeaders, 'GET', '/v1/bots/123', 'Bot micro-token'))
    .add('the seven rate-limit headers alone (res.setHeader)', () => through(headersAlone, 'GET', '/v1/bots/123'))
    .add('listing B, unmatched path', () => through(listingB, 'GET', '/v2/other', 'Bot micro-token'))
    .add('1,000-row table, last row, token', () => through(big, 'GET', '/v1/resource999/5', 'Bot micro-token'))
    .add('listing B at 10,000/s, 100 tokens, fixed', () => through(fixedWindows, 'GET', '/v1/bots/123', nextToken()))
    .add('listing B at 10,000/s, 100 tokens, sliding', () =>
      through(slidingWindows, 'GET', '/v1/bots/123', nextToken()),
    );
  await bench.run();
  const mean = (name) => bench.tasks.find((t) => t.name === name).result.latency.mean * 1000; // µs
  const overhead = mean('no-op middleware (overhead of the harness)');
  const rows = bench.tasks.map((t) => ({
    task: t.name,
    meanUs: t.result.latency.mean * 1000,
    ownCostUs: t.result.latency.mean * 1000 - overhead,
    samples: t.result.latency.samples?.length ?? t.result.samples?.length,
  }));
  const bigCost = mean('1,000-row table, last row, token') - overhead;
  const bCost = mean('listing B, token') - overhead;
  const fixedCost = mean('listing B at 10,000/s, 100 tokens, fixed') - overhead;
  const slidingCost = mean('listing B at 10,000/s, 100 tokens, sliding') - overhead;
  return { rows, bigTableRatio: bigCost / bCost, slidingCostRatio: slidingCost / fixedCost };
}

module.exports = { runMicro };
