// `npm run test:fast` runs no test file that starts a process, builds, drives a browser or needs redis-server:
// each such file, found by reading it and everything it imports, is in helpers/slow-tests.js.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';

const root = join(__dirname, '..');
const load = createRequire(__filename);
const slow = load('./helpers/slow-tests.js') as Record<string, string>;
const fastConfig = load('../jest.fast.config.js') as { testPathIgnorePatterns: string[] };

/** What makes a test file slow, and the text in a source (comments left out) that says a file needs it. */
const needs: readonly { need: string; pattern: RegExp }[] = [
  { need: 'starts a process', pattern: /\bchild_process\b|\b(?:spawn|fork)(?:Sync)?\s*\(/ },
  { need: 'builds', pattern: /\bnpm pack\b|\btsc\b|['"]typescript(?:\/[^'"]*)?['"]/ },
  { need: 'drives a browser', pattern: /\bplaywright/ },
  { need: 'needs redis-server', pattern: /\bredis-server\b/ },
];

/** The source without its comments, so that a comment that names a tool does not make a file slow. */
const code = (source: string) => source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|\s)\/\/.*$/gm, '$1');

/** What a source needs, by its own text. */
const needsOf = (source: string) => needs.filter(({ pattern }) => pattern.test(code(source))).map((n) => n.need);

/** The relative paths a source imports, requires or loads with import(). */
const importsOf = (source: string) =>
  [...code(source).matchAll(/(?:\bfrom|\bimport|\brequire)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]);

/** The file a relative import names: lib/ imports name their .js (.cjs) output, the tests load the .ts (.cts). */
function fileOf(from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  const candidates = [base, base.replace(/\.js$/, '.ts'), base.replace(/\.cjs$/, '.cts'), `${base}.ts`, `${base}.js`];
  candidates.push(join(base, 'index.ts'));
  const found = candidates.find((file) => existsSync(file) && statSync(file).isFile());
  if (!found) throw new Error(`${relative(root, from)} imports ${specifier}, which is no file`);
  return found;
}

/** What a file needs, by its own text and that of every file it imports, each need with the first file that has it. */
function needsOfFile(file: string, seen = new Set<string>()): Map<string, string> {
  const found = new Map<string, string>();
  if (seen.has(file)) return found;
  seen.add(file);
  const source = readFileSync(file, 'utf8');
  for (const need of needsOf(source)) found.set(need, relative(root, file));
  for (const specifier of importsOf(source)) {
    for (const [need, where] of needsOfFile(fileOf(file, specifier as string), seen)) {
      if (!found.has(need)) found.set(need, where);
    }
  }
  return found;
}

const testFiles = readdirSync(__dirname)
  .filter((name) => name.endsWith('.test.ts'))
  .sort();
const fast = testFiles.filter((name) => !(name in slow));
/** This file: its samples below name everything it looks for, as text; it reads files and nothing more. */
const self = 'fast-tests.test.ts';

describe('reading a source', () => {
  it.each<[string, string, string[]]>([
    ['child_process', "import { spawn } from 'node:child_process';", ['starts a process']],
    ['spawn', 'const child = spawn(process.execPath, [script]);', ['starts a process']],
    ['fork', 'fork(script)', ['starts a process']],
    ['npm pack, run as a process', "import { execFileSync } from 'child_process';", ['starts a process']],
    ['tsc', "const tsc = require.resolve('typescript/bin/tsc');", ['builds']],
    ['the TypeScript compiler', "import ts from 'typescript';", ['builds']],
    ['npm pack in a string', "run('npm pack --json')", ['builds']],
    ['playwright', "import { chromium } from 'playwright-core';", ['drives a browser']],
    ['redis-server', "onPath('redis-server')", ['needs redis-server']],
    ['a Redis URL', "const url = 'redis://127.0.0.1:6379';", []],
    ['a comment', '// starts no redis-server, runs no tsc\n/* nor spawn() */', []],
    ['a word in a name', 'const forked = tscore + spawned;', []],
  ])('%s', (_name, source, expected) => {
    expect(needsOf(source)).toEqual(expected);
  });

  it('finds imports, requires and import() of relative paths, not packages', () => {
    const source = [
      "import { a } from './helpers/a';",
      "import type { B } from '../lib/b.js';",
      "export { c } from './c';",
      "const d = require('./helpers/d.js');",
      "const e = await import('./e');",
      "import express from 'express';",
      "// import { f } from './f';",
    ].join('\n');
    expect(importsOf(source)).toEqual(['./helpers/a', '../lib/b.js', './c', './helpers/d.js', './e']);
  });
});

describe('the fast test files', () => {
  it('are found: the fast run is not empty, and this file is in it', () => {
    expect(fast).toContain(self);
  });

  it.each(fast.filter((name) => name !== self))(
    '%s, and all it imports, starts no process, builds nothing, drives no browser, needs no Redis',
    (name) => {
      expect(Object.fromEntries(needsOfFile(join(__dirname, name)))).toEqual({});
    },
  );
});

describe('the slow test files', () => {
  it('are listed by name, in order, each a test file that exists', () => {
    expect(Object.keys(slow)).toEqual([...Object.keys(slow)].sort());
    expect(Object.keys(slow).filter((name) => !testFiles.includes(name))).toEqual([]);
  });

  it('are those the fast run leaves out, and no other', () => {
    const ignored = (name: string) =>
      fastConfig.testPathIgnorePatterns.some((pattern) => new RegExp(pattern).test(join(__dirname, name)));
    expect(testFiles.filter(ignored)).toEqual(Object.keys(slow));
  });
});
