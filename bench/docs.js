// The blocks made from the benchmark's results (bench/results/*.json): the tables and quoted outputs of the README,
// docs/performance.md, docs/client.md and bench/README.md. Each sits between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`.
// `node bench/docs.js` writes them into the pages after a run; __tests__/bench-figures.test.ts fails when a page's
// block is not what the results make, and checks the figures of the prose around them.
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { TARGETS } = require('./pairs.js');
const { bansLines, clientLines, httpLines, memoryLines, microLines, pagesLines } = require('./reports.js');

const root = join(__dirname, '..');
const results = (name) => JSON.parse(readFileSync(join(__dirname, 'results', `${name}.json`), 'utf8'));

const r3 = (x) => x.toFixed(3);
/** A signed figure as the manual writes it: a true minus sign, and `+` where `plus` asks for it. */
const signed = (x, digits, plus = '') => (x < 0 ? `−${(-x).toFixed(digits)}` : `${plus}${x.toFixed(digits)}`);
const list = (values) => values.map(r3).join(', ');
/** What a table says for a figure its run did not measure (an older run, or a part left out), never a number. */
const NOT_MEASURED = 'not measured in this run';

/**
 * Every target of the ruler (bench/pairs.js), with what the run measured of it: its value (`null` when the run did
 * not measure it, as a run from before the target was has no such figure) and whether it was met.
 */
const targetsOf = (latest) =>
  TARGETS.map(({ target, pair, digits = 3 }) => {
    const run = latest.sliced.targets.find((t) => t.target === target);
    return { target, pair, digits, value: run?.value ?? null, met: run?.met ?? null };
  });

/** Whether a value meets its target, as the target's words say: `at least x`, `within x`, `at most x` or `0 …`. */
function meets(target, value) {
  const atLeast = /at least ([\d.]+)/.exec(target);
  if (atLeast) return value >= Number(atLeast[1]);
  const within = /(?:within|at most) ([\d.]+)/.exec(target);
  if (within) return Math.abs(value) <= Number(within[1]);
  return value === 0;
}

/** By how much a value misses its target. */
function missedBy(target, value) {
  const bound = Number((/(?:at least|within|at most) ([\d.]+)/.exec(target) ?? [])[1]);
  return Math.abs(Math.abs(value) - bound);
}

function table(header, align, rows) {
  return [`| ${header.join(' | ')} |`, `| ${align.join(' | ')} |`, ...rows.map((row) => `| ${row.join(' | ')} |`)];
}

/** The targets: 0.3.0's run, this version's median and rounds, whether met, run E. */
function targets(latest, earlier) {
  const { summary } = latest.sliced;
  const { E, '0.3.0': previous } = earlier.runs;
  const rows = targetsOf(latest).map((t, i) => {
    const s = summary[t.pair];
    const figure = (value) => {
      if (value === undefined || value === null) return '-';
      return t.digits === 4 ? String(value) : t.digits === 3 ? signed(value, 3) : value.toFixed(t.digits);
    };
    const then = E.targets[i];
    let e = '-';
    if (then !== undefined) {
      const ratio = E.ratios?.[t.pair];
      const rounds =
        E.rounds?.[t.pair] && `${ratio === undefined ? '' : `${r3(ratio)} × without: `}${list(E.rounds[t.pair])}`;
      e = `${figure(then)}${rounds ? ` (${rounds})` : ''}`;
      if (!meets(t.target, then))
        e = `**${figure(then)}**${rounds ? ` (${rounds})` : ''}: missed, by ${r3(missedBy(t.target, then))}`;
    }
    if (!s || t.value === null) return [t.target, figure(previous.targets[i]), NOT_MEASURED, '', e];
    let now = `**${figure(t.value)}** (${list(s.rounds)})`;
    if (i === 0)
      now += `; ${Math.round(s.cpuUsPerRequest)} against ${Math.round(s.referenceCpuUsPerRequest)} µs per request`;
    if (i === 1) now += `; express-rate-limit is ${r3(summary['express-rate-limit'].ratio)} of bare`;
    if (i === 2) now += `; ${s.redis.perRequest.toFixed(4)} Redis commands per request`;
    if (i === 5) now = `**${t.value}** commands (besides the runtime state's reads every 250 ms)`;
    if (i === 10 || i === 11)
      now = `${r3(s.ratio)} × without (${list(s.rounds)}): the figure of bare moves by **${figure(t.value)}**`;
    if (i >= 12 && i <= 15 && s.redis.usPerRequest !== undefined)
      now += `; Redis ${s.redis.usPerRequest.toFixed(1)} µs per request`;
    if (i === 16) now = `**${figure(t.value)}** µs; ${s.redis.perRequest.toFixed(3)} commands per request`;
    return [t.target, figure(previous.targets[i]), now, t.met ? 'met' : 'missed', e];
  });
  return table(
    ['Target', '0.3.0', 'This version: median (the 3 rounds)', '', 'Run E (Node.js 20, an earlier build)'],
    ['---', '---', '---', '---', '---'],
    rows,
  );
}

/** The groups of bench/profile.js as the manual names them, each the sum of the profile's groups it holds. */
const profileGroups = [
  ["listing-limits' own functions", ['listing-limits']],
  ["Node's header handling (`setHeader` and its checks, `writeHead`, `_storeHeader`)", ["Node's header handling"]],
  ["Node's HTTP, streams and socket writes", ["Node's HTTP, streams and socket writes"]],
  ['Express and its packages', ['Express and its packages']],
  ['garbage collector', ['garbage collector']],
  ["Node's other modules, V8 and native", ["Node's other modules (events, timers, ticks)", 'V8, native and other']],
];

/** This version's profile: µs of CPU per request by group, bare Express and the memory store. */
function profileTable(profile) {
  const [bare, memory] = profile.results;
  const of = (side, groups) => groups.reduce((sum, group) => sum + (side.groups[group] ?? 0), 0);
  const cell = (us) => (us === 0 ? '0' : us.toFixed(1));
  const rows = profileGroups.map(([name, groups]) => {
    const [b, m] = [of(bare, groups), of(memory, groups)];
    return [name, cell(b), cell(m), signed(m - b, 1, '+')];
  });
  const [b, m] = [bare.usPerRequest, memory.usPerRequest];
  rows.push(['**Total**', `**${b.toFixed(1)}**`, `**${m.toFixed(1)}**`, `**${signed(m - b, 1, '+')}**`]);
  return table(['µs of CPU per request', 'bare', 'memory', 'beyond bare'], ['---', '---:', '---:', '---:'], rows);
}

function ceiling(earlier) {
  return table(
    ['A middleware that', 'Of bare (median; the rounds)', 'µs per request'],
    ['---', '---', '---'],
    earlier.ceiling.pairs.map((p) => [
      p.middleware,
      `${r3(p.ratio)} (${list(p.rounds)})`,
      `${p.us} against ${p.referenceUs}`,
    ]),
  );
}

const fence = (lines) => ['```text', ...lines, '```'];

const thousands = (x) => Math.round(x).toLocaleString('en-US');

/** The run the figures come from: its date, the machine, and the load beside the ruler. */
function runLine(latest) {
  const { machine, date } = latest;
  const loads = latest.sliced.loadAverage.map((l) => l[0]);
  const load = `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`;
  return (
    `\`npm run bench\` of ${date.slice(0, 10)}, ${machine.cpus} × ${machine.cpu}, ${machine.memoryGiB} GiB, ` +
    `Node ${machine.node}; load average (1 minute) ${load} during the ruler, ${latest.sliced.settings.rounds} rounds.`
  );
}

/** The Redis clients of the ruler, by pair, as the tables call each. */
const redisPairs = [
  ['redis', 'ioredis `Redis` (the default client)'],
  ['redis node-redis', 'node-redis `createClient`'],
  ['redis glide', 'Valkey GLIDE `GlideClient`'],
  ['redis cluster', 'ioredis `Cluster` of 3 masters, per master'],
  ['redis sliding of bare', "ioredis `Redis`, `window: 'sliding'`"],
];
/** Each client's pair against its floor, one `INCR` a request with that client. */
const floorOf = Object.fromEntries(
  ['redis', 'redis node-redis', 'redis glide', 'redis cluster'].map((pair) => [pair, `${pair} vs floor`]),
);

/**
 * What one Redis core carries with each client, from the ruler's pairs against bare Express: Redis' CPU per allowed
 * request (on the master of the request's key, for a Cluster), the requests a second it serves at one core, and the
 * app's CPU per request it serves alongside (cores of the app's servers per core of Redis). A figure the run did not
 * measure (a run from before Redis' CPU was measured, or without Redis) is said to be so.
 */
function scale(latest) {
  const { summary } = latest.sliced;
  const rows = redisPairs.map(([pair, client]) => {
    const s = summary[pair];
    if (!s) return [client, ...Array(7).fill(NOT_MEASURED)];
    const redisUs = pair === 'redis cluster' ? s.redis?.busiestUsPerRequest : s.redis?.usPerRequest;
    const known = (value, format) => (value === undefined ? NOT_MEASURED : format(value));
    const floor = summary[floorOf[pair]];
    return [
      client,
      `${r3(s.ratio)} (${list(s.rounds)})`,
      floor ? `${r3(floor.ratio)} (${list(floor.rounds)})` : floorOf[pair] ? NOT_MEASURED : '-',
      `${Math.round(s.cpuUsPerRequest)} (bare ${Math.round(s.referenceCpuUsPerRequest)})`,
      known(redisUs, (us) => us.toFixed(1)),
      known(s.redis?.perRequest, (n) => n.toFixed(2)),
      known(redisUs, (us) => thousands(1e6 / us)),
      known(redisUs, (us) => (s.cpuUsPerRequest / us).toFixed(1)),
    ];
  });
  // A run of the bench from before it measured Redis' CPU measured the build before it too: one script a request.
  const before = summary.redis?.redis && summary.redis.redis.usPerRequest === undefined;
  const note = before
    ? [
        '',
        "This run is from before `npm run bench` measured Redis' CPU and each client: what it did not measure is " +
          `*${NOT_MEASURED}*, and its default client's Redis commands per request are those of the build it ` +
          'measured, one Lua script per request.',
      ]
    : [];
  return [
    runLine(latest),
    ...note,
    '',
    ...table(
      [
        'Client',
        'Of bare Express (rounds)',
        'Of its floor (rounds)',
        'App CPU µs per request',
        'Redis CPU µs per request',
        'Redis commands per request',
        'Requests per second one Redis core serves',
        'App cores one Redis core carries',
      ],
      ['---', '---', '---', '---:', '---:', '---:', '---:', '---:'],
      rows,
    ),
  ];
}

/** What the package costs per request against bare Express beside it, allowed and refused, and what one Redis core carries. */
function cost(latest) {
  const { summary } = latest.sliced;
  const cell = (pair) => {
    const s = summary[pair];
    if (!s) return NOT_MEASURED;
    return `${Math.round(s.cpuUsPerRequest)} (${Math.round(s.referenceCpuUsPerRequest)})`;
  };
  const method = (pair) => (summary[pair]?.method === 'paced' ? 'paced' : 'time-sliced');
  const rows = [
    ['express-rate-limit 8, its memory store', 'express-rate-limit', true],
    ['listing-limits, the memory store', 'memory', true],
    ['one `INCR` a request with ioredis, then the headers: the floor', 'redis floor', false],
    ['express-rate-limit 8 with rate-limit-redis, ioredis', 'express-rate-limit redis', false],
    ['listing-limits, the Redis store (ioredis)', 'redis', true],
  ].map(([name, pair, refused]) => [name, method(pair), cell(pair), refused ? cell(`${pair} refused`) : '-']);
  const redisUs = summary.redis?.redis?.usPerRequest;
  const redis =
    redisUs === undefined
      ? [`What one Redis core carries: ${NOT_MEASURED}.`]
      : [
          `Woken for each command, as under the paced load, one Redis core serves ${thousands(1e6 / redisUs)} ` +
            `allowed requests a second with the default client (${redisUs.toFixed(1)} µs of Redis' CPU each): the ` +
            `requests of ${(summary.redis.cpuUsPerRequest / redisUs).toFixed(1)} app cores. A busier Redis reads ` +
            'several commands at each wake-up, and serves more.',
        ];
  const versus = summary['memory vs express-rate-limit'];
  const side = versus
    ? [
        `Side by side, express-rate-limit spends ${r3(versus.ratio)} × the memory store's CPU per request ` +
          `(${Math.round(versus.referenceCpuUsPerRequest)} against ${Math.round(versus.cpuUsPerRequest)} µs).`,
      ]
    : [];
  return [
    runLine(latest),
    '',
    ...table(
      ['µs of server CPU per request (bare Express beside it)', 'Load', 'Allowed', 'Refused'],
      ['---', '---', '---:', '---:'],
      rows,
    ),
    '',
    ...side,
    ...redis,
  ];
}

/**
 * The memory store and its headers on the ruler: the store against bare Express with its seven headers and without
 * them (`headers: false`), and a middleware that does nothing but set them (this run's ceiling pair when it ran, else
 * the earlier run's).
 */
function moonshot(latest, earlier) {
  const { summary } = latest.sliced;
  const ofRun = (pair) => (summary[pair] ? `${r3(summary[pair].ratio)} (${list(summary[pair].rounds)})` : NOT_MEASURED);
  const ceilingRun = summary['ceiling headers'];
  const ceilingEarlier = earlier.ceiling.pairs.find((p) => p.middleware.startsWith('sets the seven'));
  const headersOnly = ceilingRun
    ? [ofRun('ceiling headers'), 'this run']
    : [`${r3(ceilingEarlier.ratio)} (${list(ceilingEarlier.rounds)})`, "the ceiling pairs' run (the table below)"];
  const [withHeaders, without] = [summary.memory, summary['memory without headers']];
  const headersCost = withHeaders && without ? `${r3(withHeaders.ratio / without.ratio)} × without` : NOT_MEASURED;
  // What 0.92 of bare leaves the middleware, in this run's CPU per request of the memory pair's two servers.
  const budget = withHeaders
    ? [
        '',
        `0.92 of bare leaves ${(withHeaders.referenceCpuUsPerRequest / 0.92 - withHeaders.referenceCpuUsPerRequest).toFixed(1)} ` +
          `µs per request beyond bare Express' ${withHeaders.referenceCpuUsPerRequest.toFixed(1)} in this run's memory ` +
          `pair; the memory store spent ${(withHeaders.cpuUsPerRequest - withHeaders.referenceCpuUsPerRequest).toFixed(1)}.`,
      ]
    : [];
  return [
    ...table(
      ['On the ruler, against bare Express', 'Of bare (rounds)', 'Run'],
      ['---', '---', '---'],
      [
        ['the memory store, its seven headers sent (the default)', ofRun('memory'), 'this run'],
        ['the memory store, `headers: false`', ofRun('memory without headers'), 'this run'],
        ["the memory store's headers: its figure with them against without", headersCost, 'this run'],
        ['a middleware that only sets the seven headers (`res.setHeader`)', ...headersOnly],
      ],
    ),
    ...budget,
  ];
}

/** Every block, by page and name: its lines. */
function blocks() {
  const latest = results('latest');
  const earlier = results('earlier');
  return {
    'docs/performance.md': {
      cost: cost(latest),
      clients: scale(latest),
      profile: profileTable(results('profile')),
      'micro-memory': fence([...microLines(latest.micro), '', ...memoryLines(latest.memory)]),
      bans: fence(bansLines(latest.bans)),
      pages: fence(pagesLines(latest.pages)),
      http: fence(httpLines(latest.http)),
    },
    'bench/README.md': {
      targets: targets(latest, earlier),
      moonshot: moonshot(latest, earlier),
      ceiling: ceiling(earlier),
    },
    'docs/client.md': { client: fence(clientLines(results('client').report)) },
    'README.md': { cost: cost(latest) },
  };
}

const marker = (name) => new RegExp(`(<!-- bench:${name} -->\\n)[\\s\\S]*?(<!-- /bench:${name} -->)`);

/** The text between a block's markers on a page, or undefined when the page has no such block. */
function blockOf(text, name) {
  const found = marker(name).exec(text);
  return found ? found[0].slice(found[1].length, -found[2].length).replace(/\n$/, '') : undefined;
}

if (require.main === module) {
  for (const [page, named] of Object.entries(blocks())) {
    const path = join(root, page);
    let text = readFileSync(path, 'utf8');
    for (const [name, lines] of Object.entries(named)) {
      if (blockOf(text, name) === undefined) throw new Error(`${page} has no <!-- bench:${name} --> block`);
      text = text.replace(marker(name), (_all, open, close) => `${open}${lines.join('\n')}\n${close}`);
    }
    writeFileSync(path, text);
    console.log(`Wrote the blocks of ${page}: ${Object.keys(named).join(', ')}`);
  }
}

module.exports = { blockOf, blocks };
