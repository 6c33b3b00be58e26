// What every app instance of the multi-process tests does alike: JSON lines on stdout, where the test reads them;
// the middleware's methods over HTTP; listening until its standard input closes. Anything on stderr fails the test.
const { performance } = require('node:perf_hooks');
const express = require('express');

const say = (message) => console.log(JSON.stringify(message));

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

/** The middleware's `onError`: {"error":{"code","message"}} for each error. */
const onError = (error) => say({ error: { code: error.code, message: error.message } });

/** The `ready` of redis-clients.js: {"redis":"ready"} each time the client says it is (again) connected. */
const ready = () => say({ redis: 'ready' });

/**
 * POST /control/<method> with a JSON array of arguments calls `owner[method]` (`requests.approve` and so on), and
 * answers {"result", "ms"} or {"error": {"code", "message"}, "ms"}: `ms`, how long the call took to settle here.
 */
function control(owner) {
  return express.Router().post('/control/:method', express.json(), (req, res) => {
    const path = req.params.method.split('.');
    const method = path.pop();
    const of = path.reduce((object, name) => object?.[name], owner);
    if (typeof of?.[method] !== 'function') return res.status(404).json({ error: { message: 'no such method' } });
    const start = performance.now();
    const ms = () => Math.round(performance.now() - start);
    Promise.resolve()
      .then(() => of[method](...req.body))
      .then(
        (result) => res.json({ result, ms: ms() }),
        (error) => res.json({ error: { code: error.code, message: error.message }, ms: ms() }),
      );
  });
}

/**
 * Serves `app` on a free port of 127.0.0.1 and says {"port"}; once standard input closes, ends every connection (a
 * browser's keep-alive ones would hold the process open) and calls each of `closes`.
 */
function serve(app, ...closes) {
  app.use((error, _req, res, _next) => {
    console.error(`error: ${error instanceof Error ? error.stack : String(error)}`);
    res.status(500).end();
  });
  const server = app.listen(0, '127.0.0.1', () => say({ port: server.address().port }));
  process.stdin.on('end', () => {
    server.close();
    server.closeAllConnections();
    for (const close of closes) close();
  });
  process.stdin.resume();
}

module.exports = { control, onError, ready, serve };
