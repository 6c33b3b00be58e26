// The cluster store's cost: a worker's CPU plus the primary's, per allowed request, against bare Express in one
// process. `npm run bench:cluster` (wrk and taskset, two CPUs). Each side runs alone on CPU 0
// under wrk on CPU 1, in turns; the workers accept their own connections (SCHED_NONE), so the primary's CPU is the
// store's. `node bench/cluster.js serve <bare|cluster>` is one side: a primary with one worker; it prints
// `<port> <worker pid>`.
const cluster = require('node:cluster');
const { execFile, spawn } = require('node:child_process');
const { once } = require('node:events');
const { join } = require('node:path');
const { cpuNs } = require('./sliced.js');

const ROUNDS = Number(process.env.BENCH_CLUSTER_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_CLUSTER_DURATION ?? 8);
/** As the ruler's load (bench/sliced.js): 32 connections, 8 clients in turn, one endpoint. */
const LOAD = ['-t1', '-c32', '--timeout', '10s', '-s', join(__dirname, 'clients.lua')];
const URL_PATH = '/v1/bots/42';

function serve(variant) {
  cluster.schedulingPolicy = cluster.SCHED_NONE;
  const { clusterPrimary, clusterStore } = require(require('./apps.js').distOf('index'));
  if (cluster.isPrimary) {
    if (variant === 'cluster') clusterPrimary();
    const worker = cluster.fork();
    worker.on('message', (m) => m?.bench && process.stdout.write(`${m.bench} ${worker.process.pid}\n`));
    process.on('SIGTERM', () => {
      worker.process.kill();
      process.exit(0);
    });
    return;
  }
  const { createBenchApp } = require('./apps.js');
  const app = createBenchApp(
    variant === 'bare' ? 'bare' : 'listing-limits',
    'allowed',
    variant === 'cluster' ? clusterStore() : undefined,
  );
  const server = app.listen(0, '127.0.0.1', () => process.send({ bench: server.address().port }));
}

/** One side under load: its processes' CPU µs per request (the primary's, the worker's), and the requests. */
async function measure(args) {
  const child = spawn('taskset', ['-c', '0', process.execPath, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [chunk] = await once(child.stdout, 'data');
  const [port, workerPid = child.pid] = String(chunk).trim().split(' ').map(Number);
  const url = `http://127.0.0.1:${port}${URL_PATH}`;
  const wrk = (seconds) =>
    new Promise((resolve, reject) =>
      execFile('taskset', ['-c', '1', 'wrk', ...LOAD, `-d${seconds}s`, url, '--', '8'], (error, out) =>
        error ? reject(error) : resolve(Number(/(\d+) requests in/.exec(out)?.[1] ?? 0)),
      ),
    );
  await wrk(2);
  const pids = workerPid === child.pid ? [child.pid] : [child.pid, workerPid];
  const before = pids.map(cpuNs);
  const requests = await wrk(SECONDS);
  const us = pids.map((pid, i) => (cpuNs(pid) - before[i]) / 1000 / requests);
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
  return { requests, primaryUs: us.length > 1 ? us[0] : 0, workerUs: us.at(-1) };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const runs = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const bare = await measure([join(__dirname, 'server.js'), 'bare', 'allowed', '']);
    const store = await measure([__filename, 'serve', 'cluster']);
    const memory = await measure([join(__dirname, 'server.js'), 'listing-limits', 'allowed', '']);
    const ratio = bare.workerUs / (store.workerUs + store.primaryUs);
    runs.push({ ratio, bare, store, memory });
    console.log(
      `round ${round}: ${ratio.toFixed(3)} of bare Express (worker ${store.workerUs.toFixed(1)} + primary ` +
        `${store.primaryUs.toFixed(1)} µs/req vs ${bare.workerUs.toFixed(1)}; the memory store ` +
        `${memory.workerUs.toFixed(1)})`,
    );
  }
  const m = (f) => median(runs.map(f)).toFixed(1);
  console.log(
    `clusterStore(): ${median(runs.map((r) => r.ratio)).toFixed(3)} of bare Express per allowed request ` +
      `(target 0.80); the primary ${m((r) => r.store.primaryUs)} µs/req, the worker ${m((r) => r.store.workerUs)}, ` +
      `bare Express ${m((r) => r.bare.workerUs)}, the memory store in one process ${m((r) => r.memory.workerUs)} ` +
      `(medians of ${ROUNDS} rounds)`,
  );
}

if (process.argv[2] === 'serve') serve(process.argv[3]);
else
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
