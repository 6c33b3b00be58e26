// One app instance in a Node process of its own, for the runtime-state tests: bans and grants over one Redis.
// Arguments: <compiled lib dir> <client kind, as redis-clients.js names it> <target> <prefix> <options JSON:
// { rows, ban? }>. Besides the table's rows it serves GET /outside (not in the table); the middleware's methods are
// at POST /control/<method>, and its lines are those of instance-parts.js.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { control, onError, ready, serve } = require('./instance-parts');
const { connect } = require('./redis-clients');

const { rows, ban } = JSON.parse(json);

connect(kind, target, ready).then(({ client, close }) => {
  // The memory fallback, so that requests are answered while Redis is away, as the default store does.
  const store = redisStore(client, { prefix, timeoutMs: 2000, onFailure: 'memory' });
  const limits = listingLimits(rows, { store, ban, onError });
  const app = express();
  app.use(control(limits), limits);
  app.get('/outside', (_req, res) => res.json({ ok: true }));
  for (const row of rows) app[row.method.toLowerCase()](row.path, (_req, res) => res.json({ ok: true }));
  serve(app, limits.close, close);
});
