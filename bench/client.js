// `npm run bench:client`: how fast listingClient is against its bound, in real time, against a server in another process.
// For every endpoint of listing B (windows of at most 2 s), fixed and sliding, with answers delayed 0 or 0 to 50 ms:
// N = 3 × limit calls sent at once, timed against ⌈N/L⌉·W plus one round trip per window, plus 10%.
// Writes bench/results/client.json. Settings: CLIENT_BENCH_ROUNDS (default 3).
const { spawn } = require('node:child_process');
const { once } = require('node:events');
const { mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { createInterface } = require('node:readline');
const { listings } = require('../dist/index.cjs');
const { listingClient } = require('../dist/client.cjs');
const { clientLines } = require('./reports.js');

const rounds = Number(process.env.CLIENT_BENCH_ROUNDS ?? 3);
const rows = listings.B.map((row) => ({ ...row, windowMs: Math.min(row.windowMs, 2000) }));
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];

async function startServer(window, delayMs) {
  const child = spawn(process.execPath, [join(__dirname, 'client-server.js'), JSON.stringify(rows), window, delayMs]);
  child.stderr.pipe(process.stderr);
  const [line] = await once(createInterface({ input: child.stdout }), 'line');
  return { url: `http://127.0.0.1:${line.trim()}`, stop: () => child.stdin.end() };
}

/** One round of one case: every endpoint at once, as one client; per endpoint, its time and its round trips. */
async function round(url, token) {
  const trips = new Map(rows.map((row) => [`${row.method} ${row.path}`, []]));
  const timed = async (input, init) => {
    const started = performance.now();
    const res = await fetch(input, init);
    const body = await res.arrayBuffer();
    const path = new URL(input).pathname;
    const row = rows.find(
      (r) => r.method === init.method && new RegExp(`^${r.path.replace(/:\w+/g, '[^/]+')}$`).test(path),
    );
    trips.get(`${row.method} ${row.path}`).push(performance.now() - started);
    return new Response(body, { status: res.status, headers: res.headers });
  };
  const api = listingClient({ listing: rows, baseUrl: url, token, fetch: timed });
  const results = await Promise.all(
    rows.map(async (row) => {
      const count = 3 * row.limit;
      const started = performance.now();
      await Promise.all(
        Array.from({ length: count }, (_, n) =>
          row.method === 'POST' ? api.post(row.path, { id: '1' }, { n }) : api.get(row.path, { id: '1', n }),
        ),
      );
      return performance.now() - started;
    }),
  );
  await api.close();
  return rows.map((row, i) => {
    const rtt = trips.get(`${row.method} ${row.path}`);
    return { ms: results[i], rtt: rtt.reduce((a, b) => a + b, 0) / rtt.length };
  });
}

async function main() {
  const report = [];
  for (const window of ['fixed', 'sliding']) {
    for (const delayMs of [0, 50]) {
      const server = await startServer(window, delayMs);
      const runs = [];
      for (let r = 0; r < rounds; r++) runs.push(await round(server.url, `Bot bench ${r}`));
      const limited = await (await fetch(`${server.url}/limited`)).json();
      server.stop();
      rows.forEach((row, i) => {
        const name = `${row.method} ${row.path}`;
        const count = 3 * row.limit;
        const windows = Math.ceil(count / row.limit);
        const ms = median(runs.map((run) => run[i].ms));
        const rtt = median(runs.map((run) => run[i].rtt));
        const bound = (windows * row.windowMs + windows * rtt) * 1.1;
        report.push({
          window,
          delayMs,
          endpoint: name,
          calls: count,
          limit: row.limit,
          windowMs: row.windowMs,
          ms,
          rtt,
          bound,
          limited: limited[name] ?? 0,
        });
      });
    }
  }
  console.log(
    `listingClient: 3 × limit calls at once per endpoint, median of ${rounds} rounds. The last third cannot go ` +
      'before two windows (2W); the bound is (⌈N/L⌉·W + ⌈N/L⌉·RTT) × 1.1.',
  );
  console.log(clientLines(report).join('\n'));
  const within = report.filter((r) => r.ms <= r.bound).length;
  console.log(
    `${within} of ${report.length} within the bound; ${report.reduce((n, r) => n + r.limited, 0)} refusals counted by the servers.`,
  );
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  writeFileSync(
    join(__dirname, 'results', 'client.json'),
    `${JSON.stringify({ node: process.version, rounds, report }, null, 2)}\n`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
