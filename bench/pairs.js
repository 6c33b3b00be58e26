// What the side-by-side ruler (bench/sliced.js) measures, and the targets read on it: bench/docs.js makes the
// manual's tables from the same lists, so that a target a run did not measure is said to be so.

/**
 * What is measured, each a variant against a reference server, both with the same load. The reference is bare
 * Express for the figures "of bare", express-rate-limit for "× express-rate-limit", fixed windows for sliding ones,
 * and the same store without bans for bans in force. Sides are `variant@kind`, as `bench/server.js` takes them.
 */
const PAIRS = [
  { name: 'express-rate-limit', reference: 'bare', variant: 'express-rate-limit' },
  { name: 'memory', reference: 'bare', variant: 'listing-limits-memory' },
  { name: 'memory vs express-rate-limit', reference: 'express-rate-limit', variant: 'listing-limits-memory' },
  // The memory store without its seven headers: what the headers cost of the figure "of bare".
  { name: 'memory without headers', reference: 'bare', variant: 'listing-limits-memory-no-headers' },
  { name: 'redis', reference: 'bare', variant: 'listing-limits-redis' },
  // The other clients the store takes, and sliding windows, each against bare Express.
  { name: 'redis node-redis', reference: 'bare', variant: 'listing-limits-redis-node-redis' },
  { name: 'redis glide', reference: 'bare', variant: 'listing-limits-redis-glide' },
  { name: 'redis cluster', reference: 'bare', variant: 'listing-limits-redis-cluster' },
  { name: 'redis sliding of bare', reference: 'bare', variant: 'listing-limits-redis-sliding' },
  // What a user compares the Redis store with: the floor of any limiter counting in Redis with each client (one `INCR`
  // a request, awaited, then the seven headers), and express-rate-limit with rate-limit-redis.
  ...['', ' node-redis', ' glide', ' cluster'].map((client) => ({
    name: `redis floor${client}`,
    reference: 'bare',
    variant: `redis-floor${client.replace(' ', '-')}`,
  })),
  // Each client's store against its own floor, both paced: what the store adds to one `INCR` a request.
  ...['', ' node-redis', ' glide', ' cluster'].map((client) => ({
    name: `redis${client} vs floor`,
    reference: `redis-floor${client.replace(' ', '-')}`,
    variant: `listing-limits-redis${client.replace(' ', '-')}`,
  })),
  // The memory store against a middleware that only writes its seven headers, with values that change as the store's:
  // what counting costs. Constants cost a little less: 0.976 of these values in one run (`headers live vs constant`).
  { name: 'memory vs headers-only', reference: 'headers-live', variant: 'listing-limits-memory' },
  ...['', ' node-redis'].map((client) => ({
    name: `express-rate-limit redis${client}`,
    reference: 'bare',
    variant: `express-rate-limit-redis${client.replace(' ', '-')}`,
  })),
  { name: 'express-rate-limit refused', reference: 'bare', variant: 'express-rate-limit@refused' },
  { name: 'memory refused', reference: 'bare', variant: 'listing-limits-memory@refused' },
  { name: 'redis refused', reference: 'bare', variant: 'listing-limits-redis@refused' },
  { name: 'memory sliding', reference: 'listing-limits-memory', variant: 'listing-limits-memory-sliding' },
  {
    name: 'memory sliding refused',
    reference: 'listing-limits-memory@refused',
    variant: 'listing-limits-memory-sliding@refused',
  },
  { name: 'redis sliding', reference: 'listing-limits-redis', variant: 'listing-limits-redis-sliding' },
  {
    name: 'redis sliding refused',
    reference: 'listing-limits-redis@refused',
    variant: 'listing-limits-redis-sliding@refused',
  },
  {
    name: 'memory with 10k banned tokens',
    reference: 'listing-limits-memory',
    variant: 'listing-limits-memory-bans-token',
  },
  {
    name: 'memory with 10k banned addresses',
    reference: 'listing-limits-memory',
    variant: 'listing-limits-memory-bans-ip',
  },
  // Run on demand only (BENCH_SLICED_PAIRS, or `clients` for these three): each client against ioredis' `Redis`.
  ...['node-redis', 'glide', 'cluster'].map((client) => ({
    name: `redis ${client} vs ioredis`,
    reference: 'listing-limits-redis',
    variant: `listing-limits-redis-${client}`,
    onDemand: 'clients',
  })),
  // Run on demand only: what changing values cost a middleware that only writes the seven headers.
  { name: 'headers live vs constant', reference: 'ceiling-headers', variant: 'headers-live', onDemand: 'headers' },
  // Run on demand only (BENCH_SLICED_PAIRS): what single operations cost a middleware, for the profile's reading.
  ...['empty', 'property', 'headers', 'weakset', 'ip'].map((what) => ({
    name: `ceiling ${what}`,
    reference: 'bare',
    variant: `ceiling-${what}`,
    onDemand: 'ceiling',
  })),
];

/**
 * The targets, each read on one pair: by default its median ratio (`figure` reads another figure), and the least
 * (`atLeast`) or most (`atMost`) it may be. Ratios are shown with three digits, so that a figure just under its target
 * does not read as meeting it.
 */
const TARGETS = [
  { target: 'Memory store, allowed: at least 0.88 of bare Express', pair: 'memory', atLeast: 0.88 },
  {
    target: 'Memory store, allowed: at least 1.10 × express-rate-limit',
    pair: 'memory vs express-rate-limit',
    atLeast: 1.1,
  },
  {
    target: 'Redis store, allowed, default ioredis client: at least 0.80 of bare Express',
    pair: 'redis',
    atLeast: 0.8,
  },
  { target: 'Memory store, refused: at least 1.0 of bare Express', pair: 'memory refused', atLeast: 1 },
  { target: 'Redis store, refused: at least 1.0 of bare Express', pair: 'redis refused', atLeast: 1 },
  {
    target: 'Redis store, refused: 0 Redis commands per refusal after the first',
    pair: 'redis refused',
    figure: (_m, pairs) => pairs['redis refused']?.redis?.perRefusal,
    atMost: 0,
    digits: 4,
  },
  { target: 'Sliding windows, memory store, allowed: at least 0.95 of fixed', pair: 'memory sliding', atLeast: 0.95 },
  {
    target: 'Sliding windows, memory store, refused: at least 0.95 of fixed',
    pair: 'memory sliding refused',
    atLeast: 0.95,
  },
  { target: 'Sliding windows, Redis store, allowed: at least 0.95 of fixed', pair: 'redis sliding', atLeast: 0.95 },
  {
    target: 'Sliding windows, Redis store, refused: at least 0.95 of fixed',
    pair: 'redis sliding refused',
    atLeast: 0.95,
  },
  ...['tokens', 'addresses'].map((by) => ({
    // The figure of bare with bans in force is this pair's ratio times the figure without: it moves by the difference.
    target: `Memory store, allowed, 10,000 ${by} of other clients banned: within 0.02 of the figure of bare without`,
    pair: `memory with 10k banned ${by}`,
    figure: (m) => {
      const ratio = m(`memory with 10k banned ${by}`);
      return ratio === undefined || m('memory') === undefined ? undefined : m('memory') * (1 - ratio);
    },
    atMost: 0.02,
  })),
  {
    target: 'Redis store, allowed, node-redis client: at least 0.85 of bare Express',
    pair: 'redis node-redis',
    atLeast: 0.85,
  },
  {
    target: 'Redis store, allowed, an ioredis Cluster of 3 masters: at least 0.85 of bare Express',
    pair: 'redis cluster',
    atLeast: 0.85,
  },
  {
    target: 'Redis store, allowed, Valkey GLIDE client: at least 0.75 of bare Express',
    pair: 'redis glide',
    atLeast: 0.75,
  },
  {
    target: 'Sliding windows, Redis store, allowed: at least 0.85 of bare Express',
    pair: 'redis sliding of bare',
    atLeast: 0.85,
  },
  {
    target: "Redis store, allowed, default ioredis client: at most 6 µs of Redis' CPU per request",
    pair: 'redis',
    figure: (_m, pairs) => pairs.redis?.redis?.usPerRequest,
    atMost: 6,
    digits: 1,
  },
  {
    target: 'Memory store, allowed: at least 0.97 of a middleware that only writes the same seven headers',
    pair: 'memory vs headers-only',
    atLeast: 0.97,
  },
  ...[
    ['', 'default ioredis client', 0.95],
    [' node-redis', 'node-redis client', 0.9],
    [' glide', 'Valkey GLIDE client', 0.9],
    [' cluster', 'an ioredis Cluster of 3 masters', 0.9],
  ].map(([client, name, atLeast]) => ({
    target: `Redis store, allowed, ${name}: at least ${atLeast.toFixed(2)} of its floor (one INCR a request, paced)`,
    pair: `redis${client} vs floor`,
    atLeast,
  })),
];

/** The pairs of a store against its floor: a store cheaper than one `INCR` a request says the load changed. */
const FLOORS = ['', ' node-redis', ' glide', ' cluster'].map((client) => `redis${client} vs floor`);

module.exports = { FLOORS, PAIRS, TARGETS };
