// Builds dist/: CommonJS in dist/cjs and ES modules in dist/esm, each with its type declarations.
const { execFileSync } = require('node:child_process');
const { chmodSync, rmSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const tsc = require.resolve('typescript/bin/tsc');
rmSync(join(root, 'dist'), { recursive: true, force: true });
for (const [config, type] of [
  ['tsconfig.build.json', 'commonjs'],
  ['tsconfig.build.esm.json', 'module'],
]) {
  execFileSync(process.execPath, [tsc, '-p', config], { cwd: root, stdio: 'inherit' });
  const dir = type === 'module' ? 'esm' : 'cjs';
  writeFileSync(join(root, 'dist', dir, 'package.json'), `${JSON.stringify({ type })}\n`);
}
// The `listing-limits` command (package.json "bin"): tsc keeps its #! line; the file must be executable too.
chmodSync(join(root, 'dist', 'cjs', 'cli.js'), 0o755);
