// A node:cluster app, primary and workers in processes of their own, for the cluster store's tests.
// Arguments: <compiled lib dir> <options JSON: { workers, primary, store, timeoutMs, onFailure, apps: [{ prefix, rows
// or listing, window, ban }] }>. `primary: false` leaves out clusterPrimary(); `store` is 'cluster' (default), 'memory'
// or 'perProcess'. Each worker serves the apps' middlewares, each counting only requests whose `X-App` header is its
// index (none: the first), its operator's methods at POST /control/<app>/<method> (a JSON array of arguments,
// answering {"result"} or {"error"}), the pages of the first app under /admin/limits and /limits/request, and the
// tables' paths; each answer says its worker in `X-Worker`. The primary prints JSON lines: {"port":n} once every
// worker listens, {"replaced":id} once a worker it killed (a line {"kill":i} on its standard input: the i-th live
// worker, SIGKILL) is replaced and listens, {"hostile":n} once it sent every worker n malformed messages (a line
// {"hostile":true}). It ends, with its workers, when its standard input closes.
const cluster = require('node:cluster');
const [lib, json] = process.argv.slice(2);
const options = JSON.parse(json);
const { clusterPrimary, clusterStore, listingLimits, memoryStore } = require(lib);
const TAG = 'listing-limits/cluster';

process.on('unhandledRejection', (reason) => {
  console.error(`unhandledRejection: ${reason instanceof Error ? reason.stack : String(reason)}`);
});

if (cluster.isPrimary) {
  if (options.primary !== false) clusterPrimary();
  let port;
  const waiting = new Map();
  const fork = () =>
    new Promise((resolve) => {
      const worker = cluster.fork();
      waiting.set(worker.id, resolve);
      // The app's own messages, untagged, beside the store's: each is the other's to ignore.
      worker.on('message', (message) => {
        if (message?.app !== 'listening') return;
        port = message.port;
        waiting.get(worker.id)?.(worker.id);
        worker.send({ app: 'hello', [TAG]: 2 });
      });
    });
  Promise.all(Array.from({ length: options.workers ?? 3 }, fork)).then(() => console.log(JSON.stringify({ port })));
  const hostile = [
    { [TAG]: 1 },
    { [TAG]: 1, out: 'x' },
    { [TAG]: 1, out: [null, [1e9, 1, 'an answer no call waits for'], ['p', 'whole', 'e', 'x', []], [1, 7]] },
    { [TAG]: 1, out: [['listing-limits', 'changes', 'e', 1, [['ban:t:x', 5]]]] },
  ];
  require('node:readline')
    .createInterface({ input: process.stdin })
    .on('line', (line) => {
      const command = JSON.parse(line);
      const live = Object.values(cluster.workers).filter((w) => w.isConnected());
      if (command.kill !== undefined) {
        live[command.kill].process.kill('SIGKILL');
        fork().then((id) => console.log(JSON.stringify({ replaced: id })));
      }
      if (command.hostile) {
        for (const worker of live) for (const message of hostile) worker.send(message);
        console.log(JSON.stringify({ hostile: hostile.length }));
      }
    })
    .on('close', () => {
      for (const worker of Object.values(cluster.workers)) worker.process.kill();
      process.exit(0);
    });
} else {
  const express = require('express');
  const { limitsAdmin, limitsRequestPage } = require(`${lib}/pages`);
  const storeOf = (prefix) => {
    if (options.store === 'memory') return undefined;
    if (options.store === 'perProcess') return memoryStore({ perProcess: true });
    const { timeoutMs = 10_000, onFailure = 'closed' } = options;
    return clusterStore({ prefix, timeoutMs, onFailure, callTimeoutMs: 5000 });
  };
  const app = express();
  app.use((_req, res, next) => {
    res.set('X-Worker', String(cluster.worker.id));
    next();
  });
  const all = options.apps.map(({ prefix, rows, listing, window, ban }, i) =>
    listingLimits(rows ?? listing, {
      store: storeOf(prefix),
      window,
      ban,
      skip: (req) => (req.get('x-app') ?? '0') !== String(i),
    }),
  );
  const methods = ['ban', 'unban', 'grant', 'revoke', 'usage', 'reset', 'history', 'bans', 'grants'];
  app.post('/control/:app/:method', express.json(), (req, res) => {
    const limits = all[Number(req.params.app)];
    if (!limits || !methods.includes(req.params.method)) return res.status(404).json({ error: 'no such method' });
    Promise.resolve()
      .then(() => limits[req.params.method](...req.body))
      .then(
        (result) => res.json({ result: result ?? null }),
        (error) => res.json({ error: error.message, code: error.code }),
      );
  });
  // Malformed messages of the store's kind, to the primary: skipped there, and this worker's requests still answered.
  app.post('/hostile', (_req, res) => {
    for (const message of [{ [TAG]: 1 }, { [TAG]: 1, calls: [[1], [2, 'p', 'hit', '{', 'k'], [3, 'p', 'nope']] }])
      process.send(message);
    process.send({ [TAG]: 1, calls: [[4, 'p', 'change', [{ field: 'ban:x', value: 'not json' }], null, null]] });
    res.json({ sent: 3 });
  });
  const secret = 'a secret of every worker, 32 chars';
  app.use('/admin/limits', limitsAdmin(all[0], { authorize: { token: 'admin-token-of-every-worker' }, secret }));
  for (const limits of all) app.use(limits);
  app.use('/limits/request', limitsRequestPage(all[0], { secret }));
  const paths = new Set();
  for (const { rows } of options.apps) for (const row of rows ?? []) paths.add(row.path);
  for (const path of ['/v1/bots/:id', ...paths]) app.get(path, (_req, res) => res.json({ ok: true }));
  process.on('message', (message) => {
    if (message?.app === 'hello') process.send({ app: 'hello back' });
  });
  const server = app.listen(0, '127.0.0.1', () => process.send({ app: 'listening', port: server.address().port }));
}
