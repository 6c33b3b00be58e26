// One benchmark server: `node bench/server.js <variant> <allowed|refused> [redis-port]`; prints its port when ready.
const { createBenchApp } = require('./apps.js');

const [variant, kind, redisPort] = process.argv.slice(2);
let store;
let redis;
if (variant.startsWith('listing-limits-redis')) {
  const Redis = require('ioredis');
  const { redisStore } = require('../dist/cjs/index.js');
  // -pipelined: ioredis sends the commands of requests that arrive together in one write (enableAutoPipelining);
  // each request is still one command, one script run.
  const enableAutoPipelining = variant === 'listing-limits-redis-pipelined';
  redis = new Redis({ port: Number(redisPort), host: '127.0.0.1', enableOfflineQueue: true, enableAutoPipelining });
  store = redisStore(redis, { prefix: `bench-${process.pid}` });
}
const options = variant === 'listing-limits-memory-no-headers' ? { headers: false } : undefined;
const server = createBenchApp(variant, kind, store, options).listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  redis?.disconnect();
  process.exit(0);
});
