// Listing APIs in a Node process of their own, for the client's real-time tests: each app on a port of its own.
// Arguments: <compiled CommonJS dir (see compiled.ts)> <JSON: { apps: App[] }>, where App is one of
//   { kind: 'rows', rows, window?, delayMs?, grants? }  listingLimits(rows) in front of a route for every row;
//                                                      POST bodies are kept and shown at GET /reports
//   { kind: 'example', listing, window?, delayMs? }     createExampleApp({ listing, window })
//   { kind: 'hostile' }                                 answers no client should believe (see HOSTILE below)
// delayMs: each request waits a random 0 to delayMs ms before the limiter counts it, as the network and a busy
// server's queue make it wait. Every app serves its limiter's metrics at GET /metrics (never delayed or limited)
// and counts the requests to /v1/ paths by method and path at GET /requests (`{ "GET /v1/bots/1": 2 }`). Prints
// {"urls":[...]} once every app listens; anything on stderr is a failure of the test. It ends when its standard
// input closes.
const [dir, config] = process.argv.slice(2);
const { join } = require('node:path');
const express = require('express');
const { Registry } = require('prom-client');
const { listingLimits } = require(join(dir, 'lib', 'index.js'));
const { createExampleApp } = require(join(dir, 'example-server', 'app.js'));

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

/** A day in the year 9999, as an HTTP date: a Retry-After no client should wait for. */
const FAR = 'Fri, 31 Dec 9999 23:59:59 GMT';
const json = (res, status, headers, body) => res.status(status).set(headers).json(body);

/** Path → what the hostile app answers there. */
const HOSTILE = {
  '/v1/retry-after': (_req, res) => json(res, 429, { 'Retry-After': '99999999' }, { message: 'Come back later' }),
  '/v1/retry-date': (_req, res) => json(res, 429, { 'Retry-After': FAR }, { message: 'Come back in 9999' }),
  '/v1/reset-day': (_req, res) => json(res, 429, { RateLimit: '"x";r=0;t=86400' }, { message: 'Tomorrow' }),
  '/v1/reset-absurd': (_req, res) =>
    json(res, 429, { RateLimit: '"x";r=0;t=99999999999', 'X-RateLimit-Reset-After': '1e99' }, { message: 'No' }),
  '/v1/window-absurd': (_req, res) =>
    json(res, 200, { 'RateLimit-Policy': '"x";q=2;w=999999999999999', RateLimit: '"x";r=0;t=1' }, { ok: true }),
  '/v1/garbage': (_req, res) =>
    json(
      res,
      200,
      {
        'RateLimit-Policy': '"x";q=-4;w=abc, ;;;',
        RateLimit: '"x";r=1e400;t=-1',
        'X-RateLimit-Limit': 'NaN',
        'X-RateLimit-Remaining': '-5',
        'X-RateLimit-Reset-After': 'soon',
      },
      { ok: true },
    ),
  '/v1/banned-soon': (_req, res) => json(res, 403, {}, { message: 'Banned', bannedUntil: 'soon' }),
  '/v1/banned-far': (_req, res) =>
    json(res, 403, {}, { message: 'Banned for good', bannedUntil: '+275760-09-13T00:00:00.000Z' }),
  '/v1/bad-request': (_req, res) => json(res, 400, {}, { success: false, code: 400, message: 'Bad page number' }),
  '/v1/silent': () => {},
  '/v1/stalled-body': (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.write('{"part":');
  },
  '/v1/huge-body': (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain' });
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    let sent = 0;
    const more = () => {
      while (sent < 17 && res.write(chunk)) sent++;
      if (sent >= 17) res.end();
      else res.once('drain', more);
    };
    more();
  },
};

function delayed(delayMs) {
  return (req, _res, next) => {
    if (!delayMs || req.path === '/metrics') return next();
    setTimeout(next, Math.floor(Math.random() * (delayMs + 1)));
  };
}

function rowsApp({ rows, window, delayMs, grants }, app, metrics) {
  const reports = {};
  app.get('/reports', (_req, res) => res.json(reports));
  app.use(delayed(delayMs));
  app.use(listingLimits(rows, { window, metrics, grants }));
  for (const row of rows) {
    app[row.method.toLowerCase()](row.path, express.json({ strict: false }), (req, res) => {
      if (row.method === 'POST') reports[req.path] = req.body;
      res.json({ endpoint: `${row.method} ${row.path}` });
    });
  }
}

function appOf(spec) {
  const app = express();
  const requests = {};
  app.use((req, _res, next) => {
    const line = `${req.method} ${req.path}`;
    if (req.path.startsWith('/v1/')) requests[line] = (requests[line] ?? 0) + 1;
    next();
  });
  app.get('/requests', (_req, res) => res.json(requests));
  if (spec.kind === 'example') {
    app.use(delayed(spec.delayMs));
    app.use(createExampleApp({ listing: spec.listing, window: spec.window }));
    return app;
  }
  const metrics = new Registry();
  app.get('/metrics', (_req, res, next) => {
    metrics.metrics().then((text) => res.type('text/plain').send(text), next);
  });
  if (spec.kind === 'rows') rowsApp(spec, app, metrics);
  else for (const [path, answer] of Object.entries(HOSTILE)) app.all(path, answer);
  return app;
}

const servers = [];
Promise.all(
  JSON.parse(config).apps.map(
    (spec) =>
      new Promise((listening) => {
        const server = appOf(spec).listen(0, '127.0.0.1', () => listening(server));
        servers.push(server);
      }),
  ),
).then((listening) => {
  console.log(JSON.stringify({ urls: listening.map((s) => `http://127.0.0.1:${s.address().port}`) }));
});

process.stdin.on('end', () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});
process.stdin.resume();
