// Runs listingClient cases in a Node process of its own, which watches its own warnings (a TimeoutOverflowWarning
// is a timer set beyond 2^31-1 ms) and must end by itself once the last case is done: nothing left running.
// Arguments: <the compiled client.js> <JSON: { baseUrl, listing, cases: Case[] }>, where a Case is
//   { name, options?, baseUrl?, steps: Call[][], report?: { path, params, body } }: each step's calls go at once, the
//   steps one after another; then report() is called, if given, and close() always.
// Prints one JSON line per case: { name, steps: Outcome[][], errors: onError's, ms }, then { warnings }.
const [client, spec] = process.argv.slice(2);
const { listingClient } = require(client);

const warnings = [];
process.on('warning', (warning) => warnings.push(`${warning.name}: ${warning.message}`));

/** What a call settled with: its value's `endpoint`, or the error's fields that tests compare. */
function outcome(result) {
  if (result.status === 'fulfilled') return { ok: true };
  const { code, status, waitMs, bannedUntil, message } = result.reason;
  return { code, status, waitMs, bannedUntil: bannedUntil && bannedUntil.toISOString(), message };
}

async function run({ name, options = {}, steps, report, baseUrl = target.baseUrl }, { listing }) {
  const errors = [];
  const onError = (error) => errors.push(error.code);
  const api = listingClient({ listing, baseUrl, token: `Bot ${name}`, onError, ...options });
  const started = Date.now();
  const settled = [];
  for (const step of steps) {
    const calls = step.map(({ method, path, params = { id: '1' }, body }) =>
      method === 'POST' ? api.post(path, params, body) : api.get(path, params),
    );
    settled.push((await Promise.allSettled(calls)).map(outcome));
  }
  if (report) api.report(report.path, report.params, report.body);
  await api.close();
  return { name, steps: settled, errors, ms: Date.now() - started };
}

const { cases, ...target } = JSON.parse(spec);
(async () => {
  for (const c of cases) console.log(JSON.stringify(await run(c, target)));
  // Warnings are emitted on a later tick than the timer that caused them.
  setImmediate(() => console.log(JSON.stringify({ warnings })));
})();
