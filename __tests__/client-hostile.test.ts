// listingClient against servers that answer what no client should believe: every call settles within its bound, in real time.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import type { EndpointRow } from '../lib';
import { type ApiServer, startApiServer } from './helpers/api-server';
import { type Compiled, compile } from './helpers/compiled';

/** Every path of the hostile app, 2 GETs per second; the POSTs the cases send. */
const paths = [
  '/v1/retry-after',
  '/v1/retry-date',
  '/v1/reset-day',
  '/v1/reset-absurd',
  '/v1/window-absurd',
  '/v1/garbage',
  '/v1/banned-soon',
  '/v1/banned-far',
  '/v1/bad-request',
  '/v1/silent',
  '/v1/stalled-body',
  '/v1/huge-body',
];
const table: EndpointRow[] = [
  ...paths.map((path) => ({ method: 'GET', path, limit: 2, windowMs: 1000 })),
  { method: 'POST', path: '/v1/retry-after', limit: 2, windowMs: 1000 },
  { method: 'POST', path: '/v1/silent', limit: 2, windowMs: 1000 },
];

interface Call {
  method: 'GET' | 'POST';
  path: string;
  params?: Record<string, string>;
  body?: unknown;
}
const get = (path: string, n = ''): Call => ({ method: 'GET', path, params: n ? { n } : {} });
const post = (path: string): Call => ({ method: 'POST', path, params: {}, body: { server_count: 1 } });

interface Case {
  name: string;
  options?: Record<string, unknown>;
  steps: Call[][];
  report?: { path: string; params: Record<string, string>; body: unknown };
  /** What each call settled with, step by step. */
  settled: unknown[][];
  /** onError's codes. */
  errors?: string[];
  /** What the server received. */
  requests: Record<string, number>;
  /**
   * The case takes at least `least` ms (its waits are the pacing's and the timeouts') and less than `most`: a bound
   * for a hang (a call that never settles, or waits out a field no client should believe), not a speed.
   */
  least?: number;
  most: number;
}

const ok = { ok: true };
const tooLong = (waitMs: unknown, status?: number, message?: string) =>
  expect.objectContaining({
    code: 'ERR_WAIT_TOO_LONG',
    waitMs,
    ...(status ? { status } : {}),
    ...(message ? { message } : {}),
  });

const cases: Case[] = [
  {
    name: 'Retry-After: 99999999 on a 429: rejects at once, and the next call too, without a request',
    steps: [[get('/v1/retry-after')], [get('/v1/retry-after')]],
    settled: [
      [
        tooLong(
          99_999_999_000,
          429,
          'listingClient: GET /v1/retry-after: would wait 99999999000 ms, more than maxWaitMs ' +
            '(answered 429: Come back later).',
        ),
      ],
      [tooLong(expect.any(Number))],
    ],
    requests: { 'GET /v1/retry-after': 1 },
    most: 5000,
  },
  {
    name: 'Retry-After: a date in the year 9999',
    steps: [[get('/v1/retry-date')]],
    settled: [[tooLong(expect.any(Number), 429)]],
    requests: { 'GET /v1/retry-date': 1 },
    most: 5000,
  },
  {
    name: 'a 429 without Retry-After whose RateLimit resets in a day',
    steps: [[get('/v1/reset-day')]],
    settled: [[tooLong(86_400_000, 429)]],
    requests: { 'GET /v1/reset-day': 1 },
    most: 5000,
  },
  {
    name: 'a 429 whose reset fields are absurd: ignored, the table window is waited, retries end it',
    options: { retries: 1 },
    steps: [[get('/v1/reset-absurd')]],
    settled: [
      [
        expect.objectContaining({
          code: 'ERR_RATE_LIMITED',
          status: 429,
          waitMs: 1000,
          message: 'listingClient: GET /v1/reset-absurd: refused after 2 attempts (answered 429: No).',
        }),
      ],
    ],
    requests: { 'GET /v1/reset-absurd': 2 },
    least: 1000,
    most: 8000,
  },
  {
    name: 'RateLimit-Policy w=999999999999999 on a 200: the window is ignored, the table paces',
    steps: [[get('/v1/window-absurd', '1'), get('/v1/window-absurd', '2'), get('/v1/window-absurd', '3')]],
    settled: [[ok, ok, ok]],
    requests: { 'GET /v1/window-absurd': 3 },
    least: 1000,
    most: 8000,
  },
  {
    name: 'unreadable rate-limit fields on a 200: ignored, the table paces',
    steps: [[get('/v1/garbage', '1'), get('/v1/garbage', '2'), get('/v1/garbage', '3')]],
    settled: [[ok, ok, ok]],
    requests: { 'GET /v1/garbage': 3 },
    least: 1000,
    most: 8000,
  },
  {
    name: 'a 403 whose bannedUntil is "soon": ERR_BANNED without an end, and later calls still go',
    steps: [[get('/v1/banned-soon')], [get('/v1/garbage')]],
    settled: [
      [
        {
          code: 'ERR_BANNED',
          status: 403,
          message:
            'listingClient: GET /v1/banned-soon: the token is banned, the server gave no end (answered 403: Banned).',
        },
      ],
      [ok],
    ],
    requests: { 'GET /v1/banned-soon': 1, 'GET /v1/garbage': 1 },
    most: 5000,
  },
  {
    name: 'a 403 banned until the last day a Date can hold: later calls reject without a request',
    steps: [[get('/v1/banned-far')], [get('/v1/garbage')]],
    settled: [
      [expect.objectContaining({ code: 'ERR_BANNED', status: 403, bannedUntil: '+275760-09-13T00:00:00.000Z' })],
      [expect.objectContaining({ code: 'ERR_BANNED', bannedUntil: '+275760-09-13T00:00:00.000Z' })],
    ],
    requests: { 'GET /v1/banned-far': 1 },
    most: 5000,
  },
  {
    name: 'a 400 with a message: ERR_HTTP says it',
    steps: [[get('/v1/bad-request')]],
    settled: [
      [
        {
          code: 'ERR_HTTP',
          status: 400,
          message: 'listingClient: GET /v1/bad-request: answered 400: Bad page number.',
        },
      ],
    ],
    requests: { 'GET /v1/bad-request': 1 },
    most: 5000,
  },
  {
    name: 'a server that accepts a GET and never answers: aborted at timeoutMs, sent again once, then ERR_TIMEOUT',
    options: { timeoutMs: 300, retries: 1 },
    steps: [[get('/v1/silent')]],
    settled: [[{ code: 'ERR_TIMEOUT', message: 'listingClient: GET /v1/silent: had no whole answer within 300 ms.' }]],
    requests: { 'GET /v1/silent': 2 },
    least: 600,
    most: 7000,
  },
  {
    name: 'a server that accepts a POST and never answers: ERR_TIMEOUT, never sent twice',
    options: { timeoutMs: 300, retries: 1 },
    steps: [[post('/v1/silent')]],
    settled: [[expect.objectContaining({ code: 'ERR_TIMEOUT' })]],
    requests: { 'POST /v1/silent': 1 },
    least: 300,
    most: 6000,
  },
  {
    name: 'a body that never ends',
    options: { timeoutMs: 300, retries: 0 },
    steps: [[get('/v1/stalled-body')]],
    settled: [[expect.objectContaining({ code: 'ERR_TIMEOUT' })]],
    requests: { 'GET /v1/stalled-body': 1 },
    least: 300,
    most: 6000,
  },
  {
    name: 'a body of 17 MiB: cut off at 16 MiB',
    steps: [[get('/v1/huge-body')]],
    settled: [
      [
        {
          code: 'ERR_TOO_LARGE',
          status: 200,
          message: 'listingClient: GET /v1/huge-body: answered a body over 16777216 bytes.',
        },
      ],
    ],
    requests: { 'GET /v1/huge-body': 1 },
    most: 5000,
  },
  {
    name: 'close() after a report() refused with Retry-After: 99999999: onError is told, close() resolves',
    steps: [],
    report: { path: '/v1/retry-after', params: {}, body: { server_count: 1 } },
    settled: [],
    errors: ['ERR_WAIT_TOO_LONG'],
    requests: { 'POST /v1/retry-after': 1 },
    most: 5000,
  },
  {
    name: 'close() after a report() to a server that never answers: it fails at timeoutMs, close() resolves',
    options: { timeoutMs: 300 },
    steps: [],
    report: { path: '/v1/silent', params: {}, body: { server_count: 1 } },
    settled: [],
    errors: ['ERR_TIMEOUT'],
    requests: { 'POST /v1/silent': 1 },
    least: 300,
    most: 6000,
  },
];

/** A JSON line of client-cases.js. */
interface Ran {
  name: string;
  steps: unknown[][];
  errors: string[];
  ms: number;
}

let compiled: Compiled;
let server: ApiServer;
let ran: Ran[];
let warnings: string[] | undefined;
let exit: { code: number | null; signal: string | null };
let stderr = '';

beforeAll(async () => {
  compiled = compile('client-hostile');
  // A hostile app of its own for each case, so that the requests each one received are told apart.
  server = await startApiServer(
    compiled,
    cases.map(() => ({ kind: 'hostile' })),
  );
  const spec = {
    listing: table,
    cases: cases.map(({ name, options, steps, report }, i) => ({
      name,
      options,
      steps,
      report,
      baseUrl: server.urls[i],
    })),
  };
  const script = join(__dirname, 'helpers', 'client-cases.js');
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [
    script,
    join(compiled.cjs, 'lib', 'client.js'),
    JSON.stringify(spec),
  ]);
  let stdout = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // A bound for a hang of the whole run, far beyond what the cases take together (about 5 s).
  const limit = setTimeout(() => child.kill('SIGKILL'), 45_000);
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  clearTimeout(limit);
  exit = { code, signal };
  const lines = stdout.split('\n').filter((line) => line !== '');
  const parsed = lines.flatMap((line) => {
    try {
      return [JSON.parse(line) as Ran | { warnings: string[] }];
    } catch {
      stderr += `stdout: ${line}\n`;
      return [];
    }
  });
  ran = parsed.filter((line): line is Ran => 'name' in line);
  warnings = parsed.find((line): line is { warnings: string[] } => 'warnings' in line)?.warnings;
}, 90_000);

afterAll(async () => {
  await server?.stop();
  compiled?.remove();
});

it('runs every case in a process of its own that ends by itself, without a warning (no TimeoutOverflowWarning)', () => {
  expect({ exit, stderr, cases: ran.map((r) => r.name), warnings }).toEqual({
    exit: { code: 0, signal: null },
    stderr: '',
    cases: cases.map((c) => c.name),
    warnings: [],
  });
});

it.each(cases.map((c, i) => [c.name, i] as const))('%s', async (_name, i) => {
  const c = cases[i] as Case;
  const result = ran[i] as Ran;
  expect({ steps: result.steps, errors: result.errors }).toEqual({ steps: c.settled, errors: c.errors ?? [] });
  expect(await server.requests(i)).toEqual(c.requests);
  expect({ atLeast: result.ms >= (c.least ?? 0), within: result.ms < c.most }).toEqual({ atLeast: true, within: true });
});
