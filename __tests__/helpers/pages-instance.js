// One app instance with both pages in a Node process of its own, for the pages' multi-process tests.
// Arguments: <compiled lib dir> <redis url> <prefix> <secret> [admin token, or JSON of tokens by name]. Behind a
// proxy (`trust proxy`): X-Forwarded-For is the client's address. Listing B counted in Redis, with the store's timeout
// long and failing closed, so that no count is ever made in one process's memory. Prints JSON lines to stdout:
// {"port":n} once it listens, {"redis":"ready"} once its client is connected. Anything on stderr is a failure of the
// test. It ends when its standard input closes.
const [lib, url, prefix, secret, token = 'admin-token-of-both-instances'] = process.argv.slice(2);
const express = require('express');
const Redis = require('ioredis');
const { listingLimits, redisStore } = require(lib);
const { limitsAdmin, limitsRequestPage } = require(`${lib}/pages`);

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

const client = new Redis(url);
client.on('ready', () => console.log(JSON.stringify({ redis: 'ready' })));
const limits = listingLimits('B', { store: redisStore(client, { prefix, timeoutMs: 10_000, onFailure: 'closed' }) });
const app = express();
app.set('trust proxy', true);
const authorize = token.startsWith('{') ? { tokens: JSON.parse(token) } : { token };
app.use('/admin/limits', limitsAdmin(limits, { authorize, secret }));
app.use(limits);
app.use('/limits/request', limitsRequestPage(limits, { secret }));
app.use((error, _req, res, _next) => {
  console.error(`error: ${error instanceof Error ? error.stack : String(error)}`);
  res.status(500).end();
});
const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

process.stdin.on('end', () => {
  server.close();
  server.closeAllConnections(); // a browser's keep-alive connections would hold the process open
  limits.close();
  client.disconnect();
});
process.stdin.resume();
