// One meaning per name: every top-level name of lib/ is declared in one file, and a module exports only what it
// declares (the entry points alone hand names on, and declare none).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

const lib = join(__dirname, '..', 'lib');
const files = readdirSync(lib, { recursive: true, encoding: 'utf8' })
  .filter((name) => /\.c?ts$/.test(name))
  .map((name) => name.split('\\').join('/'))
  .sort();
const sources = new Map(
  files.map((file) => [
    file,
    ts.createSourceFile(file, readFileSync(join(lib, file), 'utf8'), ts.ScriptTarget.Latest, true),
  ]),
);

/** The names a statement declares at the top of its module: a function, class, interface, type, enum or variable. */
function declared(statement: ts.Statement): string[] {
  if (ts.isVariableStatement(statement)) {
    const names = (name: ts.BindingName): string[] =>
      ts.isIdentifier(name)
        ? [name.text]
        : name.elements.flatMap((e) => (ts.isOmittedExpression(e) ? [] : names(e.name)));
    return statement.declarationList.declarations.flatMap((d) => names(d.name));
  }
  if (
    ts.isFunctionDeclaration(statement) ||
    ts.isClassDeclaration(statement) ||
    ts.isInterfaceDeclaration(statement) ||
    ts.isTypeAliasDeclaration(statement) ||
    ts.isEnumDeclaration(statement)
  )
    return statement.name ? [statement.name.text] : [];
  return [];
}

/** Name → the files that declare it. */
const declarations = new Map<string, string[]>();
for (const [file, source] of sources) {
  for (const name of source.statements.flatMap(declared))
    declarations.set(name, [...(declarations.get(name) ?? []), file]);
}

it('reads the declarations it should', () => {
  expect(declarations.get('listingLimits')).toEqual(['limiter/middleware.ts']);
  expect(declarations.get('Counter')).toEqual(['stores/counter.ts']);
  expect(declarations.size).toBeGreaterThan(500);
});

it('declares each top-level name of lib/ in one file: no name with two meanings', () => {
  const twice = [...declarations]
    .filter(([, where]) => where.length > 1)
    .map(([name, where]) => `${name}: ${where.join(', ')}`);
  expect(twice).toEqual([]);
});

it.each(files.filter((file) => file.includes('/')))('lib/%s exports only what it declares: no relay', (file) => {
  const relays = (sources.get(file) as ts.SourceFile).statements.filter(ts.isExportDeclaration).map((s) => s.getText());
  expect(relays).toEqual([]);
});
