// An API limited by a table of its own, in a Node process of its own, for the verifier's real-time tests.
// Arguments: <compiled lib dir> <settings as JSON: { listing, window?, key?: 'path' | 'ip', ban? }>. It answers
// 200 to every request the limiter lets through. Prints JSON lines to stdout: {"port":n} once it listens, then
// {"status","method","url","authorization"} for each request answered. It ends when its standard input closes.
const [lib, json] = process.argv.slice(2);
const settings = JSON.parse(json);
const express = require('express');
const { listingLimits } = require(lib);

/** Keys that misbehave on purpose: one counter per path (path parameters not ignored), or one per address. */
const keys = {
  path: (req) => `${req.get('authorization') || req.ip} ${req.path}`,
  ip: (req) => req.ip,
};

const app = express();
app.use((req, res, next) => {
  res.on('finish', () => {
    const { method, originalUrl: url } = req;
    const authorization = req.headers.authorization ?? null;
    console.log(JSON.stringify({ status: res.statusCode, method, url, authorization }));
  });
  next();
});
app.use(
  listingLimits(settings.listing, {
    window: settings.window ?? 'fixed',
    ...(settings.key && { key: keys[settings.key] }),
    ...(settings.ban && { ban: settings.ban }),
  }),
);
app.use((_req, res) => {
  res.json({ ok: true });
});
const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

process.stdin.on('end', () => {
  server.closeAllConnections();
  server.close();
});
process.stdin.resume();
