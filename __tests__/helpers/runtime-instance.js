// One app instance in a Node process of its own, for the runtime-state tests: bans and grants over one Redis.
// Arguments: <compiled lib dir> <redis url> <prefix> <options JSON: { rows, ban? }>.
// Prints JSON lines to stdout: {"port":n} once it listens, {"redis":"ready"} each time its client is (again)
// connected, {"error":{"code","message"}} for each error onError is told. Besides the table's rows it serves
// GET /outside (not in the table) and, before the limiter, the runtime methods at POST /control/<method> with a JSON
// array of arguments, answering {"result": ...} or {"error": message}. Anything on stderr is a failure of the test.
// It ends when its standard input closes.
const [lib, url, prefix, json] = process.argv.slice(2);
const express = require('express');
const Redis = require('ioredis');
const { listingLimits, redisStore } = require(lib);

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

const { rows, ban } = JSON.parse(json);
const client = new Redis(url, { retryStrategy: () => 50 });
client.on('error', () => {}); // Redis going away is what the tests do
client.on('ready', () => console.log(JSON.stringify({ redis: 'ready' })));

const limits = listingLimits(rows, {
  // The memory fallback, so that requests are answered while Redis is away, as the default store does.
  store: redisStore(client, { prefix, timeoutMs: 2000, onFailure: 'memory' }),
  ban,
  onError: (error) => console.log(JSON.stringify({ error: { code: error.code, message: error.message } })),
});
const methods = ['ban', 'unban', 'bans', 'grant', 'revoke', 'grants', 'history', 'lost', 'foreign'];

const app = express();
app.post('/control/:method', express.json(), (req, res) => {
  if (!methods.includes(req.params.method)) return res.status(404).json({ error: 'no such method' });
  Promise.resolve()
    .then(() => limits[req.params.method](...req.body))
    .then(
      (result) => res.json({ result }),
      (error) => res.json({ error: error.message }),
    );
});
app.use(limits);
app.get('/outside', (_req, res) => res.json({ ok: true }));
for (const row of rows) app[row.method.toLowerCase()](row.path, (_req, res) => res.json({ ok: true }));
const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

process.stdin.on('end', () => {
  limits.close();
  server.close();
  client.disconnect();
});
process.stdin.resume();
