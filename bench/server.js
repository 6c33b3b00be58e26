// One benchmark server: `node bench/server.js <variant> <allowed|refused> [redis-port]`; prints its port when ready.
const { createBenchApp } = require('./apps.js');

const [variant, kind, redisPort] = process.argv.slice(2);
let store;
let redis;
if (variant === 'listing-limits-redis') {
  const Redis = require('ioredis');
  const { redisStore } = require('../dist/cjs/index.js');
  redis = new Redis({ port: Number(redisPort), host: '127.0.0.1', enableOfflineQueue: true });
  store = redisStore(redis, { prefix: `bench-${process.pid}` });
}
const server = createBenchApp(variant, kind, store).listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  redis?.disconnect();
  process.exit(0);
});
