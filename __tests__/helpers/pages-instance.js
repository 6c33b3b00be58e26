// One app instance with both pages in a Node process of its own, for the pages' multi-process tests.
// Arguments as store-instance.js takes them: <compiled lib dir> <client kind> <target> <prefix> <options JSON:
// { secret, authorize }>: `authorize` as limitsAdmin takes it. Behind a proxy (`trust proxy`): X-Forwarded-For is the
// client's address. Listing B counted in Redis, with the store's timeout long and failing closed, so that no count is
// ever made in one process's memory. Its lines are those of instance-parts.js.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { limitsAdmin, limitsRequestPage } = require(`${lib}/pages`);
const { ready, serve } = require('./instance-parts');
const { connect } = require('./redis-clients');

const { secret, authorize } = JSON.parse(json);

connect(kind, target, ready).then(({ client, close }) => {
  const limits = listingLimits('B', { store: redisStore(client, { prefix, timeoutMs: 10_000, onFailure: 'closed' }) });
  const app = express();
  app.set('trust proxy', true);
  app.use('/admin/limits', limitsAdmin(limits, { authorize, secret }));
  app.use(limits);
  app.use('/limits/request', limitsRequestPage(limits, { secret }));
  serve(app, limits.close, close);
});
