// One app instance in a Node process of its own, for the multi-process tests: listing B counted in Redis.
// Arguments as store-instance.js takes them: <compiled lib dir> <client kind> <target> <prefix> <options JSON:
// { timeoutMs, onFailure, busyMs, window, skewMs }>: `busyMs`, the CPU each answer burns; `window`, fixed or sliding;
// `skewMs`, how far this process's clock is off, e.g. -90000. Its lines are those of instance-parts.js.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const { timeoutMs, onFailure, busyMs, window, skewMs } = JSON.parse(json);
const realNow = Date.now;
Date.now = () => realNow() + skewMs;
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { ready, serve } = require('./instance-parts');
const { connect } = require('./redis-clients');

connect(kind, target, ready).then(({ client, close }) => {
  const limits = listingLimits('B', { window, store: redisStore(client, { prefix, timeoutMs, onFailure }) });
  const app = express();
  app.use(limits);
  app.use((_req, res) => {
    // A busy app: the event loop is held this long per answer, as real work would hold it.
    for (const end = Date.now() + busyMs; Date.now() < end;);
    res.json({ ok: true });
  });
  serve(app, limits.close, close);
});
