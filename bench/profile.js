// Where the server's time goes: CPU profiles (node --cpu-prof) of a benchmark server under wrk's load, bare Express and
// each variant asked for, as self time per request, grouped by who owns the code (listing-limits, Express and each
// package it uses, Node's modules, the garbage collector), with the functions that take the most and what each group
// costs beyond bare Express. `npm run build && node bench/profile.js [variant[@refused] ...]`; default: the memory
// store, allowed. Settings: BENCH_PROFILE_ROUNDS (profiles of each, pooled, default 3), BENCH_PROFILE_DURATION (s of
// load each, default 10), BENCH_PROFILE_PACED (1: the paced load of Redis pairs), BENCH_PROFILE_TOP (functions, default 25), BENCH_PROFILE_OUT (the file written in
// bench/results, default profile.json, which docs/performance.md quotes).
// Needs wrk and taskset, as bench/sliced.js does.
const { execFile, spawn } = require('node:child_process');
const { once } = require('node:events');
const { mkdirSync, mkdtempSync, readFileSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join, resolve: resolvePath, sep } = require('node:path');
const { startRedisFor } = require('./redis.js');

const DURATION_S = Number(process.env.BENCH_PROFILE_DURATION ?? 10);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 25);
const ROUNDS = Number(process.env.BENCH_PROFILE_ROUNDS ?? 3);
const { INTERVAL_US } = require('./profiler.js');
const ROOT = join(__dirname, '..');
const { CLIENTS, paced } = require('./sliced.js');
/** BENCH_PROFILE_PACED=1: the ruler's paced load (bench/paced.js) instead of wrk's saturating one. */
const PACED = process.env.BENCH_PROFILE_PACED === '1';

function wrk(port, seconds) {
  const args = ['-c', '1', 'wrk', '-t1', '-c32', `-d${seconds}s`, '--timeout', '10s'];
  // The ruler's load (bench/sliced.js): its clients in turn, so that a Cluster's keys fall on its masters as there.
  args.push('-s', join(__dirname, 'clients.lua'), `http://127.0.0.1:${port}/v1/bots/42`, '--', String(CLIENTS));
  return new Promise((resolve, reject) =>
    execFile('taskset', args, { encoding: 'utf8' }, (error, output) =>
      error ? reject(error) : resolve(Number(/(\d+) requests in/.exec(output)[1])),
    ),
  );
}

/** Who owns a function: the package, a dependency by its name, one of Node's modules, or V8's own entries. */
function owner({ url, functionName }) {
  if (!url) return functionName.startsWith('(') ? functionName : `(native) ${functionName || 'anonymous'}`;
  if (url.startsWith('node:')) return url;
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf(`${sep}node_modules${sep}`);
  if (modules >= 0) {
    const [scope, name] = path.slice(modules + 14).split(sep);
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  if (path.startsWith(join(ROOT, 'dist'))) return 'listing-limits';
  if (path.startsWith(join(ROOT, 'bench'))) return 'bench app';
  return path;
}

/** The packages Express 5 is made of, counted together as "Express" in the groups. */
const EXPRESS = new Set([
  'express',
  'router',
  'finalhandler',
  'send',
  'serve-static',
  'body-parser',
  'content-type',
  'type-is',
  'mime-types',
  'accepts',
  'negotiator',
  'proxy-addr',
  'forwarded',
  'ipaddr.js',
  'parseurl',
  'fresh',
  'etag',
  'cookie',
  'cookie-signature',
  'encodeurl',
  'escape-html',
  'depd',
  'debug',
  'on-finished',
  'vary',
  'qs',
  'range-parser',
  'statuses',
  'http-errors',
  'setprototypeof',
  'path-to-regexp',
  'utils-merge',
  'merge-descriptors',
  'safe-buffer',
  'content-disposition',
  'once',
  'is-promise',
  'media-typer',
  'mime-db',
]);

/** Node's functions that set, check, store and serialise response headers. */
const HEADER_FUNCTIONS = new Set([
  'setHeader',
  'setHeaders',
  'appendHeader',
  'getHeader',
  'getHeaders',
  'hasHeader',
  'removeHeader',
  'validateHeaderName',
  'validateHeaderValue',
  'checkIsHttpToken',
  'checkInvalidHeaderChar',
  'processHeader',
  'storeHeader',
  '_storeHeader',
  'matchHeader',
  'writeHead',
]);

/** The groups the breakdown reports: who owns the time, with Node's header handling apart from the rest of HTTP. */
function group(ownerName, functionName) {
  if (ownerName === 'listing-limits') return 'listing-limits';
  if (EXPRESS.has(ownerName)) return 'Express and its packages';
  if (ownerName === '(garbage collector)') return 'garbage collector';
  if (ownerName === '(idle)') return 'idle';
  if (ownerName.startsWith('node:') && HEADER_FUNCTIONS.has(functionName)) return "Node's header handling";
  if (
    /^node:(_http|net|internal\/(streams|stream_base_commons|http))/.test(ownerName) ||
    ownerName === '(native) writev'
  )
    return "Node's HTTP, streams and socket writes";
  if (ownerName.startsWith('node:')) return "Node's other modules (events, timers, ticks)";
  return 'V8, native and other';
}

/** Self time (µs) of each function and of each owner, from a .cpuprofile. */
function selfTimes(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const self = new Map();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  /** The owner of a node: a function without a script (a bound function, a native one) is its caller's. */
  const ownerOf = (id) => {
    for (let at = id; at !== undefined; at = parents.get(at)) {
      const { callFrame } = byId.get(at);
      if (callFrame.url || callFrame.functionName.startsWith('(')) return owner(callFrame);
    }
    return owner(byId.get(id).callFrame);
  };
  /** Whether a node runs for the profiler itself (starting it costs samples of its own). */
  const profiler = (id) => {
    for (let at = id; at !== undefined; at = parents.get(at))
      if (byId.get(at).callFrame.url.endsWith(`bench${sep}profiler.js`)) return true;
    return false;
  };
  const functions = new Map();
  for (const [id, us] of self) {
    if (profiler(id)) continue;
    const { callFrame } = byId.get(id);
    const who = ownerOf(id);
    const file = callFrame.url.split('/').slice(-2).join('/');
    const name =
      `${callFrame.functionName || '(anonymous)'} ${file ? `${file}:${callFrame.lineNumber + 1}` : ''}`.trim();
    const key = `${who}\t${name}`;
    const entry = functions.get(key) ?? { owner: who, group: group(who, callFrame.functionName), name, us: 0 };
    entry.us += us;
    functions.set(key, entry);
  }
  return [...functions.values()];
}

async function profileOne(side) {
  const [variant, kind = 'allowed'] = side.split('@');
  // A Redis of its own for each profile (a Cluster of three masters for `-cluster` variants), on CPU 1 with the load.
  const redis = variant.includes('redis') ? await startRedisFor(1, variant.includes('-cluster')) : undefined;
  try {
    return await profileWith(side, variant, kind, redis?.target);
  } finally {
    redis?.stop();
  }
}

async function profileWith(side, variant, kind, redisTarget) {
  const file = join(mkdtempSync(join(tmpdir(), 'listing-limits-profile-')), 'server.cpuprofile');
  const child = spawn(
    'taskset',
    ['-c', '0', process.execPath, join(__dirname, 'server.js'), variant, kind, redisTarget ?? ''],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, BENCH_PROFILE: file } },
  );
  const [chunk] = await once(child.stdout, 'data');
  const port = Number(String(chunk).trim());
  await wrk(port, 2); // JIT and caches warm, outside the profile
  child.kill('SIGUSR2');
  await new Promise((resolve) => setTimeout(resolve, 200));
  const requests = PACED ? (await paced(port, DURATION_S)).requests : await wrk(port, DURATION_S);
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
  const functions = selfTimes(JSON.parse(readFileSync(file, 'utf8')));
  return { side, requests, functions };
}

/** The rounds' profiles of one side as one: self times added up, over all their requests. */
function pool(runs) {
  const functions = new Map();
  for (const run of runs) {
    for (const f of run.functions) {
      const key = `${f.owner}\t${f.name}`;
      const entry = functions.get(key) ?? { ...f, us: 0 };
      entry.us += f.us;
      functions.set(key, entry);
    }
  }
  const requests = runs.reduce((n, run) => n + run.requests, 0);
  return { side: runs[0].side, requests, functions: [...functions.values()].filter((f) => f.group !== 'idle') };
}

function summarise(run, bare) {
  const perRequest = (us) => us / run.requests;
  const busy = run.functions.reduce((sum, f) => sum + f.us, 0);
  const groups = {};
  for (const f of run.functions) groups[f.group] = (groups[f.group] ?? 0) + perRequest(f.us);
  const byTime = [...run.functions].sort((a, b) => b.us - a.us);
  const shown = (f) => ({ owner: f.owner, name: f.name, usPerRequest: perRequest(f.us), share: f.us / busy });
  const result = {
    side: run.side,
    requests: run.requests,
    usPerRequest: perRequest(busy),
    groups,
    top: byTime.slice(0, TOP).map(shown),
    // Every function of the package that was sampled, and Node's header handling, function by function.
    package: byTime.filter((f) => f.group === 'listing-limits').map(shown),
    headers: byTime.filter((f) => f.group === "Node's header handling").map(shown),
  };
  if (bare) {
    result.beyondBare = {};
    for (const name of new Set([...Object.keys(groups), ...Object.keys(bare.groups)]))
      result.beyondBare[name] = (groups[name] ?? 0) - (bare.groups[name] ?? 0);
  }
  return result;
}

function report(results) {
  const lines = [];
  const line = (f) =>
    `    ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.usPerRequest.toFixed(2).padStart(6)} µs  [${f.owner}] ${f.name}`;
  for (const r of results) {
    lines.push(
      `\n${r.side}: ${r.requests} requests, ${r.usPerRequest.toFixed(1)} µs of CPU per request (idle left out)`,
    );
    const groups = Object.entries(r.groups).sort((a, b) => b[1] - a[1]);
    for (const [name, us] of groups) {
      const beyond = r.beyondBare
        ? ` (${r.beyondBare[name] >= 0 ? '+' : ''}${r.beyondBare[name].toFixed(2)} beyond bare)`
        : '';
      lines.push(`  ${name.padEnd(44)} ${us.toFixed(2).padStart(7)} µs/req${beyond}`);
    }
    lines.push(`  top ${r.top.length} functions by self time:`, ...r.top.map(line));
    if (r.package.length) lines.push("  the package's functions:", ...r.package.map(line));
    lines.push("  Node's header handling:", ...r.headers.map(line));
  }
  return lines;
}

async function main() {
  const sides = process.argv.slice(2);
  const wanted = ['bare', ...(sides.length ? sides : ['listing-limits-memory'])];
  const runs = Object.fromEntries(wanted.map((side) => [side, []]));
  // Rounds alternate the order, as the ruler's do; each side's profiles are pooled.
  for (let round = 1; round <= ROUNDS; round++) {
    for (const side of round % 2 ? wanted : [...wanted].reverse()) runs[side].push(await profileOne(side));
  }
  const bare = summarise(pool(runs.bare));
  const results = [bare, ...wanted.slice(1).map((side) => summarise(pool(runs[side]), bare))];
  for (const line of report(results)) process.stdout.write(`${line}\n`);
  mkdirSync(join(__dirname, 'results'), { recursive: true });
  const file = resolvePath(__dirname, 'results', process.env.BENCH_PROFILE_OUT ?? 'profile.json');
  const settings = { rounds: ROUNDS, durationS: DURATION_S, intervalUs: INTERVAL_US };
  writeFileSync(file, `${JSON.stringify({ date: new Date().toISOString(), ...settings, results }, null, 2)}\n`);
  process.stdout.write(`\nWrote ${file}\n`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
