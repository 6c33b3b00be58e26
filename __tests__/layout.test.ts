// The layout of lib/: its folders by product, and which may import which, read from the import statements.
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import ts from 'typescript';

const lib = join(__dirname, '..', 'lib');

/** The folders of lib/ and the folders each may import besides its own. The files at the top are entry points. */
const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  shared: [],
  contract: ['shared'],
  stores: ['contract', 'shared'],
  records: ['stores', 'contract', 'shared'],
  limiter: ['records', 'stores', 'contract', 'shared'],
  client: ['contract', 'shared'],
  verify: ['contract', 'shared'],
  pages: ['records', 'contract', 'shared'],
};
/**
 * The files of a folder that another may import without importing the folder: its public face. The pages are built on
 * the records and on the limiter as users know it: `listingLimits()` and its public types, a store and its option.
 */
const FACES: Readonly<Record<string, readonly string[]>> = {
  pages: ['limiter/middleware.ts', 'limiter/types.ts', 'stores/store.ts', 'stores/option.ts'],
};
/** The entry points: each only re-exports (but the command, which runs the command line), and none is imported. */
const ENTRIES = ['cli.ts', 'client.ts', 'index.ts', 'pages.ts', 'verify.ts'];

const files = readdirSync(lib, { recursive: true, encoding: 'utf8' })
  .filter((name) => /\.c?ts$/.test(name))
  .map((name) => name.split('\\').join('/'))
  .sort();

/** Each file's imports of lib/ files (type-only ones too), as paths relative to lib/. */
const imports = new Map(
  files.map((file) => {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(lib, file), 'utf8'), true, true);
    const targets = importedFiles
      .map(({ fileName }) => fileName)
      .filter((spec) => spec.startsWith('.'))
      .map((spec) => posix.normalize(posix.join(posix.dirname(file), spec)).replace(/\.(c?)js$/, '.$1ts'));
    return [file, targets];
  }),
);
const folderOf = (file: string) => (file.includes('/') ? file.slice(0, file.indexOf('/')) : undefined);

it('lib/ holds the entry points and the folders by product, nothing else', () => {
  const top = readdirSync(lib).sort();
  expect(top).toEqual([...ENTRIES, ...Object.keys(MAY_IMPORT)].sort());
});

it('every import of lib/ names a file that is there', () => {
  const missing = [...imports].flatMap(([file, targets]) =>
    targets.filter((target) => !files.includes(target)).map((target) => `${file} → ${target}`),
  );
  expect(missing).toEqual([]);
});

describe.each(Object.entries(MAY_IMPORT))('lib/%s/', (folder, allowed) => {
  const own = files.filter((file) => folderOf(file) === folder);

  it('has files', () => expect(own.length).toBeGreaterThan(0));

  const faces = FACES[folder] ?? [];
  const also = [...allowed, ...faces];
  it(`imports from lib/ only its own folder${also.length ? ` and ${also.join(', ')}` : ''}`, () => {
    const wrong = own.flatMap((file) =>
      (imports.get(file) ?? [])
        .filter((target) => {
          const to = folderOf(target);
          return (
            to === undefined || (to !== folder && !allowed.includes(to) && !(FACES[folder] ?? []).includes(target))
          );
        })
        .map((target) => `${file} → ${target}`),
    );
    expect(wrong).toEqual([]);
  });
});

it.each(ENTRIES.filter((entry) => entry !== 'cli.ts'))('lib/%s only re-exports', (entry) => {
  const statements = ts.createSourceFile(
    entry,
    readFileSync(join(lib, entry), 'utf8'),
    ts.ScriptTarget.Latest,
  ).statements;
  expect(statements.filter((statement) => !ts.isExportDeclaration(statement)).map((s) => s.getText())).toEqual([]);
});

it('has no import cycle', () => {
  const cycles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    path.push(file);
    for (const target of imports.get(file) ?? []) {
      if (state.get(target) === 'open') cycles.push([...path.slice(path.indexOf(target)), target].join(' → '));
      else if (!state.has(target)) visit(target);
    }
    path.pop();
    state.set(file, 'done');
  };
  for (const file of files) if (!state.has(file)) visit(file);
  expect(cycles).toEqual([]);
});

it('the example server imports only the entry points of lib/, so that any of its files can be copied into an app', () => {
  const dir = join(__dirname, '..', 'example-server');
  const specs = readdirSync(dir)
    .filter((name) => name.endsWith('.ts'))
    .flatMap((name) => ts.preProcessFile(readFileSync(join(dir, name), 'utf8'), true, true).importedFiles)
    .map(({ fileName }) => fileName)
    .filter((spec) => spec.startsWith('../'));
  expect(specs.length).toBeGreaterThan(0);
  expect(specs.filter((spec) => !ENTRIES.includes(spec.replace(/^\.\.\/lib\//, '').replace(/\.js$/, '.ts')))).toEqual(
    [],
  );
});

it('the test reads the imports it should: lib/index.ts imports the middleware', () => {
  expect(imports.get('index.ts')).toContain('limiter/middleware.ts');
  expect(imports.get('verify.ts')).toEqual(['verify/run.ts', 'verify/types.ts']);
});

/** The most lines a function of lib/ may span: a longer one is a product in a closure, made of named parts instead. */
const MAX_FUNCTION_LINES = 100;

it.each(files)(`no function of lib/%s spans more than ${MAX_FUNCTION_LINES} lines`, (file) => {
  const source = ts.createSourceFile(file, readFileSync(join(lib, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const long: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const span = source.getLineAndCharacterOfPosition(node.getEnd()).line - first + 1;
      const name = node.name?.getText(source) ?? '(anonymous)';
      if (span > MAX_FUNCTION_LINES) long.push(`${name} at line ${first + 1}: ${span} lines`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  expect(long).toEqual([]);
});
