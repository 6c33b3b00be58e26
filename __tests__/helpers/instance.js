// One app instance in a Node process of its own, for the multi-process tests: listing B counted in Redis.
// Arguments: <compiled lib dir> <redis url> <prefix> <timeoutMs> <onFailure> [busyMs: CPU each answer burns]
// [client: ioredis (default), node-redis, glide (Valkey GLIDE with its defaults), or cluster, for which <redis url>
// is the nodes' URLs, comma-separated]
// [window: fixed (default) or sliding] [skewMs: how far this process's clock is off, e.g. -90000].
// Prints JSON lines to stdout: {"port":n} once it listens, {"redis":"ready"} each time its client is (again)
// connected. Anything on stderr is a failure of the test. It ends when its standard input closes.
const [lib, url, prefix, timeoutMs, onFailure, busyMs = '0', kind = 'ioredis', window = 'fixed', skewMs = '0'] =
  process.argv.slice(2);
const realNow = Date.now;
Date.now = () => realNow() + Number(skewMs);
const express = require('express');
const { listingLimits, redisStore } = require(lib);

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

const ready = () => console.log(JSON.stringify({ redis: 'ready' }));
let client;
let close;
/** Resolves once the client may be given to the store: GLIDE's is made connected, asynchronously. */
let made = Promise.resolve();
if (kind === 'glide') {
  const glide = require('@valkey/valkey-glide');
  glide.Logger.setLoggerConfig('off'); // it writes the errors Redis answers to stdout, where the test reads JSON
  const { hostname, port } = new URL(url);
  made = glide.GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] }).then((glide) => {
    client = glide;
    close = () => glide.close();
    ready();
  });
} else if (kind === 'node-redis') {
  const { createClient } = require('redis');
  client = createClient({ url, socket: { reconnectStrategy: () => 50 } });
  client.on('error', () => {}); // Redis going away is what the tests do
  client.on('ready', ready);
  client.connect().catch(() => {});
  close = () => client.disconnect().catch(() => {});
} else if (kind === 'cluster') {
  const { Cluster } = require('ioredis');
  const nodes = url.split(',').map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port) }));
  client = new Cluster(nodes);
  client.on('error', () => {});
  client.on('ready', ready);
  close = () => client.disconnect();
} else {
  const Redis = require('ioredis');
  client = new Redis(url, { retryStrategy: () => 50 });
  client.on('error', () => {});
  client.on('ready', ready);
  close = () => client.disconnect();
}

made.then(() => {
  const store = redisStore(client, { prefix, timeoutMs: Number(timeoutMs), onFailure });
  const app = express();
  app.use(listingLimits('B', { window, store }));
  app.use((_req, res) => {
    // A busy app: the event loop is held this long per answer, as real work would hold it.
    for (const end = Date.now() + Number(busyMs); Date.now() < end;);
    res.json({ ok: true });
  });
  const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));

  process.stdin.on('end', () => {
    server.close();
    close();
  });
  process.stdin.resume();
});
