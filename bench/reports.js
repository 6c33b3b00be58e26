// The lines each part of the benchmark prints, made from its results alone: `npm run bench` prints them, and
// docs/performance.md and docs/client.md quote them, checked against bench/results/*.json by __tests__/bench-figures.
const fixed = (n, digits = 2) => (n === null || n === undefined ? '-' : n.toFixed(digits));

/** A table of text: each column as wide as its widest cell, a line of dashes under the header. */
function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (cells) =>
    cells
      .map((c, i) => String(c).padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
}

/** The autocannon view: each variant's medians over the rounds. */
function httpLines(http) {
  return table(
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
  );
}

/** The middleware in process: each task's mean and its own cost beyond the harness. */
function microLines(micro) {
  return [
    ...table(
      ['task', 'mean µs', 'own cost µs'],
      micro.rows.map((r) => [r.task, fixed(r.meanUs, 3), fixed(r.ownCostUs, 3)]),
    ),
    `1,000-row table costs ${fixed(micro.bigTableRatio)} × listing B`,
    `sliding windows cost ${fixed(micro.slidingCostRatio)} × fixed windows (own cost, same table and tokens)`,
  ];
}

/** The heap: bytes per counter, per remembered refusal, per sliding key, and a flood of tokens. */
function memoryLines(memory) {
  const mib = (bytes) => (bytes / 2 ** 20).toFixed(1);
  return [
    `bytes per tracked counter (memory store): ${Math.round(memory.bytesPerCounter)}`,
    `bytes per remembered refusal (Redis store's local refusals): ${Math.round(memory.bytesPerRememberedRefusal)}`,
    `bytes per key of a sliding window holding 1, 25, 100 requests: ${Object.values(memory.bytesPerSlidingKey)
      .map((bytes) => Math.round(bytes))
      .join(', ')}`,
    `bytes per tracked counter (rate-limiter-flexible's RateLimiterMemory): ${Math.round(memory.bytesPerCounterRateLimiterMemory)}`,
    `heap growth after ${memory.n} distinct tokens: ${mib(memory.floodWithoutAuthenticate.heapGrowthBytes)} MiB ` +
      `without authenticate, ${mib(memory.floodWithAuthenticate.heapGrowthBytes)} MiB with authenticate`,
  ];
}

/** Bans at scale: an unrelated request, a batch of bans, and the bytes a ban takes. */
function bansLines(results) {
  const us = (n) => `${n.toFixed(1)} µs`;
  const ms = (n) => `${n.toFixed(1)} ms`;
  const lines = [];
  for (const store of ['memory', 'redis']) {
    const r = results[store];
    if (!r) continue;
    const [none, full] = [0, results.bans];
    const [first, last] = [0, results.bans - results.batch];
    lines.push(
      `${store} store: an unrelated request ${us(r.unrelatedUs[none])} with ${none} bans, ${us(r.unrelatedUs[full])} with ` +
        `${full}; ${results.batch} more bans ${ms(r.batchMs[first])} from ${first}, ${ms(r.batchMs[last])} from ${last} ` +
        `(an unrelated request meanwhile waited at most ${ms(r.longestUnrelatedMs[first])}, ` +
        `${ms(r.longestUnrelatedMs[last])})`,
    );
  }
  const b = results.bytes;
  lines.push(
    `bytes per ban in force, memory store (its state and one middleware's cache): ${Math.round(b.memoryStore)}`,
  );
  if (b.redisStoreCache !== undefined) {
    lines.push(
      `bytes per ban in force in the cache of an instance of the Redis store: ${Math.round(b.redisStoreCache)}`,
    );
    lines.push(
      `Redis memory per record (its hash field, changes and ends entries): ${Math.round(b.redisPerRecord)} bytes`,
    );
  }
  return lines;
}

/** The operator's page at scale: each load's size and times, with each store. */
function pagesLines(results) {
  const ms = (n) => `${n.toFixed(1)} ms`;
  const kib = (n) => `${(n / 1024).toFixed(0)} KiB`;
  const load = (l) =>
    `${kib(l.bytes)}, ${ms(l.medianMs)} median, ${ms(l.p95Ms)} p95, ${ms(l.longestMs)} longest ` +
    `(event loop blocked ${ms(l.longestBlockMs)} at most)`;
  const lines = [];
  for (const store of ['memory', 'redis']) {
    const r = results[store];
    if (!r) continue;
    lines.push(
      `${store} store, the operator's page: empty ${load(r.empty)}`,
      `  with ${results.requests} pending requests: ${load(r.requests)}`,
      `  and ${results.bans} bans besides: ${load(r.bans)}`,
      `  filing a request: ${ms(r.filingMs)} into a store filling up, ${ms(r.fullFilingMs)} into the full store`,
    );
  }
  return lines;
}

/** The client against its bound: each case and endpoint. */
function clientLines(report) {
  return table(
    [
      'window',
      'delay ms',
      'endpoint',
      'N',
      'L',
      'W ms',
      'took ms',
      'beyond 2W',
      'RTT ms',
      'bound ms',
      'took/bound',
      '429s',
    ],
    report.map((r) => [
      r.window,
      r.delayMs ? `0-${r.delayMs}` : '0',
      r.endpoint,
      r.calls,
      r.limit,
      r.windowMs,
      r.ms.toFixed(0),
      (r.ms - 2 * r.windowMs).toFixed(0),
      r.rtt.toFixed(1),
      r.bound.toFixed(0),
      (r.ms / r.bound).toFixed(3),
      r.limited,
    ]),
  );
}

module.exports = { bansLines, clientLines, httpLines, memoryLines, microLines, pagesLines };
