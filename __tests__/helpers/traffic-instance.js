// One app instance counting in Redis, in a Node process of its own, for the site's traffic across instances.
// Arguments as store-instance.js takes them: <compiled lib dir> <client kind> <target> <prefix> <options JSON:
// { rows, timeoutMs, onFailure, page, trafficIntervalMs }>. With `page`, the operator's page is at /admin/limits for
// requests with `X-Operator: yes`. GET /control/traffic answers `limits.traffic()`. Its lines are instance-parts.js's.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { limitsAdmin } = require(`${lib}/pages`);
const { onError, ready, serve } = require('./instance-parts');
const { connect } = require('./redis-clients');

const { rows, timeoutMs, onFailure, page, trafficIntervalMs } = JSON.parse(json);

connect(kind, target, ready).then(({ client, close }) => {
  const store = redisStore(client, { prefix, timeoutMs, onFailure, trafficIntervalMs });
  const limits = listingLimits(rows, { store, onError });
  const app = express();
  if (page) {
    const authorize = (req) => req.get('x-operator') === 'yes';
    app.use('/admin/limits', limitsAdmin(limits, { authorize, secret: 'a-secret-of-the-traffic-tests-0001' }));
  }
  app.get('/control/traffic', (_req, res) => res.json(limits.traffic()));
  app.use(limits);
  for (const row of rows) app[row.method.toLowerCase()](row.path, (_req, res) => res.json({ ok: true }));
  serve(app, limits.close, close);
});
