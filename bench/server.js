// One benchmark server: `node bench/server.js <variant> <allowed|refused> [redis-port]`; prints its port when ready.
const { createBenchApp } = require('./apps.js');

const [variant, kind, redisPort] = process.argv.slice(2);
let store;
let redis;
let connecting = Promise.resolve();
let quit = () => {};
if (variant.startsWith('listing-limits-redis')) {
  const { redisStore } = require('../dist/cjs/index.js');
  if (variant === 'listing-limits-redis-node-redis') {
    const { createClient } = require('redis');
    redis = createClient({ url: `redis://127.0.0.1:${redisPort}` });
    redis.on('error', () => {});
    connecting = redis.connect();
    quit = () => redis.quit().catch(() => {});
  } else {
    // A default ioredis client, as users get it.
    const Redis = require('ioredis');
    redis = new Redis({ port: Number(redisPort), host: '127.0.0.1' });
    connecting = new Promise((resolve) => redis.once('ready', resolve));
    quit = () => redis.disconnect();
  }
  store = redisStore(redis, { prefix: `bench-${process.pid}` });
}
const options =
  variant === 'listing-limits-memory-no-headers'
    ? { headers: false }
    : variant.endsWith('-sliding')
      ? { window: 'sliding' }
      : undefined;
let server;
connecting.then(() => {
  server = createBenchApp(variant, kind, store, options).listen(0, '127.0.0.1', () => {
    process.stdout.write(`${server.address().port}\n`);
  });
});
process.on('SIGTERM', () => {
  server?.close();
  quit();
  process.exit(0);
});
