// One app instance in a Node process of its own, for the fault suite: the middleware over a Redis that the test makes
// fail, with the operator's page and the contact page.
// Arguments: <compiled lib dir> <client kind, as redis-clients.js names it> <target> <prefix> <options JSON:
// { rows, timeoutMs, callTimeoutMs, onFailure, ban }>.
// Serves the rows, `/outside` (in no row), the operator's page at `/admin` (authorized for all), the contact page at
// `/request`, and the middleware's methods at POST /control/<method>. Its lines are those of instance-parts.js.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { limitsAdmin, limitsRequestPage } = require(`${lib}/pages`);
const { control, onError, ready, serve } = require('./instance-parts');
const { connect } = require('./redis-clients');

const { rows, timeoutMs, callTimeoutMs, onFailure, ban } = JSON.parse(json);

connect(kind, target, ready).then(({ client, close }) => {
  const store = redisStore(client, { prefix, timeoutMs, callTimeoutMs, onFailure });
  const limits = listingLimits(rows, { store, ban, onError });

  const app = express();
  app.use(control(limits));
  app.use('/admin', limitsAdmin(limits, { authorize: () => true }));
  app.use(limits);
  app.use('/request', limitsRequestPage(limits));
  app.get('/outside', (_req, res) => res.json({ ok: true }));
  for (const row of rows) app[row.method.toLowerCase()](row.path, (_req, res) => res.json({ ok: true }));
  serve(app, limits.close, close);
});
