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
import { join } from 'node:path';
import ts from 'typescript';
import { type EndpointRow, listings } from '../lib';
import { USAGE } from '../lib/command';
import { createApp } from './helpers/app';
import { type Served, serve } from './helpers/serve';
import { useFakeWindows } from './helpers/stores';

const root = join(__dirname, '..');
// Inside the project, so that the packed package resolves its dependencies from the project's node_modules.
const scratchRoot = join(root, '.pack-test');
let scratch: string;
let installed: string;

beforeAll(() => {
  mkdirSync(scratchRoot, { recursive: true });
  scratch = mkdtempSync(join(scratchRoot, 'consumer-'));
  // A package of its own: else the project's package.json, named listing-limits, would answer for it (self-reference).
  writeFileSync(join(scratch, 'package.json'), '{ "name": "consumer", "private": true }\n');
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: root, encoding: 'utf8' });
  const [{ filename, files }] = JSON.parse(out.slice(out.indexOf('['))) as [
    { filename: string; files: { path: string }[] },
  ];
  expect(
    files
      .map((f) => f.path)
      .filter((p) => !p.startsWith('dist/'))
      .sort(),
  ).toEqual(['CHANGELOG.md', 'LICENSE', 'README.md', 'package.json']);
  installed = join(scratch, 'node_modules', 'listing-limits');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', join(scratch, filename), '-C', installed, '--strip-components=1']);
}, 120_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const script = (name: string, code: string) => {
  writeFileSync(join(scratch, name), code);
  return execFileSync(process.execPath, [name], { cwd: scratch, encoding: 'utf8' }).trim();
};

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
       const loaded = Object.keys(require.cache).filter((p) => /node_modules[\\/](structured-headers|cli-progress|helmet|csrf-csrf|cookie-parser)[\\/]|[\\/]dist[\\/]cjs[\\/]pages/.test(p));
       console.log(typeof main.listingLimits, 'verifyContract' in main, JSON.stringify(loaded));`,
    ),
  ).toBe('function false []');
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
         .filter((p) => /node_modules[\\\\/](express|rate-limiter-flexible|ioredis|redis|@redis|prom-client|lru-cache|ipaddr\\.js|cli-progress)[\\\\/]|[\\\\/]dist[\\\\/]cjs[\\\\/](index|middleware|stores|memory|redis|bans|grants|verify)\\.js$/.test(p));
       console.log(typeof listingClient, JSON.stringify(loaded));`,
    ),
  ).toBe('function []');
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
    for (const dir of ['cjs', 'esm']) {
      const folder = join(installed, 'dist', dir);
      const declarations = readdirSync(folder).filter((name) => name.endsWith('.d.ts'));
      expect(declarations.length).toBeGreaterThan(5);
      for (const name of declarations) {
        const text = readFileSync(join(folder, name), 'utf8');
        expect({ name, config: /\binterface Config\b|\bconfigure\(/.test(text) }).toEqual({ name, config: false });
      }
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
