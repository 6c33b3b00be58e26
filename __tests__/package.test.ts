// The package as users get it: built, packed with npm pack, and loaded from CommonJS and from ESM.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..');
// Inside the project, so that the packed package resolves its dependencies from the project's node_modules.
const scratchRoot = join(root, '.pack-test');
let scratch: string;

beforeAll(() => {
  mkdirSync(scratchRoot, { recursive: true });
  scratch = mkdtempSync(join(scratchRoot, 'consumer-'));
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
  const installed = join(scratch, 'node_modules', 'listing-limits');
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

it('loads no Redis client package by itself: the user chooses ioredis or redis and passes the client in', () => {
  expect(
    script(
      'no-redis.cjs',
      `const { redisStore } = require('listing-limits');
       const loaded = Object.keys(require.cache).filter((p) => /node_modules[\\\\/](ioredis|redis|@redis)[\\\\/]/.test(p));
       console.log(typeof redisStore, JSON.stringify(loaded));`,
    ),
  ).toBe('function []');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const required = Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies });
  expect(required).not.toContain('ioredis');
  expect(required).not.toContain('redis');
});

it('ships type declarations for both', () => {
  const pkg = JSON.parse(readFileSync(join(scratch, 'node_modules', 'listing-limits', 'package.json'), 'utf8'));
  for (const condition of ['import', 'require'] as const) {
    const types = pkg.exports['.'][condition].types as string;
    expect(
      script(
        `types-${condition}.cjs`,
        `console.log(require('fs').existsSync(${JSON.stringify(join('node_modules/listing-limits', types))}))`,
      ),
    ).toBe('true');
  }
});
