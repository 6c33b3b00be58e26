// `npm run bench`: the side-by-side ruler against bare Express and express-rate-limit (bench/sliced.js), then the
// autocannon view over every endpoint, own cost, memory, bans at scale, the operator's page at scale.
// Writes bench/results/latest.json and bench/results/chart.svg. Settings: BENCH_PARTS (which parts run, default
// sliced,http,micro,memory,bans,pages), BENCH_SLICED_ROUNDS, BENCH_SLICED_DURATION, BENCH_SLICED_PAIRS (see
// bench/sliced.js); for the autocannon view BENCH_ROUNDS, BENCH_DURATION (s), BENCH_WARMUP (s, load before each
// measured run), BENCH_CONNECTIONS.
const { execFileSync } = require('node:child_process');
const { cpus, totalmem } = require('node:os');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { runHttp } = require('./http.js');
const { runSliced, report: slicedReport } = require('./sliced.js');
const { runMemory } = require('./memory.js');
const { runMicro } = require('./micro.js');
const { runBans } = require('./bans.js');
const { runPages } = require('./pages.js');
const { bansLines, httpLines, memoryLines, microLines, pagesLines } = require('./reports.js');

const settings = {
  rounds: Number(process.env.BENCH_ROUNDS ?? 3),
  duration: Number(process.env.BENCH_DURATION ?? 5),
  warmup: Number(process.env.BENCH_WARMUP ?? 2),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 32),
};
const log = (line) => process.stdout.write(`${line}\n`);
const PARTS = ['sliced', 'http', 'micro', 'memory', 'bans', 'pages'];
const parts = new Set((process.env.BENCH_PARTS ?? PARTS.join(',')).split(','));
/** The side-by-side figures as bars: each pair's ratio to its reference, 1.0 the reference itself. */
function chart(summary) {
  const bars = Object.entries(summary).map(([name, s]) => ({ label: `${name} / ${s.reference}`, value: s.ratio }));
  const max = Math.max(1.2, ...bars.map((b) => b.value));
  const rowHeight = 28;
  const width = 900;
  const left = 420;
  const scale = (v) => ((width - left - 60) * v) / max;
  const height = bars.length * rowHeight + 40;
  const rects = bars
    .map((b, i) => {
      const y = 30 + i * rowHeight;
      const fill = b.label.startsWith('express-rate-limit') ? '#4a6fa5' : '#2f7d4f';
      return `<text x="${left - 8}" y="${y + 17}" text-anchor="end">${b.label}</text><rect x="${left}" y="${y + 4}" width="${scale(b.value).toFixed(1)}" height="18" fill="${fill}"/><text x="${left + scale(b.value) + 6}" y="${y + 17}">${b.value.toFixed(2)}</text>`;
    })
    .join('\n');
  const one = left + scale(1);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">
<text x="10" y="18" font-weight="bold">Side by side: the reference's server CPU per request ÷ the variant's (median of the rounds; dashed: 1.0)</text>
${rects}
<line x1="${one.toFixed(1)}" y1="26" x2="${one.toFixed(1)}" y2="${height - 6}" stroke="#444" stroke-dasharray="4 3"/>
</svg>
`;
}

async function main() {
  const machine = {
    cpus: cpus().length,
    cpu: cpus()[0]?.model,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  };
  log(`listing-limits benchmark on ${machine.cpus} × ${machine.cpu}, ${machine.memoryGiB} GiB, Node ${machine.node}`);
  const report = { date: new Date().toISOString(), machine, settings, parts: PARTS.filter((p) => parts.has(p)) };

  if (parts.has('sliced')) {
    log('\nSide by side (bench/sliced.js): each variant against its reference server on one CPU, paced or time-sliced');
    report.sliced = await runSliced({ log });
    log('');
    for (const line of slicedReport(report.sliced)) log(line);
    if (report.sliced.aboveFloor.length > 0) {
      throw new Error(
        `a Redis store costs less than its floor (${report.sliced.aboveFloor.join('; ')}): the load changed. ` +
          'Nothing is written; run it again on a quiet machine.',
      );
    }
  }

  // The rest runs on CPU 0 (the autocannon view's servers on CPU 1), unless the caller pinned it already.
  if (process.env.BENCH_PINNED !== '1') {
    try {
      execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
    } catch {
      log('taskset not available: server and load generator share the CPUs.');
    }
  }
  if (parts.has('http')) {
    log(
      `\nautocannon over every endpoint: ${settings.rounds} rounds, ${settings.duration} s per run after ${settings.warmup} s of warm-up, ${settings.connections} connections\n`,
    );
    report.http = await runHttp({ ...settings, log });
    log(
      '\nHTTP (medians over rounds; ratios taken within each round; "vs bare" is against bare Express serving the same requests)',
    );
    for (const line of httpLines(report.http)) log(line);
  }
  if (parts.has('micro')) {
    report.micro = await runMicro();
    log('\nMiddleware alone (in process, mocked request and response)');
    for (const line of microLines(report.micro)) log(line);
  }
  if (parts.has('memory')) {
    report.memory = await runMemory();
    log('\nMemory');
    for (const line of memoryLines(report.memory)) log(line);
  }
  if (parts.has('bans')) {
    report.bans = await runBans();
    log('\nBans (in process, mocked requests)');
    for (const line of bansLines(report.bans)) log(line);
  }
  if (parts.has('pages')) {
    report.pages = await runPages();
    log("\nThe operator's page (over HTTP, timed in the server)");
    for (const line of pagesLines(report.pages)) log(line);
  }

  const results = join(__dirname, 'results');
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  const written = ['bench/results/latest.json'];
  if (report.sliced) {
    writeFileSync(join(results, 'chart.svg'), chart(report.sliced.summary));
    written.push('bench/results/chart.svg');
  }
  log(`\nWrote ${written.join(' and ')}`);
}

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

module.exports = { chart };
