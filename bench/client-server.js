// The API of the client benchmark: `node bench/client-server.js <rows JSON> <fixed|sliding> <delayMs>`, listingLimits
// from dist/ in front of a route for every row; each request waits a random 0 to delayMs ms before it is counted.
// Prints its port when ready; GET /limited answers the refusals counted, by endpoint. Ends when stdin closes.
const express = require('express');
const { listingLimits } = require('../dist/index.cjs');

const [rowsJson, window, delayMs] = process.argv.slice(2);
const rows = JSON.parse(rowsJson);
const limited = {};
const app = express();
app.get('/limited', (_req, res) => res.json(limited));
app.use((_req, _res, next) => setTimeout(next, Math.floor(Math.random() * (Number(delayMs) + 1))));
app.use(
  listingLimits(rows, {
    window,
    onLimit: (event) => {
      limited[event.endpoint] = (limited[event.endpoint] ?? 0) + 1;
    },
  }),
);
for (const row of rows) app[row.method.toLowerCase()](row.path, (_req, res) => res.json({ ok: true }));
const server = app.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
process.stdin.on('end', () => {
  server.closeAllConnections();
  server.close();
});
process.stdin.resume();
