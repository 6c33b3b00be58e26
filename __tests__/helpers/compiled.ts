// lib/ and the example server compiled for child processes: CommonJS and ES modules, in a scratch folder of the project.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const tsc = require.resolve('typescript/bin/tsc');

export interface Compiled {
  /** CommonJS: `<cjs>/lib/index.js`, `<cjs>/lib/client.js`, `<cjs>/example-server/app.js`. */
  readonly cjs: string;
  /** ES modules of lib/: `<esm>/client.js`; absent when compiled without them. */
  readonly esm: string;
  /** A folder for the test's own files, beside the compiled ones. */
  readonly scratch: string;
  remove(): void;
}

/**
 * Compiles lib/ with the example server to CommonJS, and lib/ to ES modules unless `esm` is false, inside the
 * project so that they resolve the project's packages. A few seconds: call it once per test file, in beforeAll.
 */
export function compile(name: string, { esm: withEsm = true } = {}): Compiled {
  mkdirSync(join(root, '.pack-test'), { recursive: true });
  const dir = mkdtempSync(join(root, '.pack-test', `${name}-`));
  const cjs = join(dir, 'cjs');
  const esm = join(dir, 'esm');
  const scratch = join(dir, 'scratch');
  const build = (config: string, outDir: string, ...options: string[]) =>
    execFileSync(process.execPath, [tsc, '-p', config, '--outDir', outDir, '--declaration', 'false', ...options], {
      cwd: root,
    });
  // The example server's build holds lib/ whole beside it (example-server/tsconfig.json includes it).
  build('example-server/tsconfig.json', cjs);
  writeFileSync(join(cjs, 'package.json'), '{ "type": "commonjs" }\n');
  if (withEsm) {
    build('tsconfig.build.json', esm, '--module', 'es2022', '--moduleResolution', 'bundler');
    writeFileSync(join(esm, 'package.json'), '{ "type": "module" }\n');
  }
  mkdirSync(scratch);
  return { cjs, esm, scratch, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
