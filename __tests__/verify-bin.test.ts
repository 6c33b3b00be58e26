// The verifier as users run it: the `listing-limits` command in a process of its own, in real time, against APIs
// built on the rate limiters people run, each in a process of its own, with the contract's numbers (its endpoints of
// one-second windows, so that a run lasts about a second and a half); and against servers that are down.
import { spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type ListingName, listings } from '../lib';
import type { VerifyReport } from '../lib/verify';
import { type Compiled, compile } from './helpers/compiled';
import { type Fault, KINDS, type WorldKind } from './helpers/world-apis';
import { startWorldApi, type WorldProcess } from './helpers/world-process';

/** The endpoints of one-second windows: the command checks them in about a second and a half. */
const short: Record<ListingName, string[]> = {
  A: ['GET /v1/statistics', 'GET /v1/users/:id'],
  B: ['GET /v1/statistics', 'GET /v1/bots/:id', 'GET /v1/users/:id'],
};

interface Run {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** From the spawn to the exit. */
  readonly ms: number;
}

/** Longer than any run may last: then the command is killed, and the test fails saying so. */
const HANG_MS = 60_000;

let compiled: Compiled;

/** Runs the command with `args` in a process of its own, until it exits by itself. */
function command(args: readonly string[]): Promise<Run> {
  const started = Date.now();
  const child = spawn(process.execPath, [join(compiled.cjs, 'lib', 'cli.js'), ...args]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const hang = setTimeout(() => child.kill('SIGKILL'), HANG_MS);
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      clearTimeout(hang);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** Runs `task` on each item, `concurrency` at a time. */
async function pool<T, R>(items: readonly T[], concurrency: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return results;
}

/** The endpoints that fail, with their findings about the contract. */
const failing = (report: VerifyReport) =>
  Object.fromEntries(report.endpoints.filter((e) => !e.ok).map((e) => [e.endpoint, e.findings]));

/** Every line the command wrote to stderr, off a terminal: one per event, each naming its endpoint. */
const progressLine = /^\[\d\/\d\] (GET|POST) \/v1\/\S+: (probing|waiting \d+ s .+|pass|fail)$/;

interface Case {
  readonly name: string;
  readonly kind: WorldKind;
  readonly listing: ListingName;
  readonly fault?: Fault;
  readonly only: readonly string[];
  /** The endpoints that fail, with their findings about the contract: none for an API that honours it. */
  readonly failing: Record<string, string[]>;
}

const honest: Case[] = [
  ...KINDS.map((kind): Case => ({ name: `${kind}, listing B`, kind, listing: 'B', only: short.B, failing: {} })),
  ...(['express-rate-limit draft-7', 'rate-limiter-flexible, no headers'] as const).map((kind): Case => ({
    name: `${kind}, listing A`,
    kind,
    listing: 'A',
    only: short.A,
    failing: {},
  })),
];

const faulty: Case[] = [
  {
    name: 'express-rate-limit draft-7, a limit off by one',
    kind: 'express-rate-limit draft-7',
    listing: 'B',
    fault: { kind: 'limit', endpoint: 'GET /v1/bots/:id', limit: 3 },
    only: short.B,
    failing: { 'GET /v1/bots/:id': ['allowed 3 requests, contract says 2'] },
  },
  {
    name: '@fastify/rate-limit, path parameters counted apart',
    kind: '@fastify/rate-limit',
    listing: 'B',
    fault: { kind: 'params' },
    only: short.B,
    failing: {
      'GET /v1/bots/:id': ['path parameters counted separately'],
      'GET /v1/users/:id': ['path parameters counted separately'],
    },
  },
  {
    name: 'express-rate-limit draft-8, one counter per address',
    kind: 'express-rate-limit draft-8',
    listing: 'B',
    fault: { kind: 'ip' },
    only: short.B,
    failing: Object.fromEntries(short.B.map((name) => [name, ['a different token shares the counter']])),
  },
  {
    name: 'rate-limiter-flexible without headers, a window twice as long',
    kind: 'rate-limiter-flexible, no headers',
    listing: 'B',
    fault: { kind: 'window', endpoint: 'GET /v1/users/:id' },
    only: short.B,
    failing: { 'GET /v1/users/:id': ["window longer than the contract's: still refused when its 1 s had passed"] },
  },
  {
    name: 'express-rate-limit legacy, 503 instead of 429',
    kind: 'express-rate-limit legacy',
    listing: 'B',
    fault: { kind: 'status', status: 503 },
    only: short.B,
    failing: Object.fromEntries(short.B.map((name) => [name, ['answered 503 where the contract says 429']])),
  },
  {
    name: '@fastify/rate-limit draft, an endpoint without a limit',
    kind: '@fastify/rate-limit draft',
    listing: 'B',
    fault: { kind: 'unlimited', endpoint: 'GET /v1/statistics' },
    only: short.B,
    failing: { 'GET /v1/statistics': ['allowed 6 requests, contract says 5'] },
  },
  {
    name: 'express-rate-limit draft-7, POST counted on the counter of GET',
    kind: 'express-rate-limit draft-7',
    listing: 'B',
    fault: { kind: 'post-shares-get' },
    // Told from the middle of the POST's 15 s window: 2 pass there, where the contract allows 15.
    only: ['POST /v1/bots/:id'],
    failing: { 'POST /v1/bots/:id': ['allowed 3 requests, contract says 15'] },
  },
];

const cases = [...honest, ...faulty];
const apis: WorldProcess[] = [];
let runs: Run[];

beforeAll(async () => {
  compiled = compile('verify-bin', { esm: false });
  apis.push(
    ...(await Promise.all(
      cases.map(({ kind, listing, fault }) => startWorldApi({ kind, rows: listings[listing], fault })),
    )),
  );
  // A few at a time: each run is mostly waiting, but its bursts must not queue behind other processes' start.
  runs = await pool(cases, 4, async (c) => {
    const api = apis[cases.indexOf(c)] as WorldProcess;
    const only = c.only.flatMap((name) => ['--only', name]);
    const run = await command(['verify', api.url, '--listing', c.listing, ...only, '--token', 'Bot verify', '--json']);
    await api.settled();
    return run;
  });
}, 180_000);

afterAll(async () => {
  await Promise.all(apis.map((api) => api.stop()));
  compiled?.remove();
});

describe('APIs that honour the contract, each in a process of its own', () => {
  it.each(honest.map((c) => [c.name, cases.indexOf(c)] as const))(
    '%s: every endpoint passes, whatever the fields; exit 0',
    (_name, i) => {
      const run = runs[i] as Run;
      const api = apis[i] as WorldProcess;
      const report = JSON.parse(run.stdout) as VerifyReport;
      expect(report.endpoints.map((e) => [e.endpoint, e.findings, e.headers.findings, e.ok])).toEqual(
        (cases[i] as Case).only.map((name) => [name, [], [], true]),
      );
      expect(report.ok).toBe(true);
      expect(run.code).toBe(0);
      expect(
        run.stderr
          .trimEnd()
          .split('\n')
          .filter((line) => !progressLine.test(line)),
      ).toEqual([]);
      // The server answered every request the report tells of, and no other.
      expect(api.answered).toHaveLength(report.endpoints.reduce((sum, e) => sum + e.requests, 0));
      expect(api.stderr()).toBe('');
    },
  );
});

describe('APIs with one fault each, each in a process of its own', () => {
  it.each(faulty.map((c) => [c.name, cases.indexOf(c)] as const))(
    '%s: found on the endpoint it is on, and no other; exit 1',
    (_name, i) => {
      const run = runs[i] as Run;
      const report = JSON.parse(run.stdout) as VerifyReport;
      expect(failing(report)).toEqual((cases[i] as Case).failing);
      expect(report.ok).toBe(false);
      expect(run.code).toBe(1);
      expect((apis[i] as WorldProcess).stderr()).toBe('');
    },
  );
});

describe('a server that is down: exit 1 within the timeout, every endpoint failing, never a pass', () => {
  const servers: Server[] = [];
  const sockets: Socket[] = [];
  afterAll(() => {
    for (const socket of sockets) socket.destroy();
    for (const server of servers) server.close();
  });

  /** A TCP server on a free port of 127.0.0.1 that does `onSocket` with each connection. */
  async function tcp(onSocket: (socket: Socket) => void): Promise<string> {
    const server = createServer(onSocket);
    servers.push(server);
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const timeoutMs = 1000;
  const everyEndpoint = listings.B.map((row) => `${row.method} ${row.path}`);

  it.each([
    [
      'refusing connections',
      async () => {
        const url = await tcp(() => {});
        await new Promise((closed) => (servers.pop() as Server).close(closed));
        return url;
      },
      /^request failed: ECONNREFUSED$/,
    ],
    [
      'accepting connections and closing them',
      () => tcp((socket) => socket.destroy()),
      /^request failed: (no response within 1 s|UND_ERR_SOCKET|ECONNRESET)$/,
    ],
    [
      'accepting connections and never answering',
      () => tcp((socket) => sockets.push(socket)),
      /^request failed: no response within 1 s$/,
    ],
  ])('%s', async (_what, serve, finding) => {
    const url = await serve();
    const run = await command(['verify', url, '--listing', 'B', '--timeout', String(timeoutMs), '--json']);
    expect({ code: run.code, signal: run.signal }).toEqual({ code: 1, signal: null });
    const report = JSON.parse(run.stdout) as VerifyReport;
    expect(report.ok).toBe(false);
    expect(report.endpoints.map((e) => [e.endpoint, e.findings, e.requests])).toEqual(
      everyEndpoint.map((name) => [name, [expect.stringMatching(finding)], 1]),
    );
    // Every endpoint at once, each stopped at its first request: one timeout, and the process's start.
    expect(run.ms).toBeLessThan(timeoutMs + HANG_MS / 2);
  });

  it('prints the table and its summary, and tells each endpoint failed on stderr', async () => {
    const url = await tcp((socket) => socket.destroy());
    const run = await command(['verify', url, '--listing', 'A', '--timeout', String(timeoutMs)]);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('\n\n6 of 6 endpoints fail: 6 on the contract.\n');
    // No answer came: the header fields are not judged, neither passed nor failed.
    const headersTable = (run.stdout.split('\n\n')[2] as string).split('\n');
    expect(headersTable.map((line) => line.replace(/ +/g, ' ').trimEnd())).toEqual([
      'Headers Result Sent Findings',
      ...listings.A.map((row) => `${row.method} ${row.path} not probed`),
    ]);
    expect(
      run.stderr
        .trimEnd()
        .split('\n')
        .filter((line) => line.endsWith(': fail')),
    ).toHaveLength(6);
  });
});
