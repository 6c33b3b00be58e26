// verifyContract against APIs built on the rate limiters people run, over real sockets on a fake clock: each that
// enforces listing B passes whatever fields it sends, and each fault is found on the endpoint it is on.
import { listings } from '../lib';
import { type EndpointReport, type VerifyOptions, type VerifyReport, verifyContract } from '../lib/verify';
import { serverPerTest } from './helpers/serve';
import { type Fault, KINDS, type WorldKind, worldApi } from './helpers/world-apis';

const T0 = Date.UTC(2026, 0, 1);

// Date and setTimeout are fake: a window ends when the verifier's sleep moves the clock, never because the machine
// was slow (rate-limiter-flexible drops a counter with a timer of its window). Sockets run for real.
beforeEach(() => {
  jest.useFakeTimers({
    now: T0,
    doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval'],
  });
});
afterEach(() => jest.useRealTimers());

const start = serverPerTest();
const sleep = async (ms: number) => {
  jest.setSystemTime(Date.now() + ms);
};

async function verify(kind: WorldKind, options: Partial<VerifyOptions> = {}, fault?: Fault): Promise<VerifyReport> {
  const served = await start(await worldApi({ kind, rows: listings.B, fault }));
  return verifyContract({ baseUrl: served.url, listing: 'B', sleep, concurrency: 1, ...options });
}

/** The endpoints that fail on the contract, with those findings. */
const failing = (report: VerifyReport) =>
  Object.fromEntries(report.endpoints.filter((e) => e.findings.length > 0).map((e) => [e.endpoint, e.findings]));

/** What each kind sends, and what is noted of it: it contradicts nothing. */
const headersOf: Record<WorldKind, EndpointReport['headers']> = {
  'express-rate-limit draft-6': {
    probed: true,
    sent: ['draft 6', 'Retry-After'],
    findings: [],
    notes: [
      'RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset of draft 6',
      'sent no X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Reset-After',
    ],
  },
  'express-rate-limit draft-7': {
    probed: true,
    sent: ['draft 7', 'Retry-After'],
    findings: [],
    notes: [
      'RateLimit in the syntax of draft 7 (limit=, remaining=, reset=)',
      'sent no X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Reset-After',
    ],
  },
  'express-rate-limit draft-8': {
    probed: true,
    sent: ['drafts 8-11', 'Retry-After'],
    findings: [],
    notes: ['sent no X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Reset-After'],
  },
  'express-rate-limit legacy': {
    probed: true,
    sent: ['X-RateLimit', 'Retry-After'],
    findings: [],
    notes: ['sent no RateLimit-Policy, RateLimit, X-RateLimit-Reset-After'],
  },
  '@fastify/rate-limit': {
    probed: true,
    sent: ['X-RateLimit', 'Retry-After'],
    findings: [],
    notes: [
      'X-RateLimit-Reset in seconds until the reset, not a Unix time',
      'sent no RateLimit-Policy, RateLimit, X-RateLimit-Reset-After',
    ],
  },
  '@fastify/rate-limit draft': {
    probed: true,
    sent: ['draft 6', 'Retry-After'],
    findings: [],
    notes: [
      'RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset of draft 6',
      'sent no RateLimit-Policy, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-RateLimit-Reset-After',
    ],
  },
  'rate-limiter-flexible, no headers': {
    probed: true,
    sent: [],
    findings: [],
    notes: ['no Retry-After on 429', 'sent no rate-limit fields'],
  },
};

describe.each(KINDS)('%s, enforcing listing B', (kind) => {
  it('passes on every endpoint, its fields read and noted, never held against it', async () => {
    const report = await verify(kind);
    expect(report.endpoints.map((e) => [e.endpoint, e.ok, e.findings, e.notes, e.headers, e.windowSeen])).toEqual(
      listings.B.map((row) => [`${row.method} ${row.path}`, true, [], [], headersOf[kind], 'fixed']),
    );
    expect(report.ok).toBe(true);
  });

  it('with strictHeaders, fails on the header notes alone', async () => {
    const report = await verify(kind, { only: ['GET /v1/statistics'], strictHeaders: true });
    expect(report.endpoints.map((e) => [e.ok, e.findings, e.headers])).toEqual([
      [false, [], { ...headersOf[kind], findings: headersOf[kind].notes, notes: [] }],
    ]);
  });

  it.each<{ name: string; fault: Fault; only: string[]; failing: Record<string, string[]> }>([
    {
      name: 'a limit off by one',
      fault: { kind: 'limit', endpoint: 'GET /v1/bots/:id', limit: 3 },
      only: ['GET /v1/statistics', 'GET /v1/bots/:id'],
      failing: { 'GET /v1/bots/:id': ['allowed 3 requests, contract says 2'] },
    },
    {
      name: 'path parameters counted apart',
      fault: { kind: 'params' },
      only: ['GET /v1/statistics', 'GET /v1/bots/:id'],
      failing: { 'GET /v1/bots/:id': ['path parameters counted separately'] },
    },
    {
      name: 'one counter per address',
      fault: { kind: 'ip' },
      only: ['GET /v1/statistics', 'GET /v1/bots/:id'],
      failing: {
        'GET /v1/statistics': ['a different token shares the counter'],
        'GET /v1/bots/:id': ['a different token shares the counter'],
      },
    },
    {
      name: 'a window twice as long',
      fault: { kind: 'window', endpoint: 'GET /v1/bots/:id' },
      only: ['GET /v1/statistics', 'GET /v1/bots/:id'],
      failing: { 'GET /v1/bots/:id': ["window longer than the contract's: still refused when its 1 s had passed"] },
    },
    {
      name: '503 instead of 429',
      fault: { kind: 'status', status: 503 },
      only: ['GET /v1/statistics', 'GET /v1/bots/:id'],
      failing: {
        'GET /v1/statistics': ['answered 503 where the contract says 429'],
        'GET /v1/bots/:id': ['answered 503 where the contract says 429'],
      },
    },
    {
      name: 'an endpoint without a limit',
      fault: { kind: 'unlimited', endpoint: 'GET /v1/bots/:id/uptime' },
      only: ['GET /v1/statistics', 'GET /v1/bots/:id/uptime'],
      failing: { 'GET /v1/bots/:id/uptime': ['allowed 31 requests, contract says 30'] },
    },
    {
      name: 'POST counted on the counter of GET',
      fault: { kind: 'post-shares-get' },
      only: ['GET /v1/bots/:id', 'POST /v1/bots/:id'],
      failing: { 'POST /v1/bots/:id': ['allowed 3 requests, contract says 15'] },
    },
  ])('$name: found on the endpoint it is on, and no other', async ({ fault, only, failing: expected }) => {
    const report = await verify(kind, { only }, fault);
    expect(failing(report)).toEqual(expected);
    // The other endpoint passes whole, its fields and all.
    expect(report.endpoints.filter((e) => e.ok).map((e) => e.endpoint)).toEqual(
      only.filter((name) => !(name in expected)),
    );
  });
});
