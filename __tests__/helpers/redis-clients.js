// How a child process of the tests connects each kind of Redis client the store takes, to a server, cluster or sentinels.
// connect(kind, target, ready) → { client, close }. `target` is a redis:// URL; for a cluster the nodes' URLs and for
// Sentinel the sentinels' URLs (of a master named `primary`), comma-separated. `ready()` is called each time the
// client is (again) connected, as far as the client tells: GLIDE tells nothing after its first connection.
// Every client reconnects every 50 ms, and its errors while Redis is away are expected: the tests judge the store.
const hosts = (target) => target.split(',').map((u) => ({ host: new URL(u).hostname, port: Number(new URL(u).port) }));

const kinds = {
  ioredis: (target, ready) => ioredisLike(require('ioredis'), target, ready),
  iovalkey: (target, ready) => ioredisLike(require('iovalkey'), target, ready),
  'ioredis-cluster': (target, ready) => {
    const { Cluster } = require('ioredis');
    const client = new Cluster(hosts(target), { clusterRetryStrategy: () => 50 });
    client.on('error', () => {});
    client.on('ready', ready);
    return { client, close: () => client.disconnect() };
  },
  'ioredis-sentinel': (target, ready) => {
    const Redis = require('ioredis');
    const client = new Redis({
      sentinels: hosts(target),
      name: 'primary',
      retryStrategy: () => 50,
      sentinelRetryStrategy: () => 50,
    });
    client.on('error', () => {});
    client.on('ready', ready);
    return { client, close: () => client.disconnect() };
  },
  'node-redis': (target, ready) => {
    const { createClient } = require('redis');
    const client = createClient({ url: target, socket: { reconnectStrategy: () => 50 } });
    client.on('error', () => {});
    client.on('ready', ready);
    client.connect().catch(() => {});
    return { client, close: () => client.destroy() };
  },
  'node-redis-cluster': async (target, ready) => {
    const { createCluster } = require('redis');
    const client = createCluster({
      rootNodes: target.split(',').map((url) => ({ url })),
      defaults: { socket: { reconnectStrategy: () => 50 } },
    });
    client.on('error', () => {});
    await client.connect();
    ready();
    return { client, close: () => client.destroy() };
  },
  glide: (target, ready) => glide('GlideClient', target, ready),
  'glide-cluster': (target, ready) => glide('GlideClusterClient', target, ready),
};

function ioredisLike(Redis, target, ready) {
  const client = new Redis(target, { retryStrategy: () => 50 });
  client.on('error', () => {});
  client.on('ready', ready);
  return { client, close: () => client.disconnect() };
}

/**
 * A GLIDE client. Its requests may wait 10 s (GLIDE's default is 250 ms), so that a busy machine never fails one the
 * test counts on: the store's `timeoutMs` bounds each request's wait anyway. GLIDE's log is off: it writes every
 * error Redis answers to stdout, where the tests read JSON.
 */
async function glide(className, target, ready) {
  const glide = require('@valkey/valkey-glide');
  glide.Logger.setLoggerConfig('off');
  const client = await glide[className].createClient({
    addresses: hosts(target),
    requestTimeout: 10_000,
    connectionBackoff: { numberOfRetries: 1, factor: 50, exponentBase: 1 },
  });
  ready();
  return { client, close: () => client.close() };
}

/** The client of `kind`, connected or connecting. */
async function connect(kind, target, ready) {
  const make = kinds[kind];
  if (!make) throw new Error(`no Redis client kind ${kind}`);
  return make(target, ready);
}

module.exports = { connect };
