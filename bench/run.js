// `npm run bench`: HTTP throughput against bare Express and express-rate-limit, own cost, memory, bans at scale,
// the operator's page at scale.
// Writes bench/results/latest.json and bench/results/chart.svg. Settings: BENCH_ROUNDS, BENCH_DURATION (s),
// BENCH_WARMUP (s, load before each measured run), BENCH_CONNECTIONS.
const { execFileSync } = require('node:child_process');
const { cpus, totalmem } = require('node:os');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { runHttp } = require('./http.js');
const { runMemory } = require('./memory.js');
const { runMicro } = require('./micro.js');
const { runBans, report: bansReport } = require('./bans.js');
const { runPages, report: pagesReport } = require('./pages.js');

const settings = {
  rounds: Number(process.env.BENCH_ROUNDS ?? 5),
  duration: Number(process.env.BENCH_DURATION ?? 5),
  warmup: Number(process.env.BENCH_WARMUP ?? 2),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 32),
};
const log = (line) => process.stdout.write(`${line}\n`);
const fixed = (n, digits = 2) => (n === null || n === undefined ? '-' : n.toFixed(digits));

function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join('  ');
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

function chart(summary) {
  const bars = summary.map((s) => ({
    label: `${s.kind}: ${s.variant}`,
    value: s.rps,
    note: s.vsBare === null ? '' : ` (${s.vsBare.toFixed(2)} × bare)`,
  }));
  const max = Math.max(...bars.map((b) => b.value));
  const rowHeight = 28;
  const width = 860;
  const left = 330;
  const height = bars.length * rowHeight + 40;
  const rects = bars
    .map((b, i) => {
      const y = 30 + i * rowHeight;
      const w = ((width - left - 150) * b.value) / max;
      const fill = b.label.includes('listing-limits') ? '#2f7d4f' : b.label.includes('bare') ? '#888888' : '#4a6fa5';
      return `<text x="${left - 8}" y="${y + 17}" text-anchor="end">${b.label}</text><rect x="${left}" y="${y + 4}" width="${w.toFixed(1)}" height="18" fill="${fill}"/><text x="${left + w + 6}" y="${y + 17}">${Math.round(b.value)}${b.note}</text>`;
    })
    .join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="13">
<text x="${left}" y="18" font-weight="bold">Requests per second (median of rounds), listing B routes</text>
${rects}
</svg>
`;
}

async function main() {
  if (process.env.BENCH_PINNED !== '1') {
    try {
      execFileSync('taskset', ['-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
    } catch {
      log('taskset not available: server and load generator share the CPUs.');
    }
  }
  const machine = {
    cpus: cpus().length,
    cpu: cpus()[0]?.model,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
  };
  log(`listing-limits benchmark on ${machine.cpus} × ${machine.cpu}, ${machine.memoryGiB} GiB, Node ${machine.node}`);
  log(
    `${settings.rounds} rounds, ${settings.duration} s per run after ${settings.warmup} s of warm-up, ${settings.connections} connections\n`,
  );

  const http = await runHttp({ ...settings, log });
  log(
    '\nHTTP (medians over rounds; ratios taken within each round; "vs bare" is against bare Express serving the same requests)',
  );
  log(
    table(
      [
        'case',
        'variant',
        'req/s',
        'p50 ms',
        'p99 ms',
        'server CPU µs/req',
        'vs bare',
        'vs express-rate-limit',
        'sliding vs fixed',
        'Redis scripts/req',
      ],
      http.summary.map((s) => [
        s.kind,
        s.variant,
        Math.round(s.rps),
        s.p50,
        s.p99,
        s.serverCpuUs === null ? '-' : Math.round(s.serverCpuUs),
        fixed(s.vsBare),
        fixed(s.vsExpressRateLimit),
        fixed(s.vsFixed),
        fixed(s.redisCommandsPerRequest, 3),
      ]),
    ),
  );

  const micro = await runMicro();
  log('\nMiddleware alone (in process, mocked request and response)');
  log(
    table(
      ['task', 'mean µs', 'own cost µs'],
      micro.rows.map((r) => [r.task, fixed(r.meanUs, 3), fixed(r.ownCostUs, 3)]),
    ),
  );
  log(`1,000-row table costs ${fixed(micro.bigTableRatio)} × listing B`);
  log(`sliding windows cost ${fixed(micro.slidingCostRatio)} × fixed windows (own cost, same table and tokens)`);

  const memory = await runMemory();
  log('\nMemory');
  log(`bytes per tracked counter (memory store): ${Math.round(memory.bytesPerCounter)}`);
  log(`bytes per remembered refusal (Redis store's local refusals): ${Math.round(memory.bytesPerRememberedRefusal)}`);
  log(
    `bytes per key of a sliding window holding 1, 25, 100 requests: ${Object.values(memory.bytesPerSlidingKey)
      .map((bytes) => Math.round(bytes))
      .join(', ')}`,
  );
  log(
    `bytes per tracked counter (rate-limiter-flexible's RateLimiterMemory): ${Math.round(memory.bytesPerCounterRateLimiterMemory)}`,
  );
  log(
    `heap growth after ${memory.n} distinct tokens: ${(memory.floodWithoutAuthenticate.heapGrowthBytes / 2 ** 20).toFixed(1)} MiB without authenticate, ${(memory.floodWithAuthenticate.heapGrowthBytes / 2 ** 20).toFixed(1)} MiB with authenticate`,
  );

  const bans = await runBans();
  log('\nBans (in process, mocked requests)');
  for (const line of bansReport(bans)) log(line);

  const pages = await runPages();
  log("\nThe operator's page (over HTTP, timed in the server)");
  for (const line of pagesReport(pages)) log(line);

  const results = join(__dirname, 'results');
  mkdirSync(results, { recursive: true });
  const report = { date: new Date().toISOString(), machine, settings, http, micro, memory, bans, pages };
  writeFileSync(join(results, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(results, 'chart.svg'), chart(http.summary));
  log('\nWrote bench/results/latest.json and bench/results/chart.svg');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
