// The blocks of the manual made from the benchmark's results (bench/results/*.json): docs/performance.md's tables and
// quoted outputs, and docs/client.md's. Each sits between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`.
// `node bench/docs.js` writes them into the pages after a run; __tests__/bench-figures.test.ts fails when a page's
// block is not what the results make, and checks the figures of the prose around them.
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { bansLines, clientLines, httpLines, memoryLines, microLines, pagesLines } = require('./reports.js');

const root = join(__dirname, '..');
const results = (name) => JSON.parse(readFileSync(join(__dirname, 'results', `${name}.json`), 'utf8'));

const r3 = (x) => x.toFixed(3);
/** A signed figure as the manual writes it: a true minus sign, and `+` where `plus` asks for it. */
const signed = (x, digits, plus = '') => (x < 0 ? `−${(-x).toFixed(digits)}` : `${plus}${x.toFixed(digits)}`);
const list = (values) => values.map(r3).join(', ');

/** The pair of the ruler each target is read on, in the order of `sliced.targets`. */
const targetPairs = [
  'memory',
  'memory vs express-rate-limit',
  'redis',
  'memory refused',
  'redis refused',
  'redis refused',
  'memory sliding',
  'memory sliding refused',
  'redis sliding',
  'redis sliding refused',
  'memory with 10k banned tokens',
  'memory with 10k banned addresses',
  'redis node-redis',
  'redis cluster',
  'redis glide',
  'redis sliding of bare',
  'redis',
];

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
  const rows = latest.sliced.targets.map((t, i) => {
    const pair = targetPairs[i];
    const s = summary[pair];
    const figure = (value) => {
      if (value === undefined || value === null) return '-';
      return t.digits === 4 ? String(value) : t.digits === 3 ? signed(value, 3) : value.toFixed(t.digits);
    };
    if (!s) return [t.target, figure(previous.targets[i]), 'not measured', '', figure(E.targets[i])];
    let now = `**${figure(t.value)}** (${list(s.rounds)})`;
    if (i === 0)
      now += `; ${Math.round(s.cpuUsPerRequest)} against ${Math.round(s.referenceCpuUsPerRequest)} µs per request`;
    if (i === 1) now += `; express-rate-limit is ${r3(summary['express-rate-limit'].ratio)} of bare`;
    if (i === 2) now += `; ${s.redis.perRequest.toFixed(4)} Redis scripts per request`;
    if (i === 5) now = `**${t.value}** commands (besides the runtime state's reads every 250 ms)`;
    if (i === 10 || i === 11)
      now = `${r3(s.ratio)} × without (${list(s.rounds)}): the figure of bare moves by **${figure(t.value)}**`;
    if (i >= 12 && i <= 15) now += `; Redis ${s.redis.usPerRequest.toFixed(1)} µs per request`;
    if (i === 16) now = `**${figure(t.value)}** µs; ${s.redis.perRequest.toFixed(3)} commands per request`;
    const then = E.targets[i];
    if (then === undefined) return [t.target, figure(previous.targets[i]), now, t.met ? 'met' : 'missed', '-'];
    const ratio = E.ratios?.[pair];
    const rounds =
      E.rounds?.[pair] && `${ratio === undefined ? '' : `${r3(ratio)} × without: `}${list(E.rounds[pair])}`;
    let e = `${figure(then)}${rounds ? ` (${rounds})` : ''}`;
    if (!meets(t.target, then))
      e = `**${figure(then)}**${rounds ? ` (${rounds})` : ''}: missed, by ${r3(missedBy(t.target, then))}`;
    return [t.target, figure(previous.targets[i]), now, t.met ? 'met' : 'missed', e];
  });
  return table(
    ['Target', '0.3.0', 'This version: median (the 3 rounds)', '', 'Run E, the same code'],
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

function changes(earlier, which) {
  return table(
    which === 'before' ? ['Change', 'Measured against the build before it', 'Kept'] : ['Change', 'Measured', 'Kept'],
    ['---', '---', '---'],
    earlier.changes.filter((c) => c.table === which).map((c) => [c.change, c.measured, c.kept]),
  );
}

const fence = (lines) => ['```text', ...lines, '```'];

/** Every block, by page and name: its lines. */
function blocks() {
  const latest = results('latest');
  const earlier = results('earlier');
  return {
    'docs/performance.md': {
      targets: targets(latest, earlier),
      profile: profileTable(results('profile')),
      ceiling: ceiling(earlier),
      'changes-before': changes(earlier, 'before'),
      'changes-after': changes(earlier, 'after'),
      http: fence(httpLines(latest.http)),
      'micro-memory': fence([...microLines(latest.micro), '', ...memoryLines(latest.memory)]),
      bans: fence(bansLines(latest.bans)),
      pages: fence(pagesLines(latest.pages)),
    },
    'docs/client.md': { client: fence(clientLines(results('client').report)) },
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
