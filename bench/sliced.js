// The side-by-side ruler: what a variant costs a real Express server next to a reference server, with the machine's
// drift cancelled. Both servers are pinned to CPU 0 and loaded at the same time by a wrk each on CPU 1; this driver
// lets only one of them run at a time (SIGSTOP/SIGCONT every 100 ms), so that whatever else the machine does falls
// on both alike. The figure is the reference's server CPU per request divided by the variant's (every thread, from
// /proc/PID/task/*/schedstat): 1.00 is free, 0.80 means the variant spends 25% more CPU per request.
// `npm run bench` runs it; alone: `npm run build && node bench/sliced.js` (writes bench/results/sliced.json).
// Each side that uses Redis has a Redis of its own on CPU 1 (a server, or a Cluster of three masters), whose CPU time
// per request (INFO cpu) is measured with the app's.
// Settings: BENCH_SLICED_ROUNDS (default 3), BENCH_SLICED_DURATION (s of measured load per pair, default 8),
// BENCH_SLICED_PAIRS (names of the pairs to run, comma-separated, for quick A/B runs); BENCH_REFERENCE_DIST (the dist/
// of another build, a copy inside the project so that it finds the project's node_modules) with BENCH_SLICED_AB
// (variants, comma-separated): each variant of this build against the same variant of that build.
const { execFile, execFileSync, spawn } = require('node:child_process');
const { once } = require('node:events');
const { mkdirSync, readdirSync, readFileSync, writeFileSync } = require('node:fs');
const { cpus, loadavg } = require('node:os');
const { join } = require('node:path');
const { createInterface } = require('node:readline');
const { portOf } = require('./http.js');
const { FLOORS, PAIRS, TARGETS } = require('./pairs.js');

/** How far above its floor a store's figure may be read before the run is refused: the spread of medians of 3 rounds. */
const FLOOR_NOISE = 0.03;
const { hasRedis, startRedisFor } = require('./redis.js');

const CONNECTIONS = 32;
const WARMUP_S = 3;
/** Seconds of load under which each side's Redis commands are counted, after its CPU is measured. */
const COUNT_S = 2;
const SLICE_MS = 100;
/** One endpoint: an authenticated `GET /v1/bots/:id`, as most of an API's traffic is. */
const PATH = '/v1/bots/42';
/**
 * The clients that send the load in turn (bench/clients.lua): a server that answers 20,000 requests a second while it
 * runs would take one client past the allowed table's 10,000 a second; each of eight stays far from it.
 */
const CLIENTS = 8;
/** Requests a second of each server under the paced load: about a tenth of what one serves on a CPU. */
const RATE = Number(process.env.BENCH_SLICED_RATE ?? 1000);
/** Which pairs are paced: `redis` (default, each pair with a Redis side), `all` or `none`. */
const PACED = process.env.BENCH_SLICED_PACED ?? 'redis';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** What a run needs from the machine: wrk, taskset and two CPUs. Throws an error that says what to install. */
function checkMachine() {
  const missing = ['wrk', 'taskset'].filter((command) => {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
      return false;
    } catch {
      return true;
    }
  });
  if (missing.length > 0) {
    throw new Error(
      `bench/sliced.js needs ${missing.join(' and ')} (on Debian: apt-get install ${missing.map((m) => (m === 'taskset' ? 'util-linux' : m)).join(' ')}); ` +
        'BENCH_PARTS=http,micro,memory,bans,pages runs the rest of the benchmark without it.',
    );
  }
  if (cpus().length < 2) throw new Error('bench/sliced.js needs two CPUs: one for the servers, one for the load.');
}

/** CPU time a process has used, in nanoseconds, over all its threads (V8's and libuv's included). */
function cpuNs(pid) {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return total;
}

/** wrk's count of requests, of non-2xx answers and of socket errors. */
function parseWrk(output) {
  const number = (pattern) => Number(pattern.exec(output)?.[1] ?? 0);
  const errors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  return {
    requests: number(/(\d+) requests in/),
    non2xx: number(/Non-2xx or 3xx responses: (\d+)/),
    socketErrors: errors ? errors.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  };
}

/**
 * The paced load: `RATE` requests a second by autocannon on CPU 1 on one connection (bench/paced.js), so that each
 * request is served alone and its CPU is what a request costs, whatever Redis' latency. Saturated, how many requests share one wake-up
 * of the event loop follows Redis' latency, and Redis figures did not repeat from one run to the next.
 */
function paced(port, seconds) {
  const args = ['-c', '1', process.execPath, join(__dirname, 'paced.js'), `http://127.0.0.1:${port}${PATH}`];
  args.push(String(RATE), String(seconds), String(CLIENTS));
  return new Promise((resolve, reject) =>
    execFile('taskset', args, { encoding: 'utf8' }, (error, output) =>
      error ? reject(error) : resolve(JSON.parse(output)),
    ),
  );
}

function wrk(port, seconds) {
  const args = ['-c', '1', 'wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '10s'];
  args.push('-s', join(__dirname, 'clients.lua'), `http://127.0.0.1:${port}${PATH}`, '--', String(CLIENTS));
  return new Promise((resolve, reject) =>
    execFile('taskset', args, { encoding: 'utf8' }, (error, output) =>
      error ? reject(error) : resolve(parseWrk(output)),
    ),
  );
}

/** A server of `side` (`variant@kind`) pinned to CPU 0; with `dist`, of that build (BENCH_DIST). */
async function startServer(side, redisTarget, dist) {
  const [variant, kind = 'allowed'] = side.split('@');
  const child = spawn(
    'taskset',
    ['-c', '0', process.execPath, join(__dirname, 'server.js'), variant, kind, redisTarget ?? ''],
    { stdio: ['ignore', 'pipe', 'inherit'], env: dist ? { ...process.env, BENCH_DIST: dist } : process.env },
  );
  const port = await portOf(child, side);
  // taskset execs the command, so the child's pid is the server's.
  return { child, pid: child.pid, port };
}

async function stopServer(server) {
  try {
    process.kill(server.pid, 'SIGCONT');
  } catch {
    // Already gone.
  }
  const exited = once(server.child, 'exit');
  server.child.kill('SIGTERM');
  await exited;
}

/**
 * What Redis runs for each server, from MONITOR on every port of its Redis: a command whose keys are the runtime
 * state's (`{runtime}`) is the state's periodic read, any other is a request's. Read from `redis-cli monitor`
 * (Debian's redis-server package has it): ioredis' `monitor()` connection, stopped while lines still arrive, took one
 * for a reply to no command and threw from its socket's handler, which ended the whole run.
 */
async function watchRedis(ports, pids) {
  const counts = Object.fromEntries(pids.map((pid) => [pid, { requests: 0, state: 0 }]));
  const watch = async (port) => {
    const cli = spawn('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'monitor'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: cli.stdout });
    const started = new Promise((resolve, reject) => {
      cli.once('error', reject);
      cli.once('exit', (code) => reject(new Error(`redis-cli monitor exited with code ${code} before it started`)));
      lines.once('line', resolve); // MONITOR's OK
    });
    // `<time> [<db> <client address, or lua for a command a script ran>] "<command>" "<key>" ...`
    lines.on('line', (line) => {
      const source = /^\S+ \[\d+ ([^\]]+)\] /.exec(line);
      if (!source || source[1] === 'lua') return; // a command a script ran: the script itself is counted
      const pid = pids.find((p) => line.includes(`"bench-${p}:`));
      if (pid === undefined) return;
      if (line.includes(':{runtime}:')) counts[pid].state++;
      else counts[pid].requests++;
    });
    await started;
    return cli;
  };
  const clis = await Promise.all(ports.map(watch));
  return {
    stop: async () => {
      await sleep(100); // the last commands' lines
      await Promise.all(
        clis.map((cli) => {
          const exited = once(cli, 'exit');
          cli.kill();
          return exited;
        }),
      );
      return counts;
    },
  };
}

/**
 * The Redis commands of each server's requests, counted after the measured load, under the same load for
 * `COUNT_S` seconds: MONITOR makes Redis send every command to one more client, which slows its answers and so would
 * change what the measured servers spend. Each side's `requests` here are that load's.
 */
async function countCommands(ports, servers) {
  const watch = await watchRedis(
    ports,
    servers.map((s) => s.pid),
  );
  const loads = await Promise.all(servers.map((s) => wrk(s.port, COUNT_S)));
  const counts = await watch.stop();
  servers.forEach((server, i) => Object.assign(counts[server.pid], { load: loads[i].requests }));
  return counts;
}

const usesRedis = (side) => side.includes('redis');
const isPaced = (pair) => PACED === 'all' || (PACED === 'redis' && usesRedis(`${pair.reference} ${pair.variant}`));

/** Both servers saturated by a wrk each, one running at a time: SIGSTOP/SIGCONT every `SLICE_MS`. */
async function sliced(reference, variant, duration) {
  process.kill(variant.pid, 'SIGSTOP');
  const loads = Promise.all([wrk(reference.port, duration), wrk(variant.port, duration)]);
  let running = reference;
  let paused = variant;
  const timer = setInterval(() => {
    process.kill(running.pid, 'SIGSTOP');
    process.kill(paused.pid, 'SIGCONT');
    [running, paused] = [paused, running];
  }, SLICE_MS);
  const done = await loads;
  clearInterval(timer);
  process.kill(paused.pid, 'SIGCONT');
  return done;
}

/**
 * One measurement of a pair: both servers loaded at once, one running at a time. Each side that uses Redis has its
 * own, started for this measurement (a Cluster for `-cluster` variants), so that Redis' CPU time per request is
 * each side's own.
 */
async function measure(pair, duration) {
  const sides = [pair.reference, pair.variant];
  const redises = [];
  const servers = [];
  try {
    for (const side of sides)
      redises.push(usesRedis(side) ? await startRedisFor(1, side.includes('-cluster')) : undefined);
    for (const [i, side] of sides.entries()) {
      servers.push(await startServer(side, redises[i]?.target, i === 0 ? pair.referenceDist : undefined));
    }
    const [reference, variant] = servers;
    // JIT, caches and counters warm; with the `refused` table, each server's first refusal happens here. Both at
    // once, sharing CPU 0, so that neither goes faster than the measured load (the allowed table's limits stay out
    // of reach).
    await Promise.all([wrk(reference.port, WARMUP_S), wrk(variant.port, WARMUP_S)]);
    const redisBefore = await Promise.all(redises.map((r) => r?.usage()));
    const before = [cpuNs(reference.pid), cpuNs(variant.pid)];
    const [ref, mine] = isPaced(pair)
      ? await Promise.all([paced(reference.port, duration), paced(variant.port, duration)])
      : await sliced(reference, variant, duration);
    const after = [cpuNs(reference.pid), cpuNs(variant.pid)];
    const redisAfter = await Promise.all(redises.map((r) => r?.usage()));
    const withRedis = servers.filter((_server, i) => redises[i]);
    const counted = withRedis.length
      ? await countCommands(
          redises.flatMap((r) => r?.ports ?? []),
          withRedis,
        )
      : {};
    const commands = servers.map((server) => counted[server.pid]);
    const side = (load, i) => {
      const measured = {
        ...load,
        cpuUsPerRequest: (after[i] - before[i]) / 1000 / load.requests,
        redisCommands: commands[i],
      };
      if (redises[i]) {
        // Every process of its Redis; a Cluster's request runs on the master of its key, the busiest.
        const used = redisAfter[i].map((u, p) => u.cpuUs - redisBefore[i][p].cpuUs);
        const reads = redisAfter[i].reduce((n, u, p) => n + u.reads - redisBefore[i][p].reads, 0);
        measured.redisUsPerRequest = used.reduce((a, b) => a + b, 0) / load.requests;
        measured.redisBusiestUsPerRequest = Math.max(...used) / load.requests;
        measured.redisReadsPerRequest = reads / load.requests;
      }
      return measured;
    };
    const a = side(ref, 0);
    const b = side(mine, 1);
    return { ratio: a.cpuUsPerRequest / b.cpuUsPerRequest, reference: a, variant: b };
  } finally {
    for (const server of servers) await stopServer(server);
    for (const redis of redises) redis?.stop();
  }
}

/** Whether a side's answers are what its table promises: all 2xx when allowed, none once refused. */
function unexpected(sideName, side) {
  const refused = sideName.endsWith('@refused');
  const wrong = refused ? side.requests - side.non2xx : side.non2xx;
  const problems = [];
  if (wrong > 0) problems.push(`${wrong} ${refused ? '2xx' : 'non-2xx'} answers`);
  if (side.socketErrors > 0) problems.push(`${side.socketErrors} socket errors`);
  return problems.length ? `${sideName}: ${problems.join(', ')}` : undefined;
}

async function runSliced({
  rounds = Number(process.env.BENCH_SLICED_ROUNDS ?? 3),
  duration = Number(process.env.BENCH_SLICED_DURATION ?? 8),
  log = (line) => process.stdout.write(`${line}\n`),
} = {}) {
  checkMachine();
  let pairs = PAIRS.filter((p) => !p.onDemand);
  if (process.env.BENCH_SLICED_PAIRS) {
    // Names of pairs; `ceiling` runs every ceiling pair, `clients` each client against ioredis.
    const names = process.env.BENCH_SLICED_PAIRS.split(',');
    pairs = PAIRS.filter((p) => names.includes(p.name) || names.includes(p.onDemand));
  }
  if (process.env.BENCH_SLICED_AB) {
    // Each variant named, of this build, against the same variant of the build at BENCH_REFERENCE_DIST.
    const referenceDist = process.env.BENCH_REFERENCE_DIST;
    if (!referenceDist)
      throw new Error('BENCH_SLICED_AB needs BENCH_REFERENCE_DIST, the dist/ of the reference build.');
    pairs = process.env.BENCH_SLICED_AB.split(',').map((side) => ({
      name: `${side} vs reference build`,
      reference: side,
      variant: side,
      referenceDist,
    }));
  }
  if (!hasRedis()) {
    log('redis-server or redis-cli not found: the Redis pairs are left out of this run.');
    pairs = pairs.filter((p) => !usesRedis(`${p.reference} ${p.variant}`));
  }
  const loadAverage = [loadavg()];
  const runs = [];
  for (let round = 1; round <= rounds; round++) {
    // Alternate the order each round, so that no pair always runs first or last.
    for (const pair of round % 2 ? pairs : [...pairs].reverse()) {
      const run = { round, pair: pair.name, ...(await measure(pair, duration)) };
      run.problems = [unexpected(pair.reference, run.reference), unexpected(pair.variant, run.variant)].filter(Boolean);
      runs.push(run);
      const commands = (side) =>
        side.redisCommands
          ? `, Redis: ${side.redisUsPerRequest.toFixed(1)} µs/req, ${side.redisReadsPerRequest.toFixed(2)} reads/req, ` +
            `${side.redisCommands.requests} request commands ` +
            `and ${side.redisCommands.state} state reads in ${side.redisCommands.load} requests`
          : '';
      log(
        `round ${round} ${pair.name.padEnd(32)} ${run.ratio.toFixed(3)}  (${run.variant.cpuUsPerRequest.toFixed(0)} µs/req vs ` +
          `${run.reference.cpuUsPerRequest.toFixed(0)}; ${run.variant.requests} and ${run.reference.requests} requests` +
          `${commands(run.variant)})${run.problems.length ? `  UNEXPECTED: ${run.problems.join('; ')}` : ''}`,
      );
    }
    loadAverage.push(loadavg());
  }

  const summary = {};
  for (const pair of pairs) {
    const mine = runs.filter((r) => r.pair === pair.name);
    const entry = {
      reference: pair.reference,
      variant: pair.variant,
      method: isPaced(pair) ? 'paced' : 'sliced',
      ratio: median(mine.map((r) => r.ratio)),
      rounds: mine.map((r) => r.ratio),
      cpuUsPerRequest: median(mine.map((r) => r.variant.cpuUsPerRequest)),
      referenceCpuUsPerRequest: median(mine.map((r) => r.reference.cpuUsPerRequest)),
      problems: mine.flatMap((r) => r.problems),
    };
    if (usesRedis(pair.variant)) {
      const requests = mine.reduce((n, r) => n + (r.variant.redisCommands?.load ?? 0), 0);
      const own = mine.reduce((n, r) => n + (r.variant.redisCommands?.requests ?? 0), 0);
      const state = mine.reduce((n, r) => n + (r.variant.redisCommands?.state ?? 0), 0);
      // Every counted request of a refused side is a refusal after its client's first (that one is in the warm-up).
      entry.redis = { requests, commands: own, stateReads: state, perRequest: own / requests };
      if (pair.variant.endsWith('@refused')) entry.redis.perRefusal = own / requests;
      // Redis' CPU time per request of the measured load (every process of its Redis), and the busiest process'.
      entry.redis.usPerRequest = median(mine.map((r) => r.variant.redisUsPerRequest));
      entry.redis.busiestUsPerRequest = median(mine.map((r) => r.variant.redisBusiestUsPerRequest));
      entry.redis.readsPerRequest = median(mine.map((r) => r.variant.redisReadsPerRequest));
      if (usesRedis(pair.reference)) {
        entry.redis.referenceUsPerRequest = median(mine.map((r) => r.reference.redisUsPerRequest));
      }
    }
    summary[pair.name] = entry;
  }
  const m = (name) => summary[name]?.ratio;
  const targets = TARGETS.map(({ target, pair, figure = (ratio) => ratio(pair), atLeast, atMost, digits = 3 }) => {
    const value = figure(m, summary);
    const met = value === undefined ? null : atLeast !== undefined ? value >= atLeast : value <= atMost;
    return { target, value: value ?? null, met, digits };
  });
  // A Redis figure above its floor's, in one run, cannot be the store's: the load changed, so the run is not published.
  // A store cheaper than its floor, one `INCR` a request, cannot be: the load changed, so the run is not published.
  const aboveFloor = FLOORS.filter((pair) => m(pair) > 1 + FLOOR_NOISE).map((pair) => `${pair} ${m(pair).toFixed(3)}`);
  return {
    aboveFloor,
    settings: {
      rounds,
      duration,
      warmup: WARMUP_S,
      connections: CONNECTIONS,
      sliceMs: SLICE_MS,
      paced: PACED,
      rate: RATE,
      path: PATH,
      clients: CLIENTS,
    },
    loadAverage,
    runs,
    summary,
    targets,
  };
}

/** The lines `npm run bench` prints. */
function report(results) {
  const lines = [];
  for (const [name, s] of Object.entries(results.summary)) {
    const redis = s.redis
      ? `, Redis ${s.redis.perRequest.toFixed(4)} commands/req (+${s.redis.stateReads} state reads in all), ` +
        `${s.redis.usPerRequest.toFixed(1)} µs/req of Redis CPU` +
        (s.redis.referenceUsPerRequest === undefined ? '' : ` vs ${s.redis.referenceUsPerRequest.toFixed(1)}`)
      : '';
    lines.push(
      `${name.padEnd(32)} ${s.ratio.toFixed(3)} of ${s.reference}  (rounds ${s.rounds.map((r) => r.toFixed(3)).join(', ')}; ` +
        `${s.cpuUsPerRequest.toFixed(0)} vs ${s.referenceCpuUsPerRequest.toFixed(0)} µs/req${redis})` +
        (s.problems.length ? `  UNEXPECTED: ${s.problems.join('; ')}` : ''),
    );
  }
  lines.push('', 'Targets (medians of the rounds):');
  for (const t of results.targets) {
    const value = t.value === null ? 'not measured' : t.value.toFixed(t.digits);
    lines.push(`${t.met === null ? '-     ' : t.met ? 'met   ' : 'MISSED'} ${value.padStart(7)}  ${t.target}`);
  }
  for (const above of results.aboveFloor ?? []) lines.push(`ABOVE ITS FLOOR: ${above}`);
  const load = results.loadAverage.map((l) => l[0].toFixed(2)).join(', ');
  lines.push('', `Load average (1 min) at the start and after each round: ${load}`);
  return lines;
}

module.exports = { runSliced, report, paced, cpuNs, CLIENTS };

if (require.main === module) {
  runSliced().then(
    (results) => {
      for (const line of ['', ...report(results)]) process.stdout.write(`${line}\n`);
      const dir = join(__dirname, 'results');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'sliced.json'),
        `${JSON.stringify({ date: new Date().toISOString(), ...results }, null, 2)}\n`,
      );
      process.stdout.write('Wrote bench/results/sliced.json\n');
    },
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
