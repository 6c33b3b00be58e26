// Plain scripts (CommonJS and ES modules) that await paced calls end when their work is done, not before: the server has it all.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { EndpointRow } from '../lib';
import { type ApiServer, type AppSpec, startApiServer } from './helpers/api-server';
import { type Compiled, compile } from './helpers/compiled';

const run = promisify(execFile);

/** The first lines of a script: the client loaded from the compiled package, as require() or import gives it. */
const loaders = {
  cjs: (dir: Compiled) => `const { listingClient } = require(${JSON.stringify(join(dir.cjs, 'lib', 'client.js'))});`,
  mjs: (dir: Compiled) =>
    `import { listingClient } from ${JSON.stringify(pathToFileURL(join(dir.esm, 'client.js')).href)};`,
};
type Kind = keyof typeof loaders;

/** Short windows: the third GET and the report wait for their turn, a second each. */
const table: EndpointRow[] = [
  { method: 'GET', path: '/v1/bots/:id', limit: 2, windowMs: 1000 },
  { method: 'POST', path: '/v1/bots/:id', limit: 1, windowMs: 1000 },
  { method: 'POST', path: '/v1/silent', limit: 1, windowMs: 1000 },
];

/** Five awaited calls, then a report and close(): the report waits for the POST row, inside close(). */
const paced = (kind: Kind, baseUrl: string) => `
const api = listingClient({ listing: ${JSON.stringify(table)}, baseUrl: ${JSON.stringify(baseUrl)}, token: 'Bot ${kind}' });
async function main() {
  for (let n = 1; n <= 4; n++) {
    await api.get('/v1/bots/:id', { id: '1', n });
    console.log('get ' + n);
  }
  await api.post('/v1/bots/:id', { id: '1' }, { server_count: 41 });
  console.log('post');
  api.report('/v1/bots/:id', { id: '1' }, { server_count: 42 });
  await api.close();
  console.log('closed');
}
${kind === 'mjs' ? 'await main();' : 'main();'}
`;

/**
 * A report to a server that never answers: close() waits until it has failed, at timeoutMs. A request to the server
 * first loads fetch and leaves it a connection: the report is written on it at once, before any timer can run, so
 * the server has it however slow the machine (a first fetch can spend the 300 ms loading and connecting).
 */
const silent = (kind: Kind, baseUrl: string) => `
const onError = (error) => console.log('error ' + error.code);
const api = listingClient({ listing: ${JSON.stringify(table)}, baseUrl: ${JSON.stringify(baseUrl)}, timeoutMs: 300, onError });
async function main() {
  await (await fetch(${JSON.stringify(`${baseUrl}/metrics`)})).text();
  api.report('/v1/silent', {}, { server_count: 1 });
  await api.close();
  console.log('closed');
}
${kind === 'mjs' ? 'await main();' : 'main();'}
`;

const kinds: Kind[] = ['cjs', 'mjs'];
let compiled: Compiled;
let server: ApiServer;
/** Per kind: the paced script's and the silent one's exit and output. */
let results: Record<Kind, { paced: unknown; silent: unknown; ms: number }>;

beforeAll(async () => {
  compiled = compile('client-scripts');
  // An app of its own for each kind's paced script; a hostile app for the silent ones.
  const apps: AppSpec[] = [{ kind: 'rows', rows: table }, { kind: 'rows', rows: table }, { kind: 'hostile' }];
  server = await startApiServer(compiled, apps);
  const script = async (kind: Kind, name: string, code: string) => {
    const file = join(compiled.scratch, `${name}.${kind}`);
    writeFileSync(file, `${loaders[kind](compiled)}\n${code}`);
    // A bound for a hang, far beyond what the scripts take.
    return run(process.execPath, [file], { timeout: 30_000 }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      ({ code, stdout, stderr }: { code: number; stdout: string; stderr: string }) => ({ code, stdout, stderr }),
    );
  };
  const entries = await Promise.all(
    kinds.map(async (kind, i) => {
      const started = Date.now();
      const [paced_, silent_] = await Promise.all([
        script(kind, 'paced', paced(kind, server.urls[i] as string)),
        script(kind, 'silent', silent(kind, server.urls[2] as string)),
      ]);
      return [kind, { paced: paced_, silent: silent_, ms: Date.now() - started }] as const;
    }),
  );
  results = Object.fromEntries(entries) as typeof results;
}, 90_000);

afterAll(async () => {
  await server?.stop();
  compiled?.remove();
});

it.each(kinds.map((kind, i) => [kind, i] as const))(
  '%s: five awaited paced calls, then report() and close(): every line printed, exit 0, the server has the report',
  async (kind, i) => {
    expect(results[kind].paced).toEqual({
      code: 0,
      stdout: 'get 1\nget 2\nget 3\nget 4\npost\nclosed\n',
      stderr: '',
    });
    expect(await server.reports(i)).toEqual({ '/v1/bots/1': { server_count: 42 } });
    const outcomes = await server.outcomes(i);
    expect([outcomes['GET /v1/bots/:id'], outcomes['POST /v1/bots/:id']]).toEqual([
      expect.objectContaining({ allowed: 4, limited: 0 }),
      expect.objectContaining({ allowed: 2, limited: 0 }),
    ]);
    // The third GET waits a window after the first's answer, the report a window after the POST's.
    expect(results[kind].ms).toBeGreaterThanOrEqual(2000);
  },
);

it.each(kinds)('%s: close() keeps the process until a report to a server that never answers has failed', (kind) => {
  expect(results[kind].silent).toEqual({ code: 0, stdout: 'error ERR_TIMEOUT\nclosed\n', stderr: '' });
});

it('the server that never answers received each report once', async () => {
  expect(await server.requests(2)).toEqual({ 'POST /v1/silent': 2 });
});
