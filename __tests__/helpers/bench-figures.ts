// The benchmark's results as the manual quotes them: each figure of the prose of the README and the guides, its
// words with `{}` for each value and the values read from bench/results/*.json (__tests__/bench-figures.test.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from './manual';

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const results = (name: string): Json =>
  JSON.parse(readFileSync(join(root, 'bench', 'results', `${name}.json`), 'utf8'));
const latest = results('latest');
const profile = results('profile');
const client = results('client');
const earlier = results('earlier');
const source = (path: string) => readFileSync(join(root, path), 'utf8');

const fixed = (digits: number) => (x: number) => x.toFixed(digits);
export const [f1, f2, f3, f4] = [fixed(1), fixed(2), fixed(3), fixed(4)];
const round = (x: number) => String(Math.round(x));
const signed = (x: number) => (x < 0 ? `−${f3(-x)}` : f3(x));
export const thousands = (x: number) => Math.round(x).toLocaleString('en-US');
const span = (values: number[], format: (x: number) => string) => [
  format(Math.min(...values)),
  format(Math.max(...values)),
];

export const S = latest.sliced.summary;
export const T = latest.sliced.targets as { target: string; value: number; met: boolean }[];
const at = (i: number) => T[i] as (typeof T)[number];
export const E = earlier.runs.E;
const previous = earlier.runs['0.3.0'];
/** The number a target's words set: `at least 0.88`, `within 0.02`. */
export const bound = (i: number) => Number((/(?:at least|within) ([\d.]+)/.exec(at(i).target) ?? [])[1]);
const httpRuns = (kind: string, variant: string) =>
  (latest.http.runs as Json[]).filter((r) => r.kind === kind && r.variant === variant);
const [bare, memory] = profile.results as [Json, Json];
/** A function of the package in the memory store's profile, by its name or, for an anonymous one, its file. */
const top = (name: string) =>
  (memory.package as Json[]).find((t) => t.name.startsWith(`${name} `) || t.name.includes(` ${name}:`))
    ?.usPerRequest as number;
const lookup = top('contract/match.js');
const { memoryAgainstEarlierBuild: memoryAB, clusterMasters: masters } = earlier.sideRuns;
const own = memory.groups['listing-limits'] as number;
const micro = (task: string) => (latest.micro.rows as Json[]).find((r) => r.task === task) as Json;
const sliding = latest.memory.bytesPerSlidingKey;
const perRequest = [(sliding[25] - sliding[1]) / 24, (sliding[100] - sliding[25]) / 75];
const change = (n: string) => (earlier.changes as Json[]).find((c) => c.change.startsWith(`${n}. `)) as Json;
const pagesAt = latest.pages;
const clientRows = client.report as Json[];

/** Each figure of the prose: its page, its words as the page has them with `{}` for each value, and the values. */
export const figures: [string, string, ...(string | number)[]][] = [
  // README.md, Performance (its targets and scale are blocks, made from the results)
  ['README.md', "then the package's own functions, **{} µs** a request", f1(own)],

  // docs/performance.md
  [
    'docs/performance.md',
    'on CPU 1 ({} connections, `GET {}` sent by {} clients in turn',
    latest.sliced.settings.connections,
    latest.sliced.settings.path,
    latest.sliced.settings.clients,
  ],
  [
    'docs/performance.md',
    'every {} ms for the {} s of the measurement, after {} s of load',
    latest.sliced.settings.sliceMs,
    latest.sliced.settings.duration,
    latest.sliced.settings.warmup,
  ],
  ['docs/performance.md', 'Each pair is measured {} times in one run', latest.sliced.settings.rounds],
  [
    'docs/performance.md',
    'The rounds of one pair differ by up to {} in this run',
    f3(Math.max(...Object.values(S as Json).map((s) => Math.max(...s.rounds) - Math.min(...s.rounds)))),
  ],
  [
    'docs/performance.md',
    '{} × {} (a shared VM), {} GiB, Node {}, Express 5',
    latest.machine.cpus,
    latest.machine.cpu,
    latest.machine.memoryGiB,
    latest.machine.node,
  ],
  [
    'docs/performance.md',
    'load average (1 minute) {} at the start of the ruler and {}, {} and {} after its rounds',
    ...(latest.sliced.loadAverage as number[][]).map((l) => f2(l[0] as number)),
  ],
  [
    'docs/performance.md',
    '(load average {}–{}): every target met but one, 10,000 banned addresses, missed by {} ({}), and the figure ' +
      'against express-rate-limit met by {} ({})',
    ...E.loadAverage,
    f3(E.targets[11] - bound(11)),
    f3(E.targets[11]),
    f3(E.targets[1] - bound(1)),
    f3(E.targets[1]),
  ],
  [
    'docs/performance.md',
    '`npm run bench` under other work (load average {}–{}), its first run',
    ...previous.loadAverage,
  ],
  [
    'docs/performance.md',
    'cost the memory store {} µs of CPU per request more than bare Express ({} against {}): about {}%, where the ' +
      'target allows {}%',
    round(S.memory.cpuUsPerRequest - S.memory.referenceCpuUsPerRequest),
    round(S.memory.cpuUsPerRequest),
    round(S.memory.referenceCpuUsPerRequest),
    round((S.memory.cpuUsPerRequest / S.memory.referenceCpuUsPerRequest - 1) * 100),
    f1((1 / bound(0) - 1) * 100),
  ],
  [
    'docs/performance.md',
    'Against express-rate-limit the figure is {}, every round above {} ({}–{}), and {} in run E',
    f3(S['memory vs express-rate-limit'].ratio),
    f2(bound(1)),
    ...span(S['memory vs express-rate-limit'].rounds, f3),
    f3(E.targets[1]),
  ],
  [
    'docs/performance.md',
    'serving the route ({} with the memory store, {} with Redis)',
    f3(S['memory refused'].ratio),
    f3(S['redis refused'].ratio),
  ],
  [
    'docs/performance.md',
    'which runs its store for each refusal, is {} of bare there',
    f3(S['express-rate-limit refused'].ratio),
  ],
  [
    'docs/performance.md',
    'two plain commands per request, `INCR` and `PTTL` ({} per request:',
    f4(S.redis.redis.perRequest),
  ],
  ['docs/performance.md', 'The figure went from {} in 0.3.0 to {}:', f3(previous.targets[2]), f3(at(2).value)],
  [
    'docs/performance.md',
    "spends {} µs per request against bare's {}, {} µs {} than with the memory store",
    round(S.redis.cpuUsPerRequest),
    round(S.redis.referenceCpuUsPerRequest),
    round(Math.abs(S.redis.cpuUsPerRequest - S.memory.cpuUsPerRequest)),
    S.redis.cpuUsPerRequest < S.memory.cpuUsPerRequest ? 'less' : 'more',
  ],
  [
    'docs/performance.md',
    '10,000 banned tokens move the figure by {} ({} in run E)',
    signed(at(10).value),
    f3(E.targets[10]),
  ],
  [
    'docs/performance.md',
    'moved by {} in this run ({} in run E, just over the target), where it was {} in 0.3.0',
    f3(at(11).value),
    f3(E.targets[11]),
    f3(previous.targets[11]),
  ],
  [
    'docs/performance.md',
    "under {} s of load after 2 s of warm-up (V8's sampling profiler through `node:inspector`, one sample every {} µs)",
    profile.durationS,
    profile.intervalUs,
  ],
  [
    'docs/performance.md',
    '({} profiles each, {} requests of bare Express and {} of the memory store;',
    profile.rounds,
    thousands(bare.requests),
    thousands(memory.requests),
  ],
  [
    'docs/performance.md',
    'bare {} µs of CPU per request, the memory store {} ({} of bare, where the ruler gives {})',
    f1(bare.usPerRequest),
    f1(memory.usPerRequest),
    f3(bare.usPerRequest / memory.usPerRequest),
    f3(at(0).value),
  ],
  [
    'docs/performance.md',
    "The package's own functions take {} µs: the route lookup {} µs, the header writer `one` {}, " +
      '`listingLimitsMiddleware` {}, and {} for the rest',
    f1(own),
    f2(lookup),
    f2(top('one')),
    f2(top('listingLimitsMiddleware')),
    f1(own - lookup - top('one') - top('listingLimitsMiddleware')),
  ],
  [
    'docs/performance.md',
    "Node's header handling takes {} µs per request beyond bare Express",
    f1(memory.beyondBare["Node's header handling"]),
  ],
  [
    'docs/performance.md',
    "Node's HTTP and socket writes {} µs more (the longer block written): {} of the {} µs the memory store adds",
    f1(memory.beyondBare["Node's HTTP, streams and socket writes"]),
    f1(memory.beyondBare["Node's header handling"] + memory.beyondBare["Node's HTTP, streams and socket writes"]),
    f1(memory.usPerRequest - bare.usPerRequest),
  ],
  [
    'docs/performance.md',
    'its packages take {} µs more with the middleware than without',
    f1(memory.beyondBare['Express and its packages']),
  ],
  [
    'docs/performance.md',
    'take the remaining {} µs: the route lookup {}, the header writer `one` (building the seven values) {}, the ' +
      "middleware's own step {}",
    f1(own),
    f2(lookup),
    f2(top('one')),
    f2(top('listingLimitsMiddleware')),
  ],
  [
    'docs/performance.md',
    'while other work ran on the machine (load average {}–{})',
    ...earlier.changeRuns.redis.loadAverage,
  ],
  [
    'docs/performance.md',
    'against bare Express (one run, {} rounds, load average {}–{})',
    earlier.ceiling.pairs[0].rounds.length,
    ...earlier.ceiling.loadAverage,
  ],
  [
    'docs/performance.md',
    'this version is {} × ({}–{}; {} rounds) on Node.js 24 and {} × ({}–{}) on Node.js 20',
    ...[memoryAB.node24, memoryAB.node20].flatMap((ab: Json, i) => [
      f3(ab.ratio),
      f3(Math.min(...ab.rounds)),
      f3(Math.max(...ab.rounds)),
      ...(i === 0 ? [ab.rounds.length] : []),
    ]),
  ],
  [
    'docs/performance.md',
    'On Node.js 24 a middleware that does nothing but set the seven headers is {} of bare',
    f3(earlier.ceiling.pairs[2].ratio),
  ],
  [
    'docs/performance.md',
    'is {} of bare in this run (its target met; {} in the run before, without change 18)',
    f3(S['redis cluster'].ratio),
    f3(masters.runBefore.ratio),
  ],
  [
    'docs/performance.md',
    'so Redis reads {} times per request in all, against {} for one Redis',
    f2(S['redis cluster'].redis.readsPerRequest),
    f2(S.redis.redis.readsPerRequest),
  ],
  [
    'docs/performance.md',
    'holds every slot (`BENCH_CLUSTER_MASTERS=1`) is {} ({}), one of three masters {} ({})',
    ...[masters.one, masters.three].flatMap((m: Json) => [f3(m.ratio), m.rounds.map(f3).join(', ')]),
  ],
  [
    'docs/performance.md',
    'a middleware that only sets them is {} of bare on Node.js 24',
    f3(earlier.ceiling.pairs[2].ratio),
  ],
  [
    'docs/performance.md',
    'a middleware that does nothing but set them is {} of bare there, before it counts anything',
    f3(earlier.ceiling.pairs[2].ratio),
  ],
  [
    'docs/performance.md',
    'costs {} µs a request here ({} against {})',
    earlier.ceiling.pairs[1].us - earlier.ceiling.pairs[1].referenceUs,
    earlier.ceiling.pairs[1].us,
    earlier.ceiling.pairs[1].referenceUs,
  ],
  ['docs/performance.md', 'while other work ran on it (load average {}–{})', ...earlier.changeRuns.before.loadAverage],
  ['docs/performance.md', 'on a quiet machine (load average {}–{})', ...earlier.changeRuns.after.loadAverage],
  ['docs/performance.md', '({} connections, every endpoint of listing B in turn', latest.settings.connections],
  [
    'docs/performance.md',
    '{} rounds of {} s after {} s of warm-up, the variants alternating',
    latest.settings.rounds,
    latest.settings.duration,
    latest.settings.warmup,
  ],
  [
    'docs/performance.md',
    'bare Express served {} to {} req/s from round to round',
    ...span(
      httpRuns('allowed', 'bare').map((r) => r.rps),
      thousands,
    ),
  ],
  [
    'docs/performance.md',
    'bare Express took {}–{} µs per request, express-rate-limit {}–{} and the memory store {}–{}; refused, the ' +
      "memory store {}–{} against express-rate-limit's {}–{}",
    ...[
      ['allowed', 'bare'],
      ['allowed', 'express-rate-limit'],
      ['allowed', 'listing-limits-memory'],
      ['refused', 'listing-limits-memory'],
      ['refused', 'express-rate-limit'],
    ].flatMap(([kind, variant]) =>
      span(
        httpRuns(kind as string, variant as string).map((r) => r.serverCpuUs),
        round,
      ),
    ),
  ],
  [
    'docs/performance.md',
    '({} µs with them, {} µs with `headers: false`)',
    f3(micro('listing B, token').ownCostUs),
    f3(micro('listing B, token, headers: false').ownCostUs),
  ],
  [
    'docs/performance.md',
    "({} × and {} ×, within this harness's spread)",
    f2(latest.micro.bigTableRatio),
    f2(latest.micro.slidingCostRatio),
  ],
  [
    'docs/performance.md',
    "({} bytes against {} with the memory store, {} against {} in a Redis instance's cache)",
    round(latest.bans.bytes.memoryStore),
    previous.bansBytes.memoryStore,
    round(latest.bans.bytes.redisStoreCache),
    previous.bansBytes.redisStoreCache,
  ],
  [
    'docs/performance.md',
    'holds 10,000 bans of the memory store to at most {} bytes each by token and {} by address',
    ...['token', 'address'].map(
      (by) =>
        (new RegExp(`by: '${by}', most: (\\d+)`).exec(source('__tests__/runtime-cost.test.ts')) ?? [])[1] as string,
    ),
  ],
  [
    'docs/performance.md',
    'a batch of {} took {} ms from none and {} ms from {} with the memory store, {} and {} ms with Redis',
    latest.bans.batch,
    f1(latest.bans.memory.batchMs[0]),
    f1(latest.bans.memory.batchMs[latest.bans.bans - latest.bans.batch]),
    thousands(latest.bans.bans - latest.bans.batch),
    f1(latest.bans.redis.batchMs[0]),
    f1(latest.bans.redis.batchMs[latest.bans.bans - latest.bans.batch]),
  ],
  [
    'docs/performance.md',
    'slow down: {} µs with no ban and {} µs with {} in process with the memory store; with Redis its latency is one ' +
      'round trip to Redis, {} and {} µs',
    f1(latest.bans.memory.unrelatedUs[0]),
    f1(latest.bans.memory.unrelatedUs[latest.bans.bans]),
    thousands(latest.bans.bans),
    f1(latest.bans.redis.unrelatedUs[0]),
    f1(latest.bans.redis.unrelatedUs[latest.bans.bans]),
  ],
  [
    'docs/performance.md',
    'cost nothing the ruler can see ({} × without) and 10,000 banned addresses {}% ({} ×)',
    f3(S['memory with 10k banned tokens'].ratio),
    round((1 - S['memory with 10k banned addresses'].ratio) * 100),
    f3(S['memory with 10k banned addresses'].ratio),
  ],
  [
    'docs/performance.md',
    "loads the operator's page (`bench/pages.js`, alone: `npm run build && node bench/pages.js`) {} times",
    pagesAt.loads,
  ],
  [
    'docs/performance.md',
    'one load is {} KiB and takes {} ms in the server with the memory store and {} ms with Redis (medians)',
    (pagesAt.memory.requests.bytes / 1024).toFixed(0),
    f1(pagesAt.memory.requests.medianMs),
    f1(pagesAt.redis.requests.medianMs),
  ],
  [
    'docs/performance.md',
    'bans in force besides add {} and {} ms',
    f1(pagesAt.memory.bans.medianMs - pagesAt.memory.requests.medianMs),
    f1(pagesAt.redis.bans.medianMs - pagesAt.redis.requests.medianMs),
  ],
  [
    'docs/performance.md',
    'checks the size with both stores: under {} MiB',
    source('__tests__/pages-operator.test.ts').includes('const ONE_MIB = 1024 * 1024;') ? 1 : 'another size',
  ],

  // docs/stores.md
  [
    'docs/stores.md',
    "a tracked counter takes {} bytes ({} with rate-limiter-flexible's `RateLimiterMemory`)",
    round(latest.memory.bytesPerCounter),
    round(latest.memory.bytesPerCounterRateLimiterMemory),
  ],
  [
    'docs/stores.md',
    'a client key takes {} bytes with one request in its window, {} with 25 and {} with 100 ({} to {} bytes per ' +
      'request)',
    round(sliding[1]),
    round(sliding[25]),
    thousands(sliding[100]),
    ...span(perRequest, round),
  ],
  [
    'docs/stores.md',
    'so at most about {} KB per client and row',
    round((sliding[100] + (10_000 - 100) * (perRequest[1] as number)) / 1000),
  ],
  [
    'docs/stores.md',
    'A sliding key takes about {} bytes in Redis with one request in its window',
    earlier.redisSlidingKey.bytes[1],
  ],
  [
    'docs/stores.md',
    '`MEMORY USAGE` gave {} with 25 and {} with 100, measured once with Redis 7.0.15',
    earlier.redisSlidingKey.bytes[25],
    thousands(earlier.redisSlidingKey.bytes[100]),
  ],
  [
    'docs/stores.md',
    'With ioredis, an allowed request costs Redis {} µs of CPU, against {} µs with one Lua script',
    ...((/([\d.]+)\*\* µs instead of ([\d.]+)/.exec(change('13').measured) ?? []).slice(1) as string[]),
  ],
  ['docs/stores.md', '{} bytes each in the memory bench', round(latest.memory.bytesPerRememberedRefusal)],
  [
    'docs/stores.md',
    'so at most about {} MB per counter',
    f1((10_000 * latest.memory.bytesPerRememberedRefusal) / 1e6),
  ],

  // docs/bans-and-grants.md
  [
    'docs/bans-and-grants.md',
    '{} bytes in the copy of an instance of the Redis store',
    round(latest.bans.bytes.redisStoreCache),
  ],
  ['docs/bans-and-grants.md', '{} bytes with the memory store', round(latest.bans.bytes.memoryStore)],
  ['docs/bans-and-grants.md', '{} bytes of Redis memory per record', round(latest.bans.bytes.redisPerRecord)],
  [
    'docs/bans-and-grants.md',
    'The history adds at most its 1,000 entries, about {} KB',
    round(latest.bans.bytes.redisHistory / 1000),
  ],

  // docs/client.md
  ['docs/client.md', 'Measured with `CLIENT_BENCH_ROUNDS={} npm run bench:client`', client.rounds],
  ['docs/client.md', 'Node {}, medians of {} rounds', client.node, client.rounds],
  [
    'docs/client.md',
    '{} of {} within the bound, and {} refusals counted by the servers',
    clientRows.filter((r) => r.ms <= r.bound).length,
    clientRows.length,
    clientRows.reduce((n, r) => n + r.limited, 0),
  ],
  [
    'docs/client.md',
    'Every endpoint took {} to {} ms beyond 2W. That is {} to {} times its mean round trip',
    ...span(
      clientRows.map((r) => r.ms - 2 * r.windowMs),
      round,
    ),
    ...span(
      clientRows.map((r) => (r.ms - 2 * r.windowMs) / r.rtt),
      f1,
    ),
  ],
  [
    'docs/client.md',
    'Every endpoint took {} to {} of the bound',
    ...span(
      clientRows.map((r) => r.ms / r.bound),
      f2,
    ),
  ],
];
