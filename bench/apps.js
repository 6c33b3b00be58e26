// The apps the benchmark compares: listing B's routes bare, behind express-rate-limit per route, and behind listingLimits.
const { existsSync } = require('node:fs');
const { join } = require('node:path');
const express = require('express');
const { rateLimit, ipKeyGenerator } = require('express-rate-limit');
const { RedisStore } = require('rate-limit-redis');
const { listingLimits, listings, MAX_SLIDING_LIMIT } = require(distOf('index'));

/**
 * An entry point of the build measured: dist/, or BENCH_DIST (another build, the reference of an A/B run of the
 * ruler), bundled (`dist/index.cjs`) or, as builds before the bundles were, per file (`dist/cjs/index.js`).
 */
function distOf(entry) {
  const dist = process.env.BENCH_DIST ?? join(__dirname, '..', 'dist');
  const bundle = join(dist, `${entry}.cjs`);
  return existsSync(bundle) ? bundle : join(dist, 'cjs', `${entry}.js`);
}

/**
 * `allowed`: limits no load reaches, so every request passes: 10,000 per second on every row (the most a sliding
 * window keeps; the load sends a few thousand a second at most); `refused`: one request per minute on every row, so
 * every answer after a client's first on an endpoint is a 429 (and with Redis, every refusal after the first in a
 * window is answered from the counter's remembered refusal).
 */
function table(kind) {
  return kind === 'allowed'
    ? listings.B.map((row) => ({ ...row, limit: MAX_SLIDING_LIMIT, windowMs: 1000 }))
    : listings.B.map((row) => ({ ...row, limit: 1, windowMs: 60_000 }));
}

function routes(app, rows, perRoute) {
  for (const row of rows) {
    const handlers = perRoute ? [perRoute(row)] : [];
    app[row.method.toLowerCase()](row.path, ...handlers, (req, res) => {
      res.json({ ok: true });
    });
  }
}

/**
 * express-rate-limit configured to the same limits, keys and headers (draft-8 and legacy), one per route; with `redis`,
 * counting in Redis through rate-limit-redis, as its users share counts between instances.
 */
function erlFor(row, redis) {
  const identifier = `${row.method} ${row.path}`;
  return rateLimit({
    windowMs: row.windowMs,
    limit: row.limit,
    standardHeaders: 'draft-8',
    legacyHeaders: true,
    identifier,
    keyGenerator: (req) => req.headers.authorization || ipKeyGenerator(req.ip ?? '', 64),
    message: { success: false, code: 429, message: 'You are sending too many requests, please slow down' },
    ...(redis && {
      store: new RedisStore({ sendCommand: sendCommandOf(redis), prefix: `bench-${process.pid}:erl:${identifier}:` }),
    }),
  });
}

/** rate-limit-redis' way into an ioredis client or Cluster, or a node-redis client. */
function sendCommandOf(redis) {
  return typeof redis.call === 'function'
    ? (command, ...args) => redis.call(command, ...args)
    : (...args) => redis.sendCommand(args);
}

/** The seven headers listing-limits writes on an allowed request, as constants: the same strings each request. */
function sevenHeaders(res) {
  res.setHeader('RateLimit-Policy', '"GET /v1/bots/:id";q=10000;w=1');
  res.setHeader('RateLimit', '"GET /v1/bots/:id";r=9999;t=1');
  res.setHeader('X-RateLimit-Limit', '10000');
  res.setHeader('X-RateLimit-Remaining', '9999');
  res.setHeader('X-RateLimit-Reset', '1795508771');
  res.setHeader('X-RateLimit-Reset-After', '1');
  res.setHeader('X-RateLimit-Bucket', 'GET /v1/bots/:id');
}

/** `String(ms / 1000)` of each ms of a second, made once: formatting costs the reference the least it can. */
const SECONDS = Array.from({ length: 1001 }, (_, ms) => String(ms / 1000));
let served = 0;

/**
 * The seven headers with values that change as the memory store's do on the allowed table: Remaining falls by one each
 * request, the reset moves each second. Without a count: what writing the same headers costs.
 */
function liveHeaders(res) {
  const now = Date.now();
  const ms = 1000 - (now % 1000);
  const remaining = 9999 - (served++ % 10000);
  res.setHeader('RateLimit-Policy', '"GET /v1/bots/:id";q=10000;w=1');
  res.setHeader('RateLimit', `"GET /v1/bots/:id";r=${remaining};t=1`);
  res.setHeader('X-RateLimit-Limit', '10000');
  res.setHeader('X-RateLimit-Remaining', String(remaining));
  res.setHeader('X-RateLimit-Reset', String((now + ms) / 1000));
  res.setHeader('X-RateLimit-Reset-After', SECONDS[ms]);
  res.setHeader('X-RateLimit-Bucket', 'GET /v1/bots/:id');
}

/**
 * The floor of any limiter that counts in Redis: one `INCR` per request with the variant's client, its answer awaited,
 * then the seven headers. No window, no key derivation, no failure handling.
 */
function floorOf(redis) {
  // node-redis bounds each command by 5 s unless told not to, with a timer a command: the floor goes without it.
  const incr =
    typeof redis.sendCommand === 'function' && 'isReady' in redis
      ? (key) => redis.sendCommand(['INCR', key], { timeout: undefined })
      : (key) => redis.incr(key);
  return (req, res, next) => {
    incr(`bench-${process.pid}:floor:${req.headers.authorization || req.ip}`).then(() => {
      sevenHeaders(res);
      next();
    }, next);
  };
}

/**
 * What a middleware cannot avoid costing, each alone before bare Express' routes: an empty middleware; one that adds a
 * property to `req`, sets the seven rate-limit headers with `res.setHeader` (constants, or `headers-live`'s values),
 * keeps `req` in a WeakSet, or reads `req.ip`. The side-by-side ruler measures them on demand
 * (`BENCH_SLICED_PAIRS=ceiling ...`).
 */
const seen = new WeakSet();
const CEILING = {
  'ceiling-empty': (req, res, next) => next(),
  'ceiling-property': (req, res, next) => {
    req.rateLimit = { endpoint: 'GET /v1/bots/:id', limit: 10000, remaining: 9999, resetTime: new Date(0) };
    next();
  },
  'ceiling-headers': (req, res, next) => {
    sevenHeaders(res);
    next();
  },
  'headers-live': (req, res, next) => {
    liveHeaders(res);
    next();
  },
  'ceiling-weakset': (req, res, next) => {
    if (!seen.has(req)) seen.add(req);
    next();
  },
  'ceiling-ip': (req, res, next) => (req.ip ? next() : next()),
};

/**
 * The app of a variant; listing-limits' middleware, when there is one, is `app.locals.limits`. `store` is its store,
 * or the Redis client of a `redis-floor` or `express-rate-limit-redis` variant.
 */
function createBenchApp(variant, kind, store, options) {
  const app = express();
  app.disable('x-powered-by');
  const rows = table(kind);
  if (variant === 'bare') routes(app, rows);
  else if (variant === 'express-rate-limit') routes(app, rows, erlFor);
  else if (variant.startsWith('express-rate-limit-redis')) routes(app, rows, (row) => erlFor(row, store));
  else if (variant.startsWith('redis-floor')) {
    app.use(floorOf(store));
    routes(app, rows);
  } else if (CEILING[variant]) {
    app.use(CEILING[variant]);
    routes(app, rows);
  } else {
    app.locals.limits = listingLimits(rows, { ...options, ...(store ? { store } : {}) });
    app.use(app.locals.limits);
    routes(app, rows);
  }
  return app;
}

module.exports = { createBenchApp, distOf, table };
