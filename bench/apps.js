// The apps the benchmark compares: listing B's routes bare, behind express-rate-limit per route, and behind listingLimits.
const express = require('express');
const { rateLimit, ipKeyGenerator } = require('express-rate-limit');
const { listingLimits, listings, MAX_SLIDING_LIMIT } = require('../dist/cjs/index.js');

/**
 * `allowed`: limits no load reaches, so every request passes: 10,000 per second on every row (the most a sliding
 * window keeps; each row gets about a thousand a second); `refused`: the contract's, so nearly all are 429.
 */
function table(kind) {
  return kind === 'allowed'
    ? listings.B.map((row) => ({ ...row, limit: MAX_SLIDING_LIMIT, windowMs: 1000 }))
    : listings.B;
}

function routes(app, rows, perRoute) {
  for (const row of rows) {
    const handlers = perRoute ? [perRoute(row)] : [];
    app[row.method.toLowerCase()](row.path, ...handlers, (req, res) => {
      res.json({ ok: true });
    });
  }
}

/** express-rate-limit configured to the same limits, keys and headers (draft-8 and legacy), one per route. */
function erlFor(row) {
  return rateLimit({
    windowMs: row.windowMs,
    limit: row.limit,
    standardHeaders: 'draft-8',
    legacyHeaders: true,
    identifier: `${row.method} ${row.path}`,
    keyGenerator: (req) => req.headers.authorization || ipKeyGenerator(req.ip ?? '', 64),
    message: { success: false, code: 429, message: 'You are sending too many requests, please slow down' },
  });
}

function createBenchApp(variant, kind, store, options) {
  const app = express();
  app.disable('x-powered-by');
  const rows = table(kind);
  if (variant === 'bare') routes(app, rows);
  else if (variant === 'express-rate-limit') routes(app, rows, erlFor);
  else {
    app.use(listingLimits(rows, { ...options, ...(store ? { store } : {}) }));
    routes(app, rows);
  }
  return app;
}

module.exports = { createBenchApp, table };
