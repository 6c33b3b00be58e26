// One app instance in a Node process of its own, for the fault suite: the middleware over a Redis that the test makes
// fail, with the operator's page and the contact page.
// Arguments: <compiled lib dir> <client kind, as redis-clients.js names it> <target> <prefix> <options JSON:
// { rows, timeoutMs, callTimeoutMs, onFailure, ban }>.
// Serves the rows, `/outside` (in no row), the operator's page at `/admin` (authorized for all), the contact page at
// `/request`, and, before the limiter, the middleware's methods at POST /control/<method> (`requests.approve` and so
// on) with a JSON array of arguments, answering {"result", "ms"} or {"error": {"code", "message"}, "ms"}: `ms`, how
// long the call took to settle in this process. Prints JSON lines to stdout: {"port":n} once it listens,
// {"redis":"ready"} each time its client says it is (again) connected, {"error":{"code","message"}} for each error
// onError is told. Anything on stderr is a failure of the test. It ends when its standard input closes.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const { performance } = require('node:perf_hooks');
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { limitsAdmin, limitsRequestPage } = require(`${lib}/pages`);
const { connect } = require('./redis-clients');

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

const { rows, timeoutMs, callTimeoutMs, onFailure, ban } = JSON.parse(json);
const onError = (error) => console.log(JSON.stringify({ error: { code: error.code, message: error.message } }));

connect(kind, target, () => console.log(JSON.stringify({ redis: 'ready' }))).then(({ client, close }) => {
  const store = redisStore(client, { prefix, timeoutMs, callTimeoutMs, onFailure });
  const limits = listingLimits(rows, { store, ban, onError });

  const app = express();
  app.post('/control/:method', express.json(), (req, res) => {
    const path = req.params.method.split('.');
    const method = path.pop();
    const owner = path.reduce((object, name) => object?.[name], limits);
    if (typeof owner?.[method] !== 'function') return res.status(404).json({ error: { message: 'no such method' } });
    const start = performance.now();
    const ms = () => Math.round(performance.now() - start);
    Promise.resolve()
      .then(() => owner[method](...req.body))
      .then(
        (result) => res.json({ result, ms: ms() }),
        (error) => res.json({ error: { code: error.code, message: error.message }, ms: ms() }),
      );
  });
  app.use('/admin', limitsAdmin(limits, { authorize: () => true }));
  app.use(limits);
  app.use('/request', limitsRequestPage(limits));
  app.get('/outside', (_req, res) => res.json({ ok: true }));
  for (const row of rows) app[row.method.toLowerCase()](row.path, (_req, res) => res.json({ ok: true }));
  const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

  process.stdin.on('end', () => {
    limits.close();
    server.close();
    close();
  });
  process.stdin.resume();
});
