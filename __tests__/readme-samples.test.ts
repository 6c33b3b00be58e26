// Every code sample of the manual (README.md and docs/*.md) is checked: TypeScript and JavaScript compile under --strict,
// with node16 and with bundler resolution, against the package's types; JSON parses; HTTP is header fields; shell
// commands name npm scripts that exist, and `npm ci` installs a clone.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { entryPoints, type Fence, fences, manual, root } from './helpers/manual';

/**
 * What a fragment may use without declaring it, named in a comment just before its block:
 * `<!-- ts-prelude: app pool -->`. Each is the least the samples need of it, declared, not implemented.
 */
const preludes: Readonly<Record<string, string>> = {
  app: "declare const app: import('express').Express;",
  pool: 'declare const pool: unknown; // a pg Pool',
  sharedStore: "declare const sharedStore: import('listing-limits').Store;",
  tokens: 'declare const tokens: { isValid(token: string): Promise<boolean> };',
  log: 'declare const log: { warn(entry: object): void };',
  metrics: 'declare const metrics: { increment(name: string, tags: Record<string, string>): void };',
};

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
  expect(ofLang('ts').length).toBeGreaterThan(20);
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
