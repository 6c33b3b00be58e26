// One app instance in a Node process of its own, counting in Redis through any kind of client: for the client matrix.
// Arguments: <compiled lib dir> <client kind, as redis-clients.js names it> <target> <prefix> <options JSON:
// { rows, timeoutMs, onFailure }>. Each row of `rows` is served twice, counted in fixed windows at `/fixed<path>` and
// in sliding windows at `/sliding<path>`, by two middlewares over one store; `/outside` is in no table. The fixed
// windows' middleware's methods are at POST /control/<method>, and its lines are those of instance-parts.js.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { control, onError, ready, serve } = require('./instance-parts');
const { connect } = require('./redis-clients');

const { rows, timeoutMs, onFailure } = JSON.parse(json);

connect(kind, target, ready).then(({ client, close }) => {
  const store = redisStore(client, { prefix, timeoutMs, onFailure });
  const under = (base) => rows.map((row) => ({ ...row, path: `${base}${row.path}` }));
  const fixed = listingLimits(under('/fixed'), { store, window: 'fixed', onError });
  const sliding = listingLimits(under('/sliding'), { store, window: 'sliding', onError });

  const app = express();
  app.use(control(fixed), fixed, sliding);
  app.get('/outside', (_req, res) => res.json({ ok: true }));
  for (const row of [...under('/fixed'), ...under('/sliding')]) {
    app[row.method.toLowerCase()](row.path, (_req, res) => res.json({ ok: true }));
  }
  serve(app, fixed.close, sliding.close, close);
});
