// One app instance in a Node process of its own, for the multi-process tests: listing B counted in Redis through ioredis.
// Arguments: <compiled lib dir> <redis url> <prefix> <timeoutMs> <onFailure> [busyMs: CPU each answer burns]. Prints JSON lines to stdout: {"port":n} once it
// listens, {"redis":"ready"} each time its client is (again) connected. Anything on stderr is a failure of the test.
// It ends when its standard input closes.
const [lib, url, prefix, timeoutMs, onFailure, busyMs = '0'] = process.argv.slice(2);
const express = require('express');
const Redis = require('ioredis');
const { listingLimits, redisStore } = require(lib);

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

const client = new Redis(url, { retryStrategy: () => 50 });
client.on('error', () => {}); // Redis going away is what the tests do
client.on('ready', () => console.log(JSON.stringify({ redis: 'ready' })));

const app = express();
app.use(listingLimits('B', { store: redisStore(client, { prefix, timeoutMs: Number(timeoutMs), onFailure }) }));
app.use((_req, res) => {
  // A busy app: the event loop is held this long per answer, as real work would hold it.
  for (const end = Date.now() + Number(busyMs); Date.now() < end;);
  res.json({ ok: true });
});
const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

process.stdin.on('end', () => {
  server.close();
  client.disconnect();
});
process.stdin.resume();
