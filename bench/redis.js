// The Redis of the side-by-side ruler and the profiles: a redis-server, or a Redis Cluster of three masters started as
// the tests start one (`redis-cli --cluster create`), each process pinned to one CPU, and the CPU time Redis has used
// (INFO cpu), so that what Redis spends per request is measured with what the app spends.
const { execFile, execFileSync } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { promisify } = require('node:util');
const { freePort, pinned } = require('./http.js');

const run = promisify(execFile);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function hasRedis() {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    execFileSync('redis-cli', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** `redis-cli -p port ...`, its answer as text. */
const ask = (port, ...command) => run('redis-cli', ['-p', String(port), ...command]).then((r) => r.stdout);

async function startProcess(cpu, settings = []) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'listing-limits-bench-'));
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  const child = pinned(cpu, 'redis-server', [...args, ...settings], { stdio: 'ignore' });
  for (let attempt = 0; ; attempt++) {
    if ((await ask(port, 'ping').catch(() => '')).trim() === 'PONG') break;
    if (attempt === 100 || child.exitCode !== null) throw new Error(`redis-server did not start on port ${port}`);
    await sleep(50);
  }
  return {
    port,
    stop: () => {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * What a Redis process has done so far: its CPU time in µs (`used_cpu_sys` and `used_cpu_user` of `INFO cpu`, every
 * thread of the process, as getrusage counts them) and the reads of its clients' sockets it has processed (`INFO
 * stats`): requests per read are the commands that arrived together.
 */
async function usage(port) {
  const info = await ask(port, 'info', 'all');
  const number = (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return {
    cpuUs: Math.round((number('used_cpu_sys') + number('used_cpu_user')) * 1e6),
    reads: number('total_reads_processed'),
  };
}

/**
 * A Redis of its own for one side of a pair: one server, or with `cluster` a Cluster of three masters (of
 * BENCH_CLUSTER_MASTERS: 1 makes one master that holds every slot, to tell what the masters' number costs). `target` is
 * what `bench/server.js` takes (a port, or the masters' ports comma-separated); `usage()` what each process has done
 * (see usage), in the order of `ports`.
 */
async function startRedisFor(cpu, cluster = false) {
  if (!cluster) {
    const server = await startProcess(cpu);
    return {
      ports: [server.port],
      target: String(server.port),
      usage: async () => [await usage(server.port)],
      stop: server.stop,
    };
  }
  const servers = [];
  try {
    const masters = Number(process.env.BENCH_CLUSTER_MASTERS ?? 3);
    if (!Number.isInteger(masters) || (masters !== 1 && masters < 3))
      throw new Error('BENCH_CLUSTER_MASTERS must be 1, or 3 or more');
    for (let i = 0; i < masters; i++) {
      const bus = await freePort();
      servers.push(
        await startProcess(cpu, [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-port',
          String(bus),
        ]),
      );
    }
    const ports = servers.map((s) => s.port);
    if (masters === 1) {
      // redis-cli makes Clusters of three masters or more: one is given every slot, and the address it announces.
      await ask(ports[0], 'config', 'set', 'cluster-announce-ip', '127.0.0.1');
      await ask(ports[0], 'cluster', 'addslotsrange', '0', '16383');
    } else {
      await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes']);
    }
    for (let attempt = 0; ; attempt++) {
      const infos = await Promise.all(ports.map((port) => ask(port, 'cluster', 'info')));
      if (infos.every((info) => info.includes('cluster_state:ok'))) break;
      if (attempt === 200) throw new Error('the bench Redis Cluster did not reach cluster_state:ok');
      await sleep(50);
    }
    return {
      ports,
      target: ports.join(','),
      usage: () => Promise.all(ports.map(usage)),
      stop: () => servers.forEach((s) => s.stop()),
    };
  } catch (error) {
    servers.forEach((s) => s.stop());
    throw error;
  }
}

module.exports = { hasRedis, startRedisFor };
