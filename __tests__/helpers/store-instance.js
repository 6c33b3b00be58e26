// One app instance in a Node process of its own, counting in Redis through any kind of client: for the client matrix.
// Arguments: <compiled lib dir> <client kind, as redis-clients.js names it> <target> <prefix> <options JSON:
// { rows, timeoutMs, onFailure }>. Each row of `rows` is served twice, counted in fixed windows at `/fixed<path>` and
// in sliding windows at `/sliding<path>`, by two middlewares over one store; `/outside` is in no table. Before them,
// the runtime methods of the fixed windows' middleware are served at POST /control/<method> (`requests.file` and so
// on for its grant requests) with a JSON array of arguments, answering {"result": ...} or {"error": message}.
// Prints JSON lines to stdout: {"port":n} once it listens, {"redis":"ready"} each time its client says it is (again)
// connected, {"error":{"code","message"}} for each error onError is told. Anything on stderr is a failure of the
// test. It ends when its standard input closes.
const [lib, kind, target, prefix, json] = process.argv.slice(2);
const express = require('express');
const { listingLimits, redisStore } = require(lib);
const { connect } = require('./redis-clients');

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

const { rows, timeoutMs, onFailure } = JSON.parse(json);
const onError = (error) => console.log(JSON.stringify({ error: { code: error.code, message: error.message } }));

connect(kind, target, () => console.log(JSON.stringify({ redis: 'ready' }))).then(({ client, close }) => {
  const store = redisStore(client, { prefix, timeoutMs, onFailure });
  const under = (base) => rows.map((row) => ({ ...row, path: `${base}${row.path}` }));
  const fixed = listingLimits(under('/fixed'), { store, window: 'fixed', onError });
  const sliding = listingLimits(under('/sliding'), { store, window: 'sliding', onError });

  const app = express();
  app.post('/control/*method', express.json(), (req, res) => {
    const path = req.params.method.join('/').split('.');
    const method = path.pop();
    const owner = path.reduce((object, name) => object?.[name], fixed);
    if (typeof owner?.[method] !== 'function') return res.status(404).json({ error: 'no such method' });
    Promise.resolve()
      .then(() => owner[method](...req.body))
      .then(
        (result) => res.json({ result }),
        (error) => res.json({ error: error.message }),
      );
  });
  app.use(fixed, sliding);
  app.get('/outside', (_req, res) => res.json({ ok: true }));
  for (const row of [...under('/fixed'), ...under('/sliding')]) {
    app[row.method.toLowerCase()](row.path, (_req, res) => res.json({ ok: true }));
  }
  const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

  process.stdin.on('end', () => {
    fixed.close();
    sliding.close();
    server.close();
    close();
  });
  process.stdin.resume();
});
