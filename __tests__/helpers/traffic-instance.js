// One app instance counting in Redis, in a Node process of its own, for the site's traffic across instances.
// Arguments as store-instance.js takes them: <compiled lib dir> <client kind> <target> <prefix> <options JSON:
// { rows, timeoutMs, onFailure, page, trafficIntervalMs }>. With `page`, the operator's page is at /admin/limits for
// requests with `X-Operator: yes`. GET /control/traffic answers `limits.traffic()`. Prints the JSON lines of
// store-instance.js. Anything on stderr is a failure of the test. It ends when its standard input closes.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { limitsAdmin } = require(`${lib}/pages`);
const { connect } = require('./redis-clients');

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

const { rows, timeoutMs, onFailure, page, trafficIntervalMs } = JSON.parse(json);
const onError = (error) => console.log(JSON.stringify({ error: { code: error.code, message: error.message } }));

connect(kind, target, () => console.log(JSON.stringify({ redis: 'ready' }))).then(({ client, close }) => {
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
  app.use((error, _req, res, _next) => {
    console.error(`error: ${error instanceof Error ? error.stack : String(error)}`);
    res.status(500).end();
  });
  const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

  process.stdin.on('end', () => {
    limits.close();
    server.close();
    close();
  });
  process.stdin.resume();
});
