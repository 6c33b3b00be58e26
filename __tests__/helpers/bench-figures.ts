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
export const [f1, f2, f3] = [fixed(1), fixed(2), fixed(3)];
const round = (x: number) => String(Math.round(x));
export const thousands = (x: number) => Math.round(x).toLocaleString('en-US');
const span = (values: number[], format: (x: number) => string) => [
  format(Math.min(...values)),
  format(Math.max(...values)),
];

export const S = latest.sliced.summary;
export const T = latest.sliced.targets as { target: string; value: number; met: boolean }[];
const at = (i: number) => T[i] as (typeof T)[number];
export const E = earlier.runs.E;
/** The number a target's words set: `at least 0.88`, `within 0.02`. */
export const bound = (i: number) => Number((/(?:at least|within) ([\d.]+)/.exec(at(i).target) ?? [])[1]);
const [bare, memory] = profile.results as [Json, Json];
/** A function of the package in the memory store's profile, by its name or, for an anonymous one, its file. */
const top = (name: string) =>
  (memory.package as Json[]).find((t) => t.name.startsWith(`${name} `) || t.name.includes(` ${name}:`))
    ?.usPerRequest as number;
const lookup = top('contract/match.js');
const own = memory.groups['listing-limits'] as number;
const sliding = latest.memory.bytesPerSlidingKey;
const perRequest = [(sliding[25] - sliding[1]) / 24, (sliding[100] - sliding[25]) / 75];
const clientRows = client.report as Json[];

/** Each figure of the prose: its page, its words as the page has them with `{}` for each value, and the values. */
export const figures: [string, string, ...(string | number)[]][] = [
  // docs/performance.md (its tables and outputs are blocks, made from the results)
  [
    'docs/performance.md',
    'cost the memory store {} µs of CPU per request more than bare Express ({} against {}). That is about {}%.',
    round(S.memory.cpuUsPerRequest - S.memory.referenceCpuUsPerRequest),
    round(S.memory.cpuUsPerRequest),
    round(S.memory.referenceCpuUsPerRequest),
    round((S.memory.cpuUsPerRequest / S.memory.referenceCpuUsPerRequest - 1) * 100),
  ],
  [
    'docs/performance.md',
    'The Redis store spends {} µs per request. One `INCR` a request with the same client, then the same headers, ' +
      'spends {}: the floor. express-rate-limit with rate-limit-redis spends {}.',
    round(S['redis vs floor'].cpuUsPerRequest),
    round(S['redis vs floor'].referenceCpuUsPerRequest),
    round(S['express-rate-limit redis'].cpuUsPerRequest),
  ],
  [
    'docs/performance.md',
    "Node's header handling and its HTTP writes take {} of the {} µs the memory store adds",
    f1(memory.beyondBare["Node's header handling"] + memory.beyondBare["Node's HTTP, streams and socket writes"]),
    f1(memory.usPerRequest - bare.usPerRequest),
  ],
  [
    'docs/performance.md',
    "take {} µs: the route lookup {}, the header writer `one` {}, the middleware's own step {}",
    f1(own),
    f2(lookup),
    f2(top('one')),
    f2(top('listingLimitsMiddleware')),
  ],
  [
    'docs/performance.md',
    'its packages take {} µs more with the middleware than without',
    f1(memory.beyondBare['Express and its packages']),
  ],
  ['docs/performance.md', "loads the operator's page {} times over HTTP", latest.pages.loads],
  [
    'docs/performance.md',
    'checks the size with both stores: under {} MiB',
    source('__tests__/pages-operator.test.ts').includes('const ONE_MIB = 1024 * 1024;') ? 1 : 'another size',
  ],
  [
    'docs/performance.md',
    'on CPU 1 ({} connections, `GET {}` sent by {} clients in turn)',
    latest.sliced.settings.connections,
    latest.sliced.settings.path,
    latest.sliced.settings.clients,
  ],
  [
    'docs/performance.md',
    'every {} ms. It measures for {} s, after {} s of load on both',
    latest.sliced.settings.sliceMs,
    latest.sliced.settings.duration,
    latest.sliced.settings.warmup,
  ],
  ['docs/performance.md', 'Each pair is measured {} times in one run', latest.sliced.settings.rounds],
  [
    'docs/performance.md',
    '{} × {} (a shared VM), {} GiB, Node {}, Express 5',
    latest.machine.cpus,
    latest.machine.cpu,
    latest.machine.memoryGiB,
    latest.machine.node,
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
