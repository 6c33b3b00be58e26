// Every TypeScript sample of the README compiles under --strict, with node16 and with bundler resolution, against the package's types.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const root = join(__dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

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

interface Sample {
  /** The line of the opening fence in README.md. */
  readonly line: number;
  readonly code: string;
}

function samples(): Sample[] {
  const found: Sample[] = [];
  const block = /(?:<!-- ts-prelude:([^>]*)-->\n)?```ts\n([\s\S]*?)```/g;
  for (const match of readme.matchAll(block)) {
    const names = (match[1] ?? '').trim().split(/\s+/).filter(Boolean);
    for (const name of names) {
      if (!preludes[name])
        throw new Error(`README.md: ts-prelude names ${JSON.stringify(name)}, which the test does not declare`);
    }
    const fence = (match.index ?? 0) + (match[1] === undefined ? 0 : match[0].indexOf('```'));
    const line = readme.slice(0, fence).split('\n').length;
    // The prelude goes on the fence's own line, so that the sample's lines keep their numbers.
    found.push({ line, code: `${names.map((name) => preludes[name]).join(' ')}\n${match[2] ?? ''}` });
  }
  return found;
}

const configurations = {
  'node16 (ES module)': {
    module: ts.ModuleKind.Node16,
    moduleResolution: ts.ModuleResolutionKind.Node16,
    extension: '.mts',
  },
  bundler: { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler, extension: '.ts' },
} as const;

/** The compiler's messages about the samples, as `README.md:<line>: TS<code> <message>`. */
function check(
  all: readonly Sample[],
  { module, moduleResolution, extension }: (typeof configurations)[keyof typeof configurations],
) {
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module,
    moduleResolution,
    // Each sample is a file of its own, as a user would paste it.
    moduleDetection: ts.ModuleDetectionKind.Force,
    // The verify sample is a test: it uses Jest's globals.
    types: ['node', 'jest'],
    // The package's own sources stand for the published types, so that a fresh clone needs no build.
    paths: {
      'listing-limits': [join(root, 'lib', 'index.ts')],
      'listing-limits/verify': [join(root, 'lib', 'verify.ts')],
      'listing-limits/client': [join(root, 'lib', 'client.ts')],
      'listing-limits/pages': [join(root, 'lib', 'pages.ts')],
    },
  };
  // Beside README.md, so that `./example-server/app.js` and node_modules resolve as from the repository's root.
  const files = new Map(all.map((sample) => [join(root, `README.md-line-${sample.line}${extension}`), sample]));
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name);
  host.readFile = (name) => files.get(name)?.code ?? readFile.call(host, name);
  host.getSourceFile = (name, version, ...rest) => {
    const sample = files.get(name);
    return sample
      ? ts.createSourceFile(name, sample.code, version, true)
      : getSourceFile.call(host, name, version, ...rest);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const messages = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map(
    (d) => `TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
  );
  for (const [name, sample] of files) {
    const file = program.getSourceFile(name);
    for (const d of [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]) {
      const line = d.start === undefined || !file ? 0 : file.getLineAndCharacterOfPosition(d.start).line;
      messages.push(
        `README.md:${sample.line + line}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, ' ')}`,
      );
    }
  }
  return messages;
}

it('finds the samples: every ```ts block of the README', () => {
  const count = readme.split('\n').filter((line) => line === '```ts').length;
  expect(samples()).toHaveLength(count);
  expect(count).toBeGreaterThan(5);
});

it.each(Object.keys(configurations) as (keyof typeof configurations)[])(
  'every sample compiles under strict with %s resolution',
  (name) => {
    expect(check(samples(), configurations[name])).toEqual([]);
  },
  60_000,
);
