// Every code sample of the manual (README.md and docs/*.md) is checked: TypeScript and JavaScript compile under --strict,
// with node16 and with bundler resolution, against the package's types, and each whole program runs from a file of
// its own; JSON parses; HTTP is header fields; shell commands name npm scripts that exist, and `npm ci` installs a
// clone.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type Redis from 'ioredis';
import ts from 'typescript';
import { createExampleApp } from '../example-server/app';
import { type Compiled, compile } from './helpers/compiled';
import { entryPoints, type Fence, fences, manual, programOf, root } from './helpers/manual';
import { ioredisClient, RedisServer, scanKeys } from './helpers/redis';
import { inCI, serverMissing, withClients } from './helpers/redis-env';
import { type Served, serve } from './helpers/serve';
import request from 'supertest';
import { csrfOf, valid } from './helpers/pages';

/**
 * What a sample may use without declaring it, named in a comment just before its block: `<!-- ts-prelude: name -->`.
 * Only for what no test can give it: such a sample is compiled, not run. None needs one now: every sample is a whole
 * program, run below.
 */
const preludes: Readonly<Record<string, string>> = {};

/** What each language of a fence is checked for; a fence of another language fails the test that lists them. */
const checked = {
  ts: 'compiled',
  js: 'compiled',
  json: 'parsed',
  http: 'header fields',
  sh: 'npm scripts and verbs',
  // What a program prints: the transcripts of the example server, the verifier and the benchmark.
  text: 'output',
  console: 'output',
  '': 'output',
} as const;

const all = manual().flatMap(fences);
const ofLang = (...langs: string[]) => all.filter((fence) => langs.includes(fence.lang));
const where = (fence: Fence, line = 0) => `${fence.page}:${fence.line + line}`;

it('finds the samples: every fence of every page, each of a language the test checks', () => {
  for (const { path, text } of manual()) {
    const opening = text.split('\n').filter((line) => line.startsWith('```') && line !== '```').length;
    expect([path, all.filter((fence) => fence.page === path && fence.lang !== '').length]).toEqual([path, opening]);
  }
  expect(all.filter((fence) => !(fence.lang in checked)).map((fence) => `${where(fence)}: ${fence.lang}`)).toEqual([]);
  expect(ofLang('ts').length).toBeGreaterThan(15);
  expect(manual().map((page) => page.path)).toEqual(expect.arrayContaining(['README.md', 'docs/stores.md']));
});

it('names only the preludes the test declares', () => {
  const unknown = all.flatMap((fence) =>
    fence.prelude.filter((name) => !preludes[name]).map((name) => `${where(fence)}: ts-prelude ${name}`),
  );
  expect(unknown).toEqual([]);
});

const configurations = {
  'node16 (ES module)': {
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    extension: { ts: '.mts', js: '.cjs' },
  },
  bundler: {
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    extension: { ts: '.ts', js: '.cjs' },
  },
} as const;

/** The compiler's messages about the samples, as `<page>:<line>: TS<code> <message>`. */
function check(
  samples: readonly Fence[],
  { module, moduleResolution, extension }: (typeof configurations)[keyof typeof configurations],
) {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    allowJs: true,
    checkJs: true,
    target: ts.ScriptTarget.ES2022,
    module,
    moduleResolution,
    // Each sample is a file of its own, as a user would paste it.
    moduleDetection: ts.ModuleDetectionKind.Force,
    // The verify sample is a test: it uses Jest's globals.
    types: ['node', 'jest'],
    // The package's own sources stand for the published types, so that a fresh clone needs no build.
    paths: entryPoints,
  };
  // At the repository's root whatever their page, so that `./example-server/app.js` and node_modules resolve as from
  // a clone, as the samples say.
  const files = new Map(
    samples.map((sample) => [
      join(root, `${sample.page.replace('/', '--')}-line-${sample.line}${extension[sample.lang as 'ts' | 'js']}`),
      {
        sample,
        // The prelude goes on the fence's own line, so that the sample's lines keep their numbers.
        code: `${sample.prelude.map((name) => preludes[name]).join(' ')}\n${sample.code}`,
      },
    ]),
  );
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  host.readFile = (name) => files.get(name)?.code ?? readFile.call(host, name);
  host.getSourceFile = (name, version, ...rest) => {
    const file = files.get(name);
    return file
      ? ts.createSourceFile(name, file.code, version, true)
      : getSourceFile.call(host, name, version, ...rest);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const messages = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map(
    (d) => `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
  );
  for (const [name, { sample }] of files) {
    const file = program.getSourceFile(name);
    for (const d of [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]) {
      const line = d.start === undefined || !file ? 0 : file.getLineAndCharacterOfPosition(d.start).line;
      messages.push(`${where(sample, line)}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`);
    }
  }
  return messages;
}

it.each(Object.keys(configurations) as (keyof typeof configurations)[])(
  'every TypeScript and JavaScript sample compiles under strict with %s resolution',
  (name) => {
    expect(check(ofLang('ts', 'js'), configurations[name])).toEqual([]);
  },
  120_000,
);

it('every JSON sample parses', () => {
  const bad = ofLang('json').flatMap((fence) => {
    try {
      JSON.parse(fence.code);
      return [];
    } catch (error) {
      return [`${where(fence)}: ${(error as Error).message}`];
    }
  });
  expect(bad).toEqual([]);
});

it('every HTTP sample is header fields, one a line', () => {
  const bad = ofLang('http').flatMap((fence) =>
    fence.code
      .trimEnd()
      .split('\n')
      .flatMap((line, i) => (/^[A-Za-z][A-Za-z0-9-]*: \S.*$/.test(line) ? [] : [`${where(fence, i + 1)}: ${line}`])),
  );
  expect(bad).toEqual([]);
});

describe('shell samples', () => {
  const scripts = Object.keys(
    (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts,
  );
  const commands = ofLang('sh').flatMap((fence) =>
    fence.code
      .trimEnd()
      .split('\n')
      .map((line, i) => ({ at: where(fence, i + 1), command: line.replace(/\s+#.*$/, '') })),
  );

  it('name npm scripts that exist', () => {
    const run = commands.flatMap(({ at, command }) =>
      [...command.matchAll(/\bnpm (?:run (\S+)|(start|test))\b/g)].map((m) => ({ at, script: m[1] ?? m[2] })),
    );
    expect(run.length).toBeGreaterThan(5);
    expect(run.filter(({ script }) => !scripts.includes(script as string))).toEqual([]);
  });

  it('install a clone with `npm ci`, and packages into an app with `npm install <package>`', () => {
    // A bare `npm install` in a clone would rewrite the lock file; `npm ci` installs exactly what it holds.
    const bare = commands.filter(({ command }) => /\bnpm (?:install|i)\s*(?:$|[;&|])/.test(command));
    expect(bare).toEqual([]);
    expect(commands.filter(({ command }) => /\bnpm ci\b/.test(command)).length).toBeGreaterThan(1);
  });
});

/**
 * Every sample that is a whole program runs as one, from a file of its own, as a user would run it: TypeScript as
 * its compiled JavaScript (an ES module), JavaScript as written, against the package and the example server as the
 * repository builds them. What it talks to is the test's (helpers/sample-env.cjs): a server it starts listens on a
 * free port, `https://api.example.org` and `http://127.0.0.1:3000` are the example server, Redis is a redis-server
 * of the test's. Each is judged by what its server answers, what it printed, or that it ended well.
 */
describe('samples run as programs', () => {
  interface Ran {
    /** Where the sample's server listens, when it started one. */
    readonly url: string | undefined;
    readonly stdout: string;
    /** What it wrote on stderr so far, beside the harness's own lines. */
    readonly said: () => string[];
  }
  interface RunCase {
    /** A line of the sample that tells it apart. */
    readonly line: string;
    /** What it needs beside Node: a redis-server (REDIS_URL), GLIDE too. */
    readonly needs?: 'redis' | 'glide';
    /** Runs with `it` and `expect` as in a Jest test file. */
    readonly jest?: boolean;
    /** The test file that runs it instead, against what it starts (a PostgreSQL). */
    readonly ranBy?: string;
    /** Checks the running sample's server, or what an ended one printed. */
    readonly check: (ran: Ran) => Promise<void> | void;
    /** The lines it writes on stderr, when its check makes it tell errors. Default: none. */
    readonly said?: readonly string[];
  }

  const get = (url: string, path: string, headers: Record<string, string> = {}) => fetch(`${url}${path}`, { headers });
  const ended = ({ url }: Ran) => expect(url).toBeUndefined();
  /** A Redis store's sample: its first request is counted in Redis, under its prefix. */
  const countsInRedis = async ({ url }: Ran) => {
    const res = await get(url as string, '/v1/bots/1');
    expect([res.status, res.headers.get('ratelimit')]).toEqual([200, '"GET /v1/bots/:id";r=1;t=1']);
    expect((await scanKeys(redis as Redis, 'bots-api:GET /v1/bots/:id:*')).length).toBe(1);
  };
  const contactPage = async ({ url }: Ran) => {
    const res = await get(url as string, '/limits/request');
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
  };
  /** The client's sample: it ended, and the example server answered its GET and its two POSTs. */
  const paced = (ran: Ran) => {
    ended(ran);
    expect(api.log.filter((line) => / \/v1\/bots\/42 Bot sample$/.test(line))).toEqual([
      '200 GET /v1/bots/42 Bot sample',
      '200 POST /v1/bots/42 Bot sample',
      '200 POST /v1/bots/42 Bot sample',
    ]);
  };

  /** Files a grant request on the contact page of the sample at `url`, as a browser does: where it is sent then. */
  const fileRequest = async (url: string, token: string) => {
    const agent = request.agent(url);
    const _csrf = csrfOf((await agent.get('/limits/request').expect(200)).text);
    const res = await agent
      .post('/limits/request')
      .type('form')
      .send({ ...valid, token, _csrf })
      .expect(303);
    return /id=([\w-]+)/.exec(res.headers.location as string)?.[1];
  };
  /** Waits for `ready`, for a hang, not a speed: the sample's own timeout is 5 s. */
  const until = async (ready: () => boolean) => {
    for (const end = Date.now() + 30_000; !ready(); await new Promise((resolve) => setTimeout(resolve, 20)))
      if (Date.now() > end) throw new Error('waited 30 s in vain');
  };

  const cases: RunCase[] = [
    { line: "const { listingLimits } = require('listing-limits'); // CommonJS", check: ended },
    { line: "import { listingLimits } from 'listing-limits'; // ES modules and TypeScript", check: ended },
    {
      line: 'res.json({ id: req.params.id, left: req.rateLimit?.remaining }); // 2 per second',
      check: async ({ url }) => {
        const answers = [];
        for (let i = 0; i < 3; i++) {
          const res = await get(url as string, '/v1/bots/1');
          answers.push([res.status, await res.json(), res.headers.get('retry-after')]);
        }
        expect(answers).toEqual([
          [200, { id: '1', left: 1 }, null],
          [200, { id: '1', left: 0 }, null],
          [429, expect.objectContaining({ code: 429, retryAfter: 1 }), '1'],
        ]);
      },
    },
    {
      line: "const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');",
      needs: 'redis',
      check: countsInRedis,
    },
    { line: 'await redis.connect();', needs: 'redis', check: countsInRedis },
    {
      line: 'clusterPrimary(); // the counters and bans of every worker live here',
      check: async ({ url }) => {
        // At once, so on several connections, which the primary hands to its workers in turn: 2 in all pass.
        const answers = await Promise.all(Array.from({ length: 12 }, () => get(url as string, '/v1/bots/1')));
        expect(answers.filter((res) => res.status === 200).length).toBe(2);
      },
    },
    { line: 'const glide = await GlideClient.createClient(', needs: 'glide', check: countsInRedis },
    {
      line: "grants: { 'Bot partner-token': { multiplier: 10 } }, // rule 6: every limit × 10",
      check: async ({ url, stdout }) => {
        expect(stdout).toContain("reason: 'scraping'");
        // The dashboard's grant: unlimited, so not counted, and no rate-limit header.
        const res = await get(url as string, '/v1/bots', { Authorization: 'Bot dashboard-token' });
        expect([res.status, res.headers.get('ratelimit')]).toEqual([404, null]);
      },
    },
    { line: "app.use('/limits/request', limitsRequestPage(limits)); // public", check: contactPage },
    { line: "const bot = await api.get('/v1/bots/:id', { id: '42' }); // parsed JSON", check: paced },
    {
      line: "it('the staging API honours the contract', async () => {",
      jest: true,
      check: (ran) => {
        ended(ran);
        expect(api.log.filter((line) => line.includes('/v1/bots/')).length).toBeGreaterThan(3);
      },
    },
    {
      line: "res.json(req.rateLimit); // { endpoint: 'GET /v1/bots/:id'",
      check: async ({ url }) => {
        const res = await get(url as string, '/v1/bots/1');
        expect(await res.json()).toEqual({
          endpoint: 'GET /v1/bots/:id',
          limit: 2,
          remaining: 1,
          resetTime: expect.any(String),
        });
      },
    },
    { line: "'203.0.113.7': 'unlimited', // not counted at all, no headers", check: ended },
    {
      line: "await limits.grant({ token: 'Bot partner-token' }, { multiplier: 10 }, { until: new Date('2027-01-01'), note: 'ticket 42' });",
      check: ({ url, stdout }) => {
        expect(url).toBeUndefined();
        expect(stdout).toContain("note: 'ticket 42'");
      },
    },
    {
      line: 'for (const u of await limits.usage({',
      check: ({ url, stdout }) => {
        expect(url).toBeUndefined();
        expect(stdout).toContain('GET /v1/statistics: 0 of 5 used, 5 left, frees one at undefined');
      },
    },
    {
      line: "app.use('/api', createExampleApp({ listing: 'B', log: console.log }));",
      check: async ({ url }) => {
        const res = await get(url as string, '/api/v1/bots/1', { Authorization: 'Bot sample' });
        expect([res.status, res.headers.get('ratelimit')]).toEqual([200, '"GET /v1/bots/:id";r=1;t=1']);
      },
    },
    {
      line: "app.use(listingLimits('B', { metrics: registry }));",
      check: async ({ url }) => {
        await get(url as string, '/v1/bots/1');
        const metrics = await (await get(url as string, '/metrics')).text();
        expect(metrics).toContain('listing_limits_requests_total{endpoint="GET /v1/bots/:id",outcome="allowed"} 1');
      },
    },
    {
      line: "await limits.ban({ ip: '203.0.113.7' }, { duration: 3_600_000, reason: 'scraping', by: 'alice' });",
      check: ({ url, stdout }) => {
        expect(url).toBeUndefined();
        expect(stdout).toBe('ban ip:203.0.113.7 alice\n');
      },
    },
    {
      line: 'onRequestFiled: async (request) => {',
      check: async ({ url, said }) => {
        const id = await fileRequest(url as string, 'Bot first-requester');
        await until(() => discord.posts.length === 1);
        const content = `Grant request ${id} asks for {"multiplier":10}. Proof: https://example.com/bot`;
        expect(discord.posts).toEqual([
          {
            path: '/api/webhooks/1/sample',
            type: 'application/json',
            body: JSON.stringify({ content, allowed_mentions: { parse: [] } }),
          },
        ]);
        // Discord fails, then hangs: the requests are filed all the same, and at once.
        discord.answer = 'fail';
        await fileRequest(url as string, 'Bot second-requester');
        await until(() => said().length === 1);
        discord.answer = 'hang';
        await fileRequest(url as string, 'Bot third-requester');
        await until(() => said().length === 2);
        expect(discord.posts).toHaveLength(3);
      },
      said: [
        'listing-limits: Error: Discord answered 500',
        'listing-limits: TimeoutError: The operation was aborted due to timeout',
      ],
    },
    {
      line: 'authenticate: async (token) => tokens.isValid(token),',
      check: async ({ url }) => {
        const res = await get(url as string, '/v1/bots/1', { Authorization: 'Bot sample' });
        expect([res.status, res.headers.get('ratelimit')]).toEqual([200, '"GET /v1/bots/:id";r=1;t=1']);
      },
    },
    {
      line: 'new RateLimiterPostgres({ ...table, points: 1, duration: 1 }, done);',
      ranBy: 'postgres.test.ts',
      check: () => {},
    },
  ];

  const runnable = ofLang('ts', 'js').filter((fence) => fence.prelude.length === 0);
  const caseOf = (fence: Fence) => cases.filter((c) => fence.code.includes(c.line));

  it('has one case for every sample that is a whole program, and none left over', () => {
    expect(runnable.map((fence) => [where(fence), caseOf(fence).length])).toEqual(runnable.map((f) => [where(f), 1]));
    expect(cases.filter((c) => !runnable.some((fence) => fence.code.includes(c.line))).map((c) => c.line)).toEqual([]);
    // None is left to compile only.
    expect(
      ofLang('ts', 'js')
        .filter((fence) => fence.prelude.length > 0)
        .map((fence) => where(fence)),
    ).toEqual([]);
  });

  let compiled: Compiled | undefined;
  let dir: string;
  let built: string;
  let redisServer: RedisServer | undefined;
  let redis: Redis | undefined;
  let api: Served;
  /** Discord's webhook, for the sample that posts to it: what it was sent, and how it answers the next post. */
  const discord = {
    posts: [] as { path: string | undefined; type: string | undefined; body: string }[],
    answer: 'ok' as 'ok' | 'fail' | 'hang',
    served: undefined as Served | undefined,
  };
  beforeAll(async () => {
    discord.served = await serve((req, res) => {
      let body = '';
      req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        discord.posts.push({ path: req.url, type: req.headers['content-type'], body });
        if (discord.answer === 'ok') res.writeHead(204).end();
        else if (discord.answer === 'fail') res.writeHead(500).end();
      });
    });
    // The package and the example server, compiled as the repository builds them.
    compiled = compile('samples', { esm: false });
    dir = compiled.scratch;
    built = compiled.cjs;
    if (!serverMissing || inCI) {
      redisServer = await RedisServer.start();
      redis = await ioredisClient(redisServer.url);
    }
  }, 180_000);
  beforeEach(async () => {
    // A fresh API for each sample: the verifier's needs untouched counters.
    api = await serve(createExampleApp({ listing: 'B' }));
    await redis?.flushall();
    discord.posts = [];
    discord.answer = 'ok';
  });
  afterEach(() => api.close());
  afterAll(async () => {
    await discord.served?.close();
    redis?.disconnect();
    await redisServer?.close();
    compiled?.remove();
  });

  /** What a sample wrote on stderr, beside the harness's own lines. */
  const told = (stderr: string) =>
    stderr.split('\n').filter((line) => line !== '' && !/^@@(?:passed|listening) /.test(line));

  /** Runs the sample until it ends, or until it listens and its check is done; what it printed. */
  async function run(fence: Fence, c: RunCase): Promise<void> {
    const child = spawn(
      process.execPath,
      ['--require', join(__dirname, 'helpers', 'sample-env.cjs'), programOf(fence, built, dir)],
      {
        cwd: dir,
        env: {
          ...process.env,
          REDIS_URL: redisServer?.url ?? '',
          ADMIN_TOKEN: 'admin-token-of-the-samples',
          LISTING_TOKEN: 'Bot sample',
          DISCORD_WEBHOOK_URL: 'https://discord.com/api/webhooks/1/sample',
          SAMPLE_ORIGINS: JSON.stringify({
            'https://api.example.org': api.url,
            'http://127.0.0.1:3000': api.url,
            'https://discord.com': discord.served?.url,
          }),
          SAMPLE_JEST: c.jest ? '1' : '0',
        },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    const listening = new Promise<string>((resolve) => {
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
        const port = /^@@listening (\d+)$/m.exec(stderr)?.[1];
        if (port) resolve(`http://127.0.0.1:${port}`);
      });
    });
    const first = await Promise.race([exited.then((code) => ({ code })), listening.then((url) => ({ url }))]);
    try {
      if ('url' in first) {
        // Whatever the sample printed before it listened (its top-level awaits) is in by now.
        await new Promise((resolve) => setImmediate(resolve));
        await c.check({ url: first.url, stdout, said: () => told(stderr) });
        // Nothing said on stderr but what the check made it tell: no warning, no error.
        expect(told(stderr)).toEqual(c.said ?? []);
      } else {
        expect([first.code, told(stderr)]).toEqual([0, []]);
        if (c.jest) expect(stderr).toContain('@@passed the staging API honours the contract');
        await c.check({ url: undefined, stdout, said: () => told(stderr) });
      }
    } finally {
      child.kill();
      await exited;
    }
  }

  const needs = (c: RunCase | undefined) =>
    c?.needs === undefined
      ? true
      : (!serverMissing || inCI) && (c.needs !== 'glide' || withClients(['glide'] as const, (k) => k).length > 0);

  it.each(runnable.map((fence) => [where(fence), fence] as const))(
    '%s runs',
    async (_at, fence) => {
      const [c] = caseOf(fence);
      if (!c) throw new Error('no case');
      if (!needs(c) || c.ranBy) return;
      await run(fence, c);
    },
    60_000,
  );
});
