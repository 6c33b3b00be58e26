// HTTP benchmark: each variant's server in its own process, load from autocannon, variants alternated over rounds.
const { execFileSync, spawn } = require('node:child_process');
const { once } = require('node:events');
const { mkdtempSync, readFileSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const autocannon = require('autocannon');
const { listings } = require('../dist/index.cjs');

const hasTaskset = (() => {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** Runs a command pinned to one CPU where taskset is available. */
function pinned(cpu, command, args, options) {
  return hasTaskset ? spawn('taskset', ['-c', String(cpu), command, ...args], options) : spawn(command, args, options);
}

function freePort() {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** A redis-server of its own on a free port, pinned to CPU `cpu`; undefined without redis-server. */
async function startRedis(cpu = 0) {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'listing-limits-bench-'));
  const child = pinned(
    cpu,
    'redis-server',
    ['--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    {
      stdio: 'ignore',
    },
  );
  await new Promise((resolve) => setTimeout(resolve, 300));
  const Redis = require('ioredis');
  const inspect = new Redis({ port, host: '127.0.0.1' });
  /** Scripts Redis has run so far (EVAL and EVALSHA calls). */
  const scripts = async () => {
    const info = String(await inspect.info('commandstats'));
    return [...info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
  };
  return {
    port,
    scripts,
    stop: () => {
      inspect.disconnect();
      child.kill('SIGTERM');
    },
  };
}

/** CPU time (user + system) a process has used, in milliseconds; undefined where /proc is not available. */
function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 1/100 s
  } catch {
    return undefined;
  }
}

/**
 * The port a started `bench/server.js` prints once it is ready. A server that exits first (it failed to start)
 * rejects with its exit code, instead of leaving the run waiting for ever.
 */
async function portOf(child, name) {
  const exited = once(child, 'exit').then(([code]) => {
    throw new Error(`bench/server.js ${name} exited with code ${code} before it was ready`);
  });
  exited.catch(() => {});
  const [chunk] = await Promise.race([once(child.stdout, 'data'), exited]);
  return Number(String(chunk).trim());
}

async function startServer(variant, kind, redisPort) {
  const child = pinned(1, process.execPath, [join(__dirname, 'server.js'), variant, kind, String(redisPort ?? '')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await portOf(child, `${variant} ${kind}`);
  // taskset execs the command, so the child's pid is the server's.
  return { port, cpuMs: () => cpuMs(child.pid), stop: () => child.kill('SIGTERM') };
}

/** Every endpoint of listing B in turn, as one authenticated client. */
const requests = listings.B.map((row) => ({
  method: row.method,
  path: row.path.replace(':id', '123'),
  headers: {
    authorization: 'Bot bench-token',
    ...(row.method === 'POST' ? { 'content-type': 'application/json' } : {}),
  },
  body: row.method === 'POST' ? '{"server_count":1}' : undefined,
}));

function load(port, duration, connections) {
  return autocannon({ url: `http://127.0.0.1:${port}`, connections, duration, requests });
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function runHttp({ rounds, duration, warmup, connections, log }) {
  const redis = await startRedis();
  // `listing-limits-memory-no-headers` (allowed requests only) shows how much of the cost the required headers are.
  // `-sliding`: the same store and table with `window: 'sliding'`, compared with fixed windows within each round.
  let variants = [
    'bare',
    'express-rate-limit',
    'listing-limits-memory',
    'listing-limits-memory-sliding',
    'listing-limits-memory-no-headers',
  ];
  // The Redis store with a default ioredis client, and with a node-redis client.
  if (redis) variants.push('listing-limits-redis', 'listing-limits-redis-sliding', 'listing-limits-redis-node-redis');
  else log('redis-server not found: the Redis variants are left out of this run.');
  // BENCH_VARIANTS=bare,listing-limits-memory runs only those (for quick A/B runs); BENCH_KINDS=allowed likewise.
  if (process.env.BENCH_VARIANTS) variants = variants.filter((v) => process.env.BENCH_VARIANTS.split(',').includes(v));
  const kinds = (process.env.BENCH_KINDS ?? 'allowed,refused').split(',');
  const refusedToo = (variant) => variant !== 'bare' && variant !== 'listing-limits-memory-no-headers';
  const runs = [];
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const kind of kinds) {
        // Alternate the order each round, so that no variant always runs first or last.
        const order = round % 2 ? variants : [...variants].reverse();
        for (const variant of order) {
          if (kind === 'refused' && !refusedToo(variant)) continue;
          const server = await startServer(variant, kind, redis?.port);
          try {
            await load(server.port, warmup, connections); // JIT and caches warm, counters created
            const scriptsBefore = redis && variant.includes('redis') ? await redis.scripts() : undefined;
            const cpuBefore = server.cpuMs();
            const loadBefore = process.cpuUsage();
            const r = await load(server.port, duration, connections);
            const loadCpu = process.cpuUsage(loadBefore);
            const cpuAfter = server.cpuMs();
            const total = r.requests.total;
            const scripts = scriptsBefore === undefined ? undefined : (await redis.scripts()) - scriptsBefore;
            const run = {
              round,
              kind,
              variant,
              rps: r.requests.average,
              p50: r.latency.p50,
              p99: r.latency.p99,
              ok: r['2xx'],
              limited: r.non2xx,
              errors: r.errors + r.timeouts,
              // Server CPU per request: steadier than req/s on a noisy machine, since time the VM steals is not counted.
              serverCpuUs: cpuBefore === undefined ? null : ((cpuAfter - cpuBefore) * 1000) / total,
              // Share of one CPU the load generator used: well below 1, it is not the bottleneck.
              loadCpu: (loadCpu.user + loadCpu.system) / 1e6 / duration,
              // Redis scripts run per request (INFO commandstats): 1 when allowed, 0 once a client is refused.
              redisCommandsPerRequest: scripts === undefined ? null : scripts / total,
            };
            runs.push(run);
            const cpu = run.serverCpuUs === null ? '' : `server CPU ${run.serverCpuUs.toFixed(0)} µs/req, `;
            const commands =
              run.redisCommandsPerRequest === null
                ? ''
                : `, Redis scripts/req ${run.redisCommandsPerRequest.toFixed(3)}`;
            log(
              `round ${round} ${kind.padEnd(7)} ${variant.padEnd(32)} ${Math.round(run.rps)} req/s p50 ${run.p50} ms p99 ${run.p99} ms (${cpu}load generator ${(run.loadCpu * 100).toFixed(0)}% of a CPU; 2xx ${run.ok}, other ${run.limited}, errors ${run.errors}${commands})`,
            );
          } finally {
            server.stop();
          }
        }
      }
    }
  } finally {
    redis?.stop();
  }

  // Ratios are taken within each round, against that round's references, then their median is reported.
  const summary = [];
  for (const kind of ['allowed', 'refused']) {
    for (const variant of variants) {
      const mine = runs.filter((r) => r.kind === kind && r.variant === variant);
      if (mine.length === 0) continue;
      const ratio = (reference, kindOf) =>
        mine
          .map((r) => {
            const ref = runs.find((x) => x.round === r.round && x.kind === kindOf && x.variant === reference);
            return ref ? r.rps / ref.rps : undefined;
          })
          .filter((x) => x !== undefined);
      const toBare = ratio('bare', 'allowed');
      const toErl = ratio('express-rate-limit', kind);
      const toFixed = variant.endsWith('-sliding') ? ratio(variant.replace(/-sliding$/, ''), kind) : [];
      summary.push({
        kind,
        variant,
        rps: median(mine.map((r) => r.rps)),
        p50: median(mine.map((r) => r.p50)),
        p99: median(mine.map((r) => r.p99)),
        serverCpuUs: mine.every((r) => r.serverCpuUs !== null) ? median(mine.map((r) => r.serverCpuUs)) : null,
        vsBare: toBare.length ? median(toBare) : null,
        vsExpressRateLimit: toErl.length ? median(toErl) : null,
        vsFixed: toFixed.length ? median(toFixed) : null,
        redisCommandsPerRequest: mine.every((r) => r.redisCommandsPerRequest !== null)
          ? median(mine.map((r) => r.redisCommandsPerRequest))
          : null,
      });
    }
  }
  return { runs, summary, pinned: hasTaskset };
}

module.exports = { freePort, pinned, portOf, runHttp, startRedis };
