// The package as users get it: built, packed with npm pack, loaded from CommonJS and from ESM, and run as a command.
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { type EndpointRow, listings } from '../lib';
import { USAGE } from '../lib/verify/command';
import { createApp } from './helpers/app';
import { type Served, serve } from './helpers/serve';
import { useFakeWindows } from './helpers/stores';
// The weights of docs/install.md are measured by the same install: scripts/install-weights.js.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { install: installApp } = require('../scripts/install-weights.js') as {
  install: (specs: string[], options: { offline: boolean }) => { dir: string; packages: string[]; bytes: number };
};

const root = join(__dirname, '..');
// Inside the project, so that the packed package resolves its dependencies from the project's node_modules.
const scratchRoot = join(root, '.pack-test');
let scratch: string;
let installed: string;
/** The packed package, `listing-limits-<version>.tgz`. */
let tarball: string;
/** What `npm pack` says of it: its files and their bytes in all. */
let packed: { files: { path: string }[]; unpackedSize: number };

beforeAll(() => {
  mkdirSync(scratchRoot, { recursive: true });
  scratch = mkdtempSync(join(scratchRoot, 'consumer-'));
  // A package of its own: else the project's package.json, named listing-limits, would answer for it (self-reference).
  writeFileSync(join(scratch, 'package.json'), '{ "name": "consumer", "private": true }\n');
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: root, encoding: 'utf8' });
  const [{ filename, files, unpackedSize }] = JSON.parse(out.slice(out.indexOf('['))) as [
    { filename: string; files: { path: string }[]; unpackedSize: number },
  ];
  // The manual travels with the package (its guides, so that the README's links work in node_modules), without its
  // screenshots: GitHub and npm's site show them from the repository.
  const guides = readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`);
  expect(
    files
      .map((f) => f.path)
      .filter((p) => !p.startsWith('dist/'))
      .sort(),
  ).toEqual(['CHANGELOG.md', 'LICENSE', 'README.md', ...guides, 'package.json'].sort());
  packed = { files, unpackedSize };
  tarball = join(scratch, filename);
  installed = join(scratch, 'node_modules', 'listing-limits');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', join(scratch, filename), '-C', installed, '--strip-components=1']);
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

it('ships one bundle per entry point, with its types and an ES module wrapper, in at most 1.05 MB unpacked', () => {
  const dist = packed.files.map((f) => f.path).filter((p) => p.startsWith('dist/'));
  const entries = ['index', 'client', 'verify', 'pages'].flatMap((entry) =>
    ['cjs', 'mjs', 'd.cts', 'd.mts'].map((extension) => `dist/${entry}.${extension}`),
  );
  expect(dist).toEqual(expect.arrayContaining([...entries, 'dist/cli.cjs']));
  // Besides those, only the chunks the entry points share, with their types: no folder, no copy per format.
  const chunks = dist.filter((p) => !entries.includes(p) && p !== 'dist/cli.cjs');
  expect(chunks.filter((p) => !/^dist\/[\w-]+\.(?:cjs|d\.cts)$/.test(p))).toEqual([]);
  expect(chunks.length).toBeLessThanOrEqual(12);
  // Half the 2.1 MB of the per-file CommonJS and ES module builds with their declarations that 0.3.0 shipped.
  expect(packed.unpackedSize).toBeLessThanOrEqual(1_050_000);
});

const script = (name: string, code: string) => {
  writeFileSync(join(scratch, name), code);
  return execFileSync(process.execPath, [name], { cwd: scratch, encoding: 'utf8' }).trim();
};

/** Script code: `defines(name)`, whether a file of the package's dist/ that the script has loaded defines that function. */
const defines = `const defines = (name) => Object.keys(require.cache)
  .filter((p) => /[\\\\/]listing-limits[\\\\/]dist[\\\\/]/.test(p))
  .some((p) => require('node:fs').readFileSync(p, 'utf8').includes('function ' + name + '('));`;

const check = `
  const app = express();
  app.use(listingLimits('B'));
  app.get('/v1/bots/:id', (req, res) => res.json(req.rateLimit));
  const server = app.listen(0, async () => {
    const res = await fetch('http://127.0.0.1:' + server.address().port + '/v1/bots/1');
    console.log(res.status, res.headers.get('ratelimit'), typeof memoryStore, listings.A.length, new ListingLimitsError('ERR_INVALID_OPTION', 'x', 'y').code);
    server.close();
  });`;
const expected = '200 "GET /v1/bots/:id";r=1;t=1 function 6 ERR_INVALID_OPTION';

it('loads with require()', () => {
  expect(
    script(
      'cjs.cjs',
      `const express = require('express');
       const { listingLimits, memoryStore, listings, ListingLimitsError } = require('listing-limits');${check}`,
    ),
  ).toBe(expected);
});

it('loads with import', () => {
  expect(
    script(
      'esm.mjs',
      `import express from 'express';
       import { listingLimits, memoryStore, listings, ListingLimitsError } from 'listing-limits';${check}`,
    ),
  ).toBe(expected);
});

it('loads no Redis client package by itself: the user chooses ioredis, iovalkey, redis or GLIDE and passes it in', () => {
  // What a process has loaded: CommonJS files (ES modules import CommonJS packages into the same cache) and native
  // libraries, such as GLIDE's binary.
  const loaded = `Object.keys(require.cache).concat(process.report.getReport().sharedObjects)
    .filter((p) => /node_modules[\\/](ioredis|iovalkey|redis|@redis|@valkey)[\\/]/.test(p))`;
  expect(
    script(
      'no-redis.cjs',
      `const { redisStore } = require('listing-limits');
       console.log(typeof redisStore, JSON.stringify(${loaded}));`,
    ),
  ).toBe('function []');
  expect(
    script(
      'no-redis.mjs',
      `import { redisStore } from 'listing-limits';
       import { createRequire } from 'node:module';
       const require = createRequire(import.meta.url);
       console.log(typeof redisStore, JSON.stringify(${loaded}));`,
    ),
  ).toBe('function []');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const required = Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies });
  expect(required).not.toContain('ioredis');
  expect(required).not.toContain('redis');
  // GLIDE is an optional peer: npm checks its version when the app has it, and installs nothing when not.
  expect(pkg.peerDependencies['@valkey/valkey-glide']).toBe('^2.0.0');
  expect(pkg.peerDependenciesMeta['@valkey/valkey-glide']).toEqual({ optional: true });
  expect(pkg.dependencies['@valkey/valkey-glide']).toBeUndefined();
});

it('exports only import, require, types and default conditions', () => {
  const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
  const conditions = new Set<string>();
  const walk = (value: unknown): void => {
    if (typeof value !== 'object' || value === null) return;
    for (const [key, inner] of Object.entries(value)) {
      conditions.add(key);
      walk(inner);
    }
  };
  for (const target of Object.values(pkg.exports)) walk(target);
  expect([...conditions].sort()).toEqual(['default', 'import', 'require', 'types']);
  expect(Object.keys(pkg.exports)).toEqual(['.', './verify', './client', './pages', './package.json']);
});

it('loads neither structured-headers nor cli-progress with the middleware, nor what the pages need', () => {
  expect(
    script(
      'light.cjs',
      `const main = require('listing-limits');
       const loaded = Object.keys(require.cache).filter((p) => /node_modules[\\/](structured-headers|cli-progress|helmet|csrf-csrf|cookie-parser)[\\/]/.test(p));
       ${defines}
       console.log(typeof main.listingLimits, 'verifyContract' in main, JSON.stringify(loaded), JSON.stringify(['listingLimits', 'limitsAdmin', 'limitsRequestPage'].filter(defines)));`,
    ),
  ).toBe('function false [] ["listingLimits"]');
});

it('serves verifyContract and planVerification from listing-limits/verify, to require() and to import', () => {
  const show = `console.log(typeof verify.verifyContract, verify.planVerification({ baseUrl: 'http://127.0.0.1:1/api', listing: 'B' }).requests);`;
  expect(script('verify.cjs', `const verify = require('listing-limits/verify'); ${show}`)).toBe('function 259');
  expect(script('verify.mjs', `import * as verify from 'listing-limits/verify'; ${show}`)).toBe('function 259');
});

it('serves listingClient from listing-limits/client, to require() and to import', () => {
  const show = `const api = client.listingClient({ listing: 'B', baseUrl: 'http://127.0.0.1:1' });
    console.log(typeof api.get, typeof api.report, new client.ListingClientError('ERR_BANNED', 'GET /v1/bots', 'x').code);`;
  expect(script('client.cjs', `const client = require('listing-limits/client'); ${show}`)).toBe(
    'function function ERR_BANNED',
  );
  expect(script('client.mjs', `import * as client from 'listing-limits/client'; ${show}`)).toBe(
    'function function ERR_BANNED',
  );
});

it('serves limitsRequestPage and limitsAdmin from listing-limits/pages, to require() and to import', () => {
  const show = `const limits = main.listingLimits('B');
    const routers = [pages.limitsRequestPage(limits), pages.limitsAdmin(limits, { authorize: () => false })];
    let refused = '';
    try { pages.limitsAdmin(limits, {}); } catch (e) { refused = e.code + ' ' + e.field; }
    console.log(routers.map((r) => typeof r).join(' '), pages.escapeHtml('<b>'), refused);
    limits.close();`;
  const expected = 'function function &lt;b&gt; ERR_INVALID_OPTION options.authorize';
  expect(
    script(
      'pages.cjs',
      `const main = require('listing-limits'); const pages = require('listing-limits/pages'); ${show}`,
    ),
  ).toBe(expected);
  expect(
    script(
      'pages.mjs',
      `import * as main from 'listing-limits'; import * as pages from 'listing-limits/pages'; ${show}`,
    ),
  ).toBe(expected);
});

it('loads nothing of Express, the stores or the middleware with listing-limits/client', () => {
  expect(
    script(
      'client-light.cjs',
      `const { listingClient } = require('listing-limits/client');
       listingClient({ listing: 'A', baseUrl: 'http://127.0.0.1:1' });
       const loaded = Object.keys(require.cache)
         .filter((p) => /node_modules[\\\\/](express|rate-limiter-flexible|ioredis|redis|@redis|prom-client|lru-cache|ipaddr\\.js|cli-progress)[\\\\/]/.test(p));
       ${defines}
       console.log(typeof listingClient, JSON.stringify(loaded), JSON.stringify(['listingClient', 'listingLimits', 'memoryStore', 'redisStore', 'verifyContract'].filter(defines)));`,
    ),
  ).toBe('function [] ["listingClient"]');
});

describe('type declarations', () => {
  it.each(['import', 'require'] as const)('exist for every entry point, for %s', (condition) => {
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    for (const entry of ['.', './verify', './client', './pages']) {
      const types = pkg.exports[entry][condition].types as string;
      expect(existsSync(join(installed, types))).toBe(true);
    }
  });

  it('publish no internal type: the compiled configuration and the request context stay out', () => {
    const folder = join(installed, 'dist');
    const declarations = readdirSync(folder).filter((name) => /\.d\.[cm]ts$/.test(name));
    expect(declarations.length).toBeGreaterThan(5);
    for (const name of declarations) {
      const text = readFileSync(join(folder, name), 'utf8');
      expect({
        name,
        config: /\binterface Config\b|\bconfigure\(/.test(text),
        internal: text.includes('@internal'),
      }).toEqual({
        name,
        config: false,
        internal: false,
      });
    }
  });

  // A consumer in TypeScript, compiled against the packed package: as CommonJS and as an ES module.
  it.each([
    ['consumer.cts', 'node16'],
    ['consumer.mts', 'node16'],
    ['consumer.ts', 'bundler'],
  ] as const)('type-check a consumer: %s with %s resolution', (file, resolution) => {
    const path = join(scratch, file);
    writeFileSync(
      path,
      `import { listingLimits, type ListingName } from 'listing-limits';
import { planVerification, type VerifyReport, verifyContract } from 'listing-limits/verify';
import { type ListingClient, listingClient } from 'listing-limits/client';
import { type AdminPageOptions, limitsAdmin, limitsRequestPage } from 'listing-limits/pages';
const listing: ListingName = 'B';
const middleware = listingLimits(listing);
const report: Promise<VerifyReport> = verifyContract({ baseUrl: 'http://127.0.0.1:3000', listing });
const requests: number = planVerification({ baseUrl: 'http://127.0.0.1:3000', listing }).requests;
const api: ListingClient = listingClient({ listing, baseUrl: 'http://127.0.0.1:3000', token: 'Bot x' });
const bot: Promise<{ id: string }> = api.get<{ id: string }>('/v1/bots/:id', { id: '42' });
const admin: AdminPageOptions = { authorize: { token: 'admin-token-0123456789' } };
const pages = [limitsRequestPage(middleware), limitsAdmin(middleware, admin)];
export { middleware, report, requests, bot, pages };
`,
    );
    const module = resolution === 'node16' ? ts.ModuleKind.Node16 : ts.ModuleKind.ESNext;
    const moduleResolution = resolution === 'node16' ? ts.ModuleResolutionKind.Node16 : ts.ModuleResolutionKind.Bundler;
    const program = ts.createProgram([path], {
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      target: ts.ScriptTarget.ES2022,
      module,
      moduleResolution,
      types: ['node'],
    });
    const messages = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    expect(messages).toEqual([]);
  });
});

describe('the listing-limits command', () => {
  let bin: string;
  const servers: Served[] = [];
  beforeAll(() => {
    const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8'));
    bin = join(installed, pkg.bin['listing-limits']);
  });
  afterEach(async () => {
    jest.useRealTimers();
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  /**
   * Runs the packed command as a program, without blocking this process (which serves the API it probes);
   * `onStderr` sees its progress output so far, as it comes.
   */
  const command = (args: string[], onStderr: (text: string) => void = () => {}) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((done, fail) => {
      const child = spawn(bin, args);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => onStderr((stderr += chunk)));
      child.once('error', fail);
      child.once('close', (code) => done({ code: code ?? -1, stdout, stderr }));
    });

  it('is an executable file that starts with #!/usr/bin/env node', async () => {
    expect(statSync(bin).mode & 0o111).toBe(0o111);
    expect(readFileSync(bin, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
    expect(await command(['--help'])).toEqual({ code: 0, stdout: USAGE, stderr: '' });
  });

  it('verifies a running API with windows of one second, and exits 0', async () => {
    // The API counts on a fake clock, and writes Date from it, so that its window ends when the command has said
    // it waits for that, never before because this machine was slow; the command itself waits in real time.
    useFakeWindows();
    const app = createApp({
      listing: 'A',
      setup: (a) =>
        a.use((_req, res, next) => {
          res.setHeader('Date', new Date().toUTCString());
          next();
        }),
    });
    const served = await serve(app);
    servers.push(served);
    let windowEnded = false;
    const result = await command(
      ['verify', served.url, '--listing', 'A', '--only', 'GET /v1/statistics', '--grace', '100'],
      (stderr) => {
        if (windowEnded || !stderr.includes('waiting')) return;
        windowEnded = true;
        jest.advanceTimersByTime(1000);
      },
    );
    expect(result.stdout).toBe(
      [
        `listing-limits verify ${served.url}, listing A, fixed windows`,
        '',
        'Endpoint            Result  Requests  Window  Findings',
        'GET /v1/statistics  pass           4  either',
        '',
        'Headers             Result  Sent                                   Findings',
        'GET /v1/statistics  pass    drafts 8-11, X-RateLimit, Retry-After',
        '',
        'The endpoint passes.',
        '',
      ].join('\n'),
    );
    // How long the command waits depends on how long its first requests took: only the shape of that line is fixed.
    expect(result.stderr).toMatch(
      /^\[1\/1\] GET \/v1\/statistics: probing\n\[1\/1\] GET \/v1\/statistics: waiting \d+ s for the window to end\n\[1\/1\] GET \/v1\/statistics: pass\n$/,
    );
    expect(result.code).toBe(0);
    expect(served.requests).toBe(4);
  });

  it('exits 1 when an endpoint fails, and 2 for wrong arguments', async () => {
    const served = await serve(createApp({ listing: [listings.B[0] as EndpointRow], routes: listings.B }));
    servers.push(served);
    // GET /v1/bots/:id/upvotes is served without a limit: its 3 requests pass, which the command tells apart from a
    // window that ended on the way only while they took less than its window of 15 seconds.
    const failed = await command([
      'verify',
      served.url,
      '--listing',
      'B',
      '--only',
      'GET /v1/bots/:id/upvotes',
      '--json',
    ]);
    expect(JSON.parse(failed.stdout).endpoints[0].findings).toEqual(['allowed 3 requests, contract says 2']);
    expect(failed.code).toBe(1);
    expect(await command(['verify', served.url, '--listing', 'C'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'listing-limits: --listing must be A or B; got "C" (see listing-limits --help)\n',
    });
    expect(served.requests).toBe(3);
  });
});

describe('what a new user meets, through the packed package', () => {
  /** Runs `code` as a script of the consumer: as CommonJS (`.cjs`, with require) and as an ES module (`.mjs`). */
  const both = (name: string, code: (load: (specifier: string) => string) => string) => [
    script(`${name}.cjs`, `(async () => {${code((s) => `require('${s}')`)}})();`),
    script(
      `${name}.mjs`,
      code((s) => `(await import('${s}'))`),
    ),
  ];

  it("is a release: the CHANGELOG's newest section is its version, and it says where it comes from", () => {
    const packed = (name: string) => readFileSync(join(installed, name), 'utf8');
    const meta = JSON.parse(packed('package.json')) as Record<string, unknown>;
    const [unreleased, newest] = [...packed('CHANGELOG.md').matchAll(/^## \[([^\]]+)\](?: - (\S+))?$/gm)];
    expect(unreleased?.[1]).toBe('Unreleased');
    expect(newest?.[1]).toBe(meta.version);
    expect(newest?.[2]).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(meta.type).toBe('commonjs');
    const repository = 'https://github.com/listing-limits/listing-limits';
    expect(meta).toMatchObject({
      homepage: `${repository}#readme`,
      repository: { type: 'git', url: `git+${repository}.git` },
      bugs: { url: `${repository}/issues` },
    });
    // Every version the manual names in a file name or a "before x.y.z" is this one.
    expect([...packed('README.md').matchAll(/listing-limits-(\d+\.\d+\.\d+)\.tgz/g)].map(([, v]) => v)).toEqual([
      meta.version,
    ]);
    expect(packed('README.md')).toContain(`git clone ${repository}.git`);
  });

  it('listings by what they list: servers and bots, with hints that name the right listing', () => {
    const code = (load: (specifier: string) => string) => `
      const { listingLimits, ListingLimitsError } = ${load('listing-limits')};
      const express = ${load('express')};
      const app = (express.default ?? express)();
      app.use(listingLimits('bots'));
      app.get('/v1/statistics', (req, res) => res.json(req.rateLimit));
      const hints = ['bot', 'B ', 'listing-b', 'server'].map((name) => {
        try { listingLimits(name); } catch (e) { return e instanceof ListingLimitsError && e.message.split('? ')[0].split('. ').pop(); }
      });
      const server = app.listen(0, async () => {
        const res = await fetch('http://127.0.0.1:' + server.address().port + '/v1/statistics');
        console.log(res.headers.get('ratelimit-policy'), JSON.stringify(hints));
        server.close();
      });`;
    const expected =
      '"GET /v1/statistics";q=5;w=1 ' +
      '["Did you mean `bots` (listing B)?","Did you mean `B` (bots)?","Did you mean `B` (bots)?","Did you mean `servers` (listing A)?"]';
    expect(both('names', code)).toEqual([expected, expected]);
  });

  it('the factory mounted uncalled answers with an error that says to call it; a mount path its table starts with, routes before the limiter and the uncalled factory are warned', () => {
    const code = (load: (specifier: string) => string) => `
      const { listingLimits } = ${load('listing-limits')};
      const express = ${load('express')};
      const warnings = [];
      process.on('warning', (w) => warnings.push(w.code));
      const app = (express.default ?? express)();
      app.get('/v1/users/:id', (req, res) => res.json({}));
      app.use('/v1', listingLimits('B'));
      app.use('/uncalled', listingLimits);
      app.use(listingLimits('A'));
      app.get('/v1/bots', (req, res) => res.json({}));
      app.use((error, req, res, next) => res.status(500).json({ code: error.code }));
      const server = app.listen(0, async () => {
        const url = 'http://127.0.0.1:' + server.address().port;
        const mounted = await fetch(url + '/v1/bots');
        const uncalled = await (await fetch(url + '/uncalled/v1/bots')).json();
        await new Promise((resolve) => setImmediate(resolve));
        console.log(mounted.status, mounted.headers.get('ratelimit'), uncalled.code, JSON.stringify(warnings.sort()));
        server.close();
      });`;
    const expected =
      '200 null ERR_NOT_CALLED ["LISTING_LIMITS_MOUNT_ORDER","LISTING_LIMITS_MOUNT_PATH","LISTING_LIMITS_NOT_CALLED"]';
    expect(both('mistakes', code)).toEqual([expected, expected]);
  });

  it('headers in draft 7, read by ratelimit-header-parser, and problem details on request', () => {
    const code = (load: (specifier: string) => string) => `
      const { listingLimits } = ${load('listing-limits')};
      const { parseRateLimit } = ${load('ratelimit-header-parser')};
      const express = ${load('express')};
      const app = (express.default ?? express)();
      app.use(listingLimits('B', { headers: 'draft-7' }));
      app.get('/v1/bots/:id', (req, res) => res.json({}));
      const server = app.listen(0, async () => {
        const url = 'http://127.0.0.1:' + server.address().port + '/v1/bots/1';
        const first = await fetch(url);
        const { limit, remaining, used } = parseRateLimit(first);
        await fetch(url);
        const refused = await fetch(url, { headers: { Accept: 'application/problem+json' } });
        const problem = await refused.json();
        console.log(limit, remaining, used, refused.headers.get('content-type'), problem.type, JSON.stringify(problem['violated-policies']));
        server.close();
      });`;
    const expected =
      '2 1 1 application/problem+json https://iana.org/assignments/http-problem-types#quota-exceeded ["GET /v1/bots/:id"]';
    expect(both('drafts', code)).toEqual([expected, expected]);
  });

  it('import and require() share one copy of the package: the same error classes, whose errors are instances of each other', () => {
    const out = script(
      'brands.cjs',
      `(async () => {
        const copies = [require('listing-limits'), await import('listing-limits')];
        const clients = [require('listing-limits/client'), await import('listing-limits/client')];
        const make = [
          (m) => new m.ListingLimitsError('ERR_INVALID_OPTION', 'options.x', 'is wrong.'),
          (m) => new m.StoreUnavailableError('open'),
        ];
        const results = [copies[0].ListingLimitsError === copies[1].ListingLimitsError];
        for (const [a, b] of [[0, 1], [1, 0]]) {
          results.push(make[0](copies[a]) instanceof copies[b].ListingLimitsError);
          results.push(make[1](copies[a]) instanceof copies[b].StoreUnavailableError);
          results.push(make[1](copies[a]) instanceof copies[b].ListingLimitsError);
          results.push(new clients[a].ListingClientError('ERR_BANNED', 'GET /v1/bots', 'x') instanceof clients[b].ListingClientError);
        }
        console.log(JSON.stringify(results));
      })();`,
    );
    expect(out).toBe('[true,true,true,false,true,true,true,false,true]');
  });
});

describe('a fresh install of the packed package, outside the project, as an app installs it from the registry', () => {
  /** Folders of apps made under the system's temporary folder, where the project's node_modules cannot answer. */
  const apps: string[] = [];
  afterAll(() => apps.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

  /** Installs `specs` into a new app with npm, from its cache when it can, as docs/install.md's weights are measured. */
  const install = (specs: string[]) => {
    const installed = installApp(specs, { offline: true });
    apps.push(installed.dir);
    return installed;
  };
  let express: ReturnType<typeof install>;
  let ours: ReturnType<typeof install>;
  let alone: ReturnType<typeof install>;
  beforeAll(() => {
    express = install(['express@5']);
    ours = install(['express@5', tarball]);
    alone = install([tarball]);
  }, 180_000);

  it("the client's and the verifier's install: no Express, only the package's own dependencies, as docs/install.md says", () => {
    const names = alone.packages.map((p) => p.slice(0, p.lastIndexOf('@'))).sort();
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(names).toEqual(['listing-limits', ...Object.keys(pkg.dependencies)].sort());
    expect(existsSync(join(alone.dir, 'node_modules', 'express'))).toBe(false);
    expect(pkg.peerDependenciesMeta.express).toEqual({ optional: true });
    const install = readFileSync(join(root, 'docs', 'install.md'), 'utf8').replace(/\s+/g, ' ');
    expect(install).toContain(`| \`npm install listing-limits\` | ${names.length} |`);
    // Each entry point loads there: the client and the verifier call nothing of Express, nor does the middleware.
    const run = (file: string, code: string) => {
      writeFileSync(join(alone.dir, file), code);
      return execFileSync(process.execPath, [file], { cwd: alone.dir, encoding: 'utf8' }).trim();
    };
    expect(
      run(
        'light.cjs',
        `const { listingClient } = require('listing-limits/client');
         const { planVerification } = require('listing-limits/verify');
         const { listingLimits } = require('listing-limits');
         const api = listingClient({ listing: 'b', baseUrl: 'http://127.0.0.1:1' });
         const limits = listingLimits('a');
         console.log(typeof api.get, planVerification({ baseUrl: 'http://127.0.0.1:1', listing: 'a' }).requests, typeof limits);
         limits.close();`,
      ),
    ).toBe('function 131 function');
    const bin = join(alone.dir, 'node_modules', '.bin', 'listing-limits');
    expect(execFileSync(bin, ['--help'], { encoding: 'utf8' })).toBe(USAGE);
  });

  it('ships the pages the README links to: every relative link of the installed manual leads into the package', () => {
    const dir = join(alone.dir, 'node_modules', 'listing-limits');
    const pages = ['README.md', ...readdirSync(join(dir, 'docs')).map((name) => `docs/${name}`)];
    expect(pages.length).toBeGreaterThan(5);
    const targets = pages.flatMap((page) =>
      [...readFileSync(join(dir, page), 'utf8').matchAll(/\]\(([^)\s#]+)(?:#[^)\s]*)?\)/g)]
        .map(([, target]) => target as string)
        .filter((target) => !/^(?:https?:|mailto:)/.test(target) && !/\.(?:png|svg)$/.test(target))
        .map((target) => relative(dir, join(dir, dirname(page), target))),
    );
    expect(targets).toEqual(expect.arrayContaining(['docs/middleware.md', 'docs/stores.md', 'CHANGELOG.md']));
    expect(targets.filter((target) => !existsSync(join(dir, target)))).toEqual([]);
  });

  it("pulls in what the middleware needs and nothing of the pages' or the progress bar's: at most express-rate-limit's count plus those", () => {
    const added = ours.packages.filter((p) => !express.packages.includes(p)).map((p) => p.slice(0, p.lastIndexOf('@')));
    // ipaddr.js 2 beside Express's own ipaddr.js 1; structured-headers reads the fields for the client and verify;
    // cluster-key-slot (ioredis's and node-redis's) tells which node of a Redis Cluster holds a key.
    expect(added.sort()).toEqual([
      'cluster-key-slot',
      'fastest-levenshtein',
      'ipaddr.js',
      'listing-limits',
      'lru-cache',
      'rate-limiter-flexible',
      'structured-headers',
    ]);
    const erl = install(['express@5', 'express-rate-limit']);
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    const middlewareNeeds = [
      'rate-limiter-flexible',
      'lru-cache',
      'ipaddr.js',
      'path-to-regexp',
      'fastest-levenshtein',
      'cluster-key-slot',
    ];
    expect(
      Object.keys(pkg.dependencies)
        .filter((name) => middlewareNeeds.includes(name))
        .sort(),
    ).toEqual([...middlewareNeeds].sort());
    expect(ours.packages.length).toBeLessThanOrEqual(erl.packages.length + middlewareNeeds.length);
  }, 120_000);

  it('names what listing-limits/pages needs, at once, to require() and to import', () => {
    const message =
      'listing-limits/pages needs helmet, csrf-csrf, cookie-parser, which your app installs (optional peer ' +
      'dependencies of listing-limits); missing: helmet, csrf-csrf, cookie-parser. Install them: npm install ' +
      'helmet@^8.3.0 csrf-csrf@^4.0.3 cookie-parser@^1.4.7';
    const run = (file: string, code: string) => {
      writeFileSync(join(ours.dir, file), code);
      return execFileSync(process.execPath, [file], { cwd: ours.dir, encoding: 'utf8' }).trim();
    };
    const show = `console.log(error.code + ' ' + error.message)`;
    expect(run('pages.cjs', `try { require('listing-limits/pages'); } catch (error) { ${show} }`)).toBe(
      `ERR_MISSING_PEER_DEPENDENCY ${message}`,
    );
    expect(run('pages.mjs', `try { await import('listing-limits/pages'); } catch (error) { ${show} }`)).toBe(
      `ERR_MISSING_PEER_DEPENDENCY ${message}`,
    );
    // The pages' versions in the message are those package.json asks for.
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    for (const name of ['helmet', 'csrf-csrf', 'cookie-parser']) {
      expect(message).toContain(`${name}@${pkg.peerDependencies[name]}`);
      expect(pkg.peerDependenciesMeta[name]).toEqual({ optional: true });
    }
  });

  it('runs the listing-limits command without cli-progress, as npx does', () => {
    const bin = join(ours.dir, 'node_modules', '.bin', 'listing-limits');
    expect(execFileSync(bin, ['--help'], { encoding: 'utf8' })).toBe(USAGE);
    const plan = JSON.parse(
      execFileSync(bin, ['verify', 'http://127.0.0.1:1', '--listing', 'bots', '--dry-run', '--json'], {
        encoding: 'utf8',
      }),
    ) as { endpoints: { endpoint: string }[] };
    expect(plan.endpoints.map((e) => e.endpoint)).toEqual(listings.B.map((row) => `${row.method} ${row.path}`));
    expect(ours.packages.some((p) => p.startsWith('cli-progress@'))).toBe(false);
  });
});
