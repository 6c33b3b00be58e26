// The `listing-limits verify` command line, run in this process against real servers with a fake clock.
import { stripVTControlCharacters } from 'node:util';
import type * as Command from '../lib/verify/command';
import { type CliContext, runCli, USAGE } from '../lib/verify/command';
import { listings } from '../lib';
import type * as Listings from '../lib/contract/listings';
import { type EndpointPlan, planVerification, type VerifyReport } from '../lib/verify';
import { progressOn } from '../lib/verify/progress';
import { createExampleApp } from '../example-server/app';
import { createApp } from './helpers/app';
import { serverPerTest } from './helpers/serve';
import { useFakeClock } from './helpers/stores';
import { worldApi } from './helpers/world-apis';

const start = serverPerTest();

beforeEach(useFakeClock);
afterEach(() => jest.useRealTimers());

/**
 * Runs the command with captured output; waiting moves the fake clock, so runs of several endpoints probe them one
 * at a time (`--concurrency 1`).
 */
async function run(argv: string[], { tty = false } = {}) {
  let stdout = '';
  let stderr = '';
  const context: CliContext = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: Object.assign(
      {
        write: (text: string) => {
          stderr += text;
          return true;
        },
      },
      tty ? { isTTY: true, columns: 100 } : {},
    ),
    sleep: async (ms) => {
      jest.setSystemTime(Date.now() + ms);
    },
  };
  const code = await runCli(argv, context);
  return { code, stdout, stderr };
}

describe('a run', () => {
  it('prints a table and exits 0 when every endpoint passes', async () => {
    const served = await start(createApp({ listing: 'A' }));
    const { code, stdout } = await run(['verify', served.url, '--listing', 'A', '--concurrency', '1']);
    expect(stdout).toBe(
      [
        `listing-limits verify ${served.url}, listing A, fixed windows`,
        '',
        'Endpoint                     Result  Requests  Window  Findings',
        'GET /v1/statistics           pass           4  either',
        'GET /v1/servers              pass          32  fixed',
        'GET /v1/servers/:id          pass          20  fixed',
        'GET /v1/servers/:id/upvotes  pass          47  fixed',
        'GET /v1/users/:id            pass           8  fixed',
        'GET /v1/users/:id/servers    pass          20  fixed',
        '',
        'Headers                      Result  Sent                                   Findings',
        'GET /v1/statistics           pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/servers              pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/servers/:id          pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/servers/:id/upvotes  pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/users/:id            pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/users/:id/servers    pass    drafts 8-11, X-RateLimit, Retry-After',
        '',
        'All 6 endpoints pass.',
        '',
      ].join('\n'),
    );
    expect(code).toBe(0);
  });

  it('prints each finding on its own line and exits 1 when an endpoint fails', async () => {
    const rows = listings.B.map((row) => (row.path === '/v1/users/:id' ? { ...row, limit: 3 } : row));
    const served = await start(createApp({ listing: rows, routes: [] }));
    const { code, stdout } = await run([
      'verify',
      served.url,
      '--listing',
      'B',
      '--only',
      'GET /v1/statistics',
      '--only',
      'GET /v1/users/:id',
      '--concurrency=1',
    ]);
    expect(stdout).toBe(
      [
        `listing-limits verify ${served.url}, listing B, fixed windows`,
        '',
        'Endpoint            Result  Requests  Window      Findings',
        'GET /v1/statistics  pass          12  fixed       note: GET /v1/statistics answered 404',
        'GET /v1/users/:id   fail           3  not probed  allowed 3 requests, contract says 2',
        '                                                  note: GET /v1/users/1 answered 404',
        '',
        'Headers             Result  Sent                                   Findings',
        'GET /v1/statistics  pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/users/:id   fail    drafts 8-11, X-RateLimit               RateLimit-Policy says "GET /v1/users/:id";q=3;w=1, contract says q=2;w=1',
        '                                                                   RateLimit says "GET /v1/users/:id";r=2;t=1 on request 1, expected r=1',
        '                                                                   X-RateLimit-Limit says 3, contract says 2',
        '                                                                   X-RateLimit-Remaining says 2 on request 1, expected 1',
        '',
        '1 of 2 endpoints fail: 1 on the contract, 1 on their headers.',
        '',
      ].join('\n'),
    );
    expect(code).toBe(1);
  });

  it('--json prints only the findings as JSON on stdout', async () => {
    const served = await start(createApp({ listing: 'B' }));
    const { code, stdout, stderr } = await run([
      'verify',
      served.url,
      '--listing=B',
      '--only=GET /v1/bots/:id',
      '--param',
      'id=7',
      '--token',
      'Bot abc',
      '--json',
    ]);
    expect(JSON.parse(stdout)).toEqual({
      baseUrl: served.url,
      window: 'fixed',
      strictHeaders: false,
      ok: true,
      endpoints: [
        {
          endpoint: 'GET /v1/bots/:id',
          method: 'GET',
          path: '/v1/bots/:id',
          limit: 2,
          windowMs: 1000,
          limits: [{ limit: 2, windowMs: 1000 }],
          paths: ['/v1/bots/7', '/v1/bots/8'],
          requests: 8,
          waitMs: 1250,
          boundaryRequests: 1,
          boundaryWaitMs: 0,
          ok: true,
          findings: [],
          notes: [],
          headers: { probed: true, sent: ['drafts 8-11', 'X-RateLimit', 'Retry-After'], findings: [], notes: [] },
          windowSeen: 'fixed',
        },
      ],
    });
    expect(stderr).toBe(
      [
        '[1/1] GET /v1/bots/:id: probing',
        "[1/1] GET /v1/bots/:id: waiting 1 s to send the rest of the limit before the window's end",
        '[1/1] GET /v1/bots/:id: waiting 1 s for the window to end',
        '[1/1] GET /v1/bots/:id: pass',
        '',
      ].join('\n'),
    );
    expect(served.log.filter((line) => line.endsWith('Bot abc'))).toHaveLength(5);
    expect(code).toBe(0);
  });

  it('on a terminal, shows one line per endpoint, updated in place, and leaves them there', async () => {
    const served = await start(createApp({ listing: 'A' }));
    const only = ['--only', 'GET /v1/servers', '--only', 'GET /v1/statistics'];
    const { stderr } = await run(['verify', served.url, '--listing', 'A', ...only, '--concurrency', '1'], {
      tty: true,
    });
    // The lines as drawn, each time an event changes one: the seconds each endpoint has run of those planned, and
    // what it does. Waiting moves the fake clock after its line is drawn.
    const drawn = stripVTControlCharacters(stderr).split(/\r?\n/);
    expect(drawn).toContain('GET /v1/statistics  [--------------------] 0/2 s  probing');
    expect(drawn).toContain('GET /v1/statistics  [====================] 2/2 s  pass');
    expect(drawn).toContain(
      "GET /v1/servers     [--------------------] 0/121 s  waiting 1 min to send the rest of the limit before the window's end",
    );
    expect(drawn).toContain(
      'GET /v1/servers     [==========----------] 60/121 s  waiting 1 min 1 s for the window to end',
    );
    // Once the run is over, the last drawing of every line stays, and the cursor is on a line of its own below them.
    const lastOf = (endpoint: string) => drawn.filter((line) => line.startsWith(`${endpoint} `)).at(-1);
    expect(lastOf('GET /v1/statistics')).toBe('GET /v1/statistics  [====================] 2/2 s  pass');
    expect(lastOf('GET /v1/servers')).toBe('GET /v1/servers     [====================] 121/121 s  pass');
    expect(stderr.endsWith('\n')).toBe(true);
    expect(stderr).not.toContain('[1/2]');
  });
});

describe('--strict-headers and --timeout', () => {
  it('a server without rate-limit fields passes; with --strict-headers its header notes fail it, exit 1', async () => {
    const served = await start(await worldApi({ kind: 'rate-limiter-flexible, no headers', rows: listings.B }));
    const argv = ['verify', served.url, '--listing', 'B', '--only', 'GET /v1/statistics'];
    const table = (result: string, headers: readonly string[], summary: string) =>
      [
        '',
        'Endpoint            Result  Requests  Window  Findings',
        'GET /v1/statistics  pass          12  fixed',
        '',
        'Headers             Result  Sent     Findings',
        `GET /v1/statistics  ${result}    nothing  ${headers[0]}`,
        `                                     ${headers[1]}`,
        '',
        summary,
        '',
      ].join('\n');
    const plain = await run([...argv, '--token', 'Bot plain']);
    expect(plain.stdout).toBe(
      `listing-limits verify ${served.url}, listing B, fixed windows\n` +
        table('pass', ['note: no Retry-After on 429', 'note: sent no rate-limit fields'], 'The endpoint passes.'),
    );
    expect(plain.code).toBe(0);
    const strict = await run([...argv, '--token', 'Bot strict', '--strict-headers']);
    expect(strict.stdout).toBe(
      `listing-limits verify ${served.url}, listing B, fixed windows, strict headers\n` +
        table('fail', ['no Retry-After on 429', 'sent no rate-limit fields'], 'The endpoint fails on its headers.'),
    );
    expect(strict.code).toBe(1);
    const json = JSON.parse(
      (await run([...argv, '--token', 'Bot json', '--strict-headers', '--json'])).stdout,
    ) as VerifyReport;
    expect(json).toMatchObject({ ok: false, strictHeaders: true });
    expect(json.endpoints[0]?.headers).toEqual({
      probed: true,
      sent: [],
      findings: ['no Retry-After on 429', 'sent no rate-limit fields'],
      notes: [],
    });
  });

  it('--timeout: a server that never answers fails each endpoint once its timeout has passed, exit 1', async () => {
    const served = await start(() => {});
    const argv = ['verify', served.url, '--listing', 'A', '--timeout', '100', '--json'];
    const { code, stdout } = await run(argv);
    const report = JSON.parse(stdout) as VerifyReport;
    expect(report.ok).toBe(false);
    expect(report.endpoints.map((e) => [e.endpoint, e.findings, e.requests])).toEqual(
      listings.A.map((row) => [`${row.method} ${row.path}`, ['request failed: no response within 0.1 s'], 1]),
    );
    expect(code).toBe(1);
  });
});

describe('progress off a terminal', () => {
  it('one line per event, each naming its endpoint, as endpoints probed together interleave them', () => {
    let text = '';
    const plan = planVerification({
      baseUrl: 'http://127.0.0.1:9',
      listing: 'B',
      only: ['GET /v1/bots', 'GET /v1/bots/:id'],
    });
    const progress = progressOn({ write: (chunk: string) => (text += chunk) }, plan);
    const result = (endpoint: string, ok: boolean) => ({
      ...(plan.endpoints.find((e) => e.endpoint === endpoint) as EndpointPlan),
      ok,
      findings: [],
      notes: [],
      headers: { probed: true, sent: [], findings: [], notes: [] },
      windowSeen: 'fixed' as const,
    });
    progress.onEvent({ type: 'endpoint', endpoint: 'GET /v1/bots', index: 1, total: 2 });
    progress.onEvent({ type: 'endpoint', endpoint: 'GET /v1/bots/:id', index: 2, total: 2 });
    progress.onEvent({ type: 'wait', endpoint: 'GET /v1/bots', ms: 30_000, reason: 'boundary' });
    progress.onEvent({ type: 'wait', endpoint: 'GET /v1/bots/:id', ms: 750, reason: 'window' });
    progress.onEvent({ type: 'done', result: result('GET /v1/bots/:id', false) });
    progress.onEvent({ type: 'wait', endpoint: 'GET /v1/bots', ms: 31_000, reason: 'window' });
    progress.onEvent({ type: 'done', result: result('GET /v1/bots', true) });
    progress.stop();
    expect(text.split('\n')).toEqual([
      '[1/2] GET /v1/bots: probing',
      '[2/2] GET /v1/bots/:id: probing',
      "[1/2] GET /v1/bots: waiting 30 s to send the rest of the limit before the window's end",
      '[2/2] GET /v1/bots/:id: waiting 1 s for the window to end',
      '[2/2] GET /v1/bots/:id: fail',
      '[1/2] GET /v1/bots: waiting 31 s for the window to end',
      '[1/2] GET /v1/bots: pass',
      '',
    ]);
  });
});

describe('--window', () => {
  const only = ['--only', 'GET /v1/statistics', '--only', 'GET /v1/bots/:id/upvotes', '--token', 'Bot v'];
  const oneAtATime = ['--concurrency', '1'];

  it.each([
    {
      server: 'sliding',
      argv: ['--window', 'sliding'],
      code: 0,
      stdout: [
        'listing-limits verify URL, listing B, sliding windows',
        '',
        'Endpoint                  Result  Requests  Window   Findings',
        'GET /v1/statistics        pass           9  sliding',
        'GET /v1/bots/:id/upvotes  pass           8  sliding',
        '',
        'Headers                   Result  Sent                                   Findings',
        'GET /v1/statistics        pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/bots/:id/upvotes  pass    drafts 8-11, X-RateLimit, Retry-After',
        '',
        'All 2 endpoints pass.',
      ],
    },
    {
      server: 'fixed',
      argv: ['--window=sliding'],
      code: 1,
      stdout: [
        'listing-limits verify URL, listing B, sliding windows',
        '',
        'Endpoint                  Result  Requests  Window  Findings',
        'GET /v1/statistics        fail          12  fixed   fixed window: allowed 9 requests within 0.8 s across the end of a window (4 before it, 5 after it); a sliding window allows 5 in any 1 s',
        'GET /v1/bots/:id/upvotes  fail           8  fixed   fixed window: allowed 3 requests within 8.5 s across the end of a window (1 before it, 2 after it); a sliding window allows 2 in any 15 s',
        '',
        'Headers                   Result  Sent                                   Findings',
        'GET /v1/statistics        pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/bots/:id/upvotes  pass    drafts 8-11, X-RateLimit, Retry-After',
        '',
        '2 of 2 endpoints fail: 2 on the contract.',
      ],
    },
    {
      server: 'sliding',
      argv: [],
      code: 1,
      stdout: [
        'listing-limits verify URL, listing B, fixed windows',
        '',
        'Endpoint                  Result  Requests  Window   Findings',
        'GET /v1/statistics        fail           9  sliding  sliding window: allowed 4 requests before the end of a window and 1 after it, then 429; a fixed window allows 5 after it',
        'GET /v1/bots/:id/upvotes  fail           8  sliding  sliding window: allowed 1 request before the end of a window and 1 after it, then 429; a fixed window allows 2 after it',
        '',
        'Headers                   Result  Sent                                   Findings',
        'GET /v1/statistics        pass    drafts 8-11, X-RateLimit, Retry-After',
        'GET /v1/bots/:id/upvotes  pass    drafts 8-11, X-RateLimit, Retry-After',
        '',
        '2 of 2 endpoints fail: 2 on the contract.',
      ],
    },
  ] as const)(
    'a $server example server, $argv: the window seen, exit $code',
    async ({ server, argv, code, stdout }) => {
      const served = await start(createExampleApp({ listing: 'B', window: server }));
      const result = await run(['verify', served.url, '--listing', 'B', ...only, ...oneAtATime, ...argv]);
      expect(result.stdout).toBe([...stdout, ''].join('\n').replace('URL', served.url));
      expect(result.code).toBe(code);
    },
  );

  it('--json tells the window expected, and the one seen on each endpoint', async () => {
    const served = await start(createExampleApp({ listing: 'A', window: 'sliding' }));
    const argv = ['verify', served.url, '--listing', 'A', '--window', 'sliding', '--json', ...oneAtATime];
    const { code, stdout } = await run(argv);
    const report = JSON.parse(stdout) as VerifyReport;
    expect(report.window).toBe('sliding');
    expect(report.endpoints.map((e) => [e.endpoint, e.windowSeen, e.findings])).toEqual(
      // A limit of 1 is counted alike in both kinds.
      listings.A.map((row) => [`${row.method} ${row.path}`, row.limit === 1 ? 'either' : 'sliding', []]),
    );
    expect(code).toBe(0);
  });
});

describe('--dry-run', () => {
  it('prints the plan and sends nothing', async () => {
    const served = await start(createApp({ listing: 'A' }));
    const { code, stdout, stderr } = await run([
      'verify',
      served.url,
      '--listing',
      'A',
      '--dry-run',
      '--param',
      'id=41',
    ]);
    expect(stdout).toBe(
      [
        `Plan: listing A, fixed windows, at ${served.url}, all 6 endpoints at once. Nothing was sent (--dry-run).`,
        '',
        'Endpoint                     Paths                                           Requests  Wait',
        'GET /v1/statistics           /v1/statistics                                         4  2 s',
        'GET /v1/servers              /v1/servers                                           32  2 min 1 s',
        'GET /v1/servers/:id          /v1/servers/41, /v1/servers/42                        20  16 s',
        'GET /v1/servers/:id/upvotes  /v1/servers/41/upvotes, /v1/servers/42/upvotes        47  16 s',
        'GET /v1/users/:id            /v1/users/41, /v1/users/42                             8  2 s',
        'GET /v1/users/:id/servers    /v1/users/41/servers, /v1/users/42/servers            20  16 s',
        '',
        "131 requests in about 2 min 1 s (39 of them after a window's end, to tell its kind).",
        '',
      ].join('\n'),
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(served.requests).toBe(0);
  });

  it('tells how many endpoints are probed at a time, and how long the run takes then', async () => {
    const dryRun = (concurrency: string) =>
      run(['verify', 'http://127.0.0.1:9', '--listing', 'B', '--dry-run', '--concurrency', concurrency]);
    const lines = async (concurrency: string) => {
      const { stdout } = await dryRun(concurrency);
      return [stdout.split('\n')[0], stdout.split('\n').at(-2)];
    };
    expect(await lines('2')).toEqual([
      'Plan: listing B, fixed windows, at http://127.0.0.1:9, 2 endpoints at a time. Nothing was sent (--dry-run).',
      "259 requests in about 1 min 8 s (83 of them after a window's end, to tell its kind).",
    ]);
    expect(await lines('1')).toEqual([
      'Plan: listing B, fixed windows, at http://127.0.0.1:9, one endpoint after another. Nothing was sent (--dry-run).',
      "259 requests in about 2 min 9 s (83 of them after a window's end, to tell its kind).",
    ]);
    expect(await lines('8')).toEqual([
      'Plan: listing B, fixed windows, at http://127.0.0.1:9, all 8 endpoints at once. Nothing was sent (--dry-run).',
      "259 requests in about 1 min 1 s (83 of them after a window's end, to tell its kind).",
    ]);
  });

  it("shows the paths as requested, with the base URL's path", async () => {
    const { code, stdout } = await run([
      'verify',
      'http://127.0.0.1:9/api/',
      '--listing',
      'B',
      '--only',
      'GET /v1/statistics',
      '--only',
      'GET /v1/bots/:id',
      '--dry-run',
    ]);
    expect(stdout).toBe(
      [
        'Plan: listing B, fixed windows, at http://127.0.0.1:9/api, all 2 endpoints at once. Nothing was sent (--dry-run).',
        '',
        'Endpoint            Paths                           Requests  Wait',
        'GET /v1/statistics  /api/v1/statistics                    12  2 s',
        'GET /v1/bots/:id    /api/v1/bots/1, /api/v1/bots/2         8  2 s',
        '',
        "20 requests in about 2 s (5 of them after a window's end, to tell its kind).",
        '',
      ].join('\n'),
    );
    expect(code).toBe(0);
  });

  it('--json prints the plan as JSON', async () => {
    const served = await start(createApp({ listing: 'B' }));
    const { code, stdout } = await run([
      'verify',
      served.url,
      '--listing',
      'B',
      '--only',
      'GET /v1/statistics',
      '--grace',
      '250',
      '--window',
      'sliding',
      '--dry-run',
      '--json',
    ]);
    expect(JSON.parse(stdout)).toEqual({
      baseUrl: served.url,
      window: 'sliding',
      concurrency: 1,
      endpoints: [
        {
          endpoint: 'GET /v1/statistics',
          method: 'GET',
          path: '/v1/statistics',
          limit: 5,
          windowMs: 1000,
          limits: [{ limit: 5, windowMs: 1000 }],
          paths: ['/v1/statistics'],
          // 1 at the window's start, 4 from its middle and the 429; after its end 1 and the 429; another token's 1
          requests: 9,
          // 0.5 s to the window's middle, 0.75 s to the margin after its end (the grace, 250 ms)
          waitMs: 1250,
          boundaryRequests: 1,
          boundaryWaitMs: 0,
        },
      ],
      requests: 9,
      waitMs: 1250,
    });
    expect(code).toBe(0);
    expect(served.requests).toBe(0);
  });
});

describe('arguments', () => {
  it.each(['--help', '-h'])('%s prints the usage and exits 0', async (flag) => {
    expect(await run([flag])).toEqual({ code: 0, stdout: USAGE, stderr: '' });
    expect(await run(['verify', flag])).toEqual({ code: 0, stdout: USAGE, stderr: '' });
  });

  const url = 'http://127.0.0.1:9';
  it.each([
    [[], 'missing command: listing-limits verify <base-url> --listing A|B'],
    [['check', url], 'unknown command "check"; the command is verify'],
    [['verify'], 'verify needs <base-url>, e.g. http://127.0.0.1:3000'],
    [['verify', url, 'extra', '--listing', 'A'], 'unexpected argument "extra"'],
    [['verify', url], '--listing is required: A or B'],
    [['verify', url, '--listing', 'C'], '--listing must be A or B; got "C"'],
    [['verify', url, '--listing', 'listing-b'], '--listing must be A or B; got "listing-b". Did you mean `B` (bots)?'],
    [['verify', url, '--listing'], '--listing needs a value'],
    [['verify', url, '--listing', 'A', '--verbose'], 'unknown option --verbose'],
    [['verify', url, '--lsting', 'A'], 'unknown option --lsting. Did you mean --listing?'],
    [['verify', url, '--listing', 'A', '-x'], 'unknown option -x'],
    [['verify', url, '--listing', 'A', '--json=yes'], '--json takes no value; got "yes"'],
    [
      ['verify', url, '--listing', 'A', '--grace', '-5'],
      '--grace needs a value; got the option-like "-5" (write --grace=-5 if that is the value)',
    ],
    [['verify', url, '--listing', 'A', '--grace=-5'], '--grace must be whole milliseconds; got "-5"'],
    [
      ['verify', url, '--listing', 'A', '--token', '--dry-run'],
      '--token needs a value; got the option-like "--dry-run" (write --token=--dry-run if that is the value)',
    ],
    [
      ['verify', 'localhost:3000', '--listing', 'A'],
      '<base-url> must be an http or https URL without query or fragment; got "localhost:3000"',
    ],
    [
      ['verify', url, '--listing', 'B', '--only', 'GET /v1/bot'],
      '--only "GET /v1/bot" is not an endpoint of listing B. Did you mean "GET /v1/bots"?',
    ],
    [['verify', url, '--listing', 'B', '--param', 'id'], '--param must be NAME=VALUE, e.g. id=123; got "id"'],
    [
      ['verify', url, '--listing', 'A', '--param', 'bot=1'],
      '--param bot is not a path parameter of the endpoints checked (parameters: :id)',
    ],
    [
      ['verify', url, '--listing', 'A', '--param', 'id=1', '--param', 'id=2', '--param', 'id=3'],
      '--param id must be a non-empty string, or an array of one or two of them',
    ],
    [['verify', url, '--listing', 'A', '--grace', '1s'], '--grace must be whole milliseconds; got "1s"'],
    [['verify', url, '--listing', 'A', '--timeout', '10s'], '--timeout must be whole milliseconds; got "10s"'],
    [
      ['verify', url, '--listing', 'A', '--timeout', '0'],
      '--timeout must be a whole number of milliseconds, from 1 to 2147483647; got 0',
    ],
    [['verify', url, '--listing', 'A', '--strict-headers=yes'], '--strict-headers takes no value; got "yes"'],
    [
      ['verify', url, '--listing', 'A', '--concurrency', 'all'],
      '--concurrency must be a whole number of endpoints, 1 or more; got "all"',
    ],
    [
      ['verify', url, '--listing', 'A', '--concurrency', '0'],
      '--concurrency must be a whole number of endpoints, 1 or more; got 0',
    ],
    [
      ['verify', url, '--listing', 'A', '--window', 'slide'],
      '--window must be one of "fixed", "sliding"; got "slide". Did you mean `sliding`?',
    ],
    [['verify', url, '--listing', 'A', '--window'], '--window needs a value'],
    [
      ['verify', url, '--listing', 'A', '--token', 'same', '--other-token', 'same'],
      '--other-token must differ from options.token',
    ],
  ])('%j: one line naming the argument, exit code 2', async (argv, message) => {
    expect(await run(argv)).toEqual({
      code: 2,
      stdout: '',
      stderr: `listing-limits: ${message} (see listing-limits --help)\n`,
    });
  });
});

describe('a third listing in lib/contract/listings.ts', () => {
  /** The command module loaded against listings with a table C added, as a new listing would be: one data block. */
  function commandWithListingC(): typeof Command {
    let command: typeof Command | undefined;
    jest.isolateModules(() => {
      jest.doMock('../lib/contract/listings', () => {
        const actual = jest.requireActual<typeof Listings>('../lib/contract/listings');
        const extended = { ...actual.listings, C: actual.listings.A };
        return {
          ...actual,
          listings: extended,
          listingNames: Object.keys(extended),
          listingFamilies: { ...actual.listingFamilies, C: 'emojis' },
        };
      });
      command = jest.requireActual<typeof Command>('../lib/verify/command');
    });
    return command as typeof Command;
  }

  it('appears in the usage and the --listing check without another edit', async () => {
    const command = commandWithListingC();
    expect(command.USAGE.split('\n').slice(0, 3)).toEqual([
      'Usage: listing-limits verify <base-url> --listing A|B|C [options]',
      '',
      'Probes a running API, every endpoint at once, and checks that it enforces listing A, B, or C of the',
    ]);
    expect(command.USAGE).toContain('\n  --listing A|B|C      the listing the API serves (required)\n');
    let stderr = '';
    const context = { stdout: { write: () => true }, stderr: { write: (text: string) => (stderr += text) } };
    expect(await command.runCli(['verify', 'http://127.0.0.1:9', '--listing', 'c '], context)).toBe(2);
    expect(stderr).toBe(
      'listing-limits: --listing must be A, B, or C; got "c ". Did you mean `C` (emojis)? (see listing-limits --help)\n',
    );
  });
});
