// lib/ and the example server compiled for child processes, CommonJS and ES modules: built once for all the test
// files of a run (and kept until a source changes), in .pack-test/ so that they resolve the project's packages.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

const root = join(__dirname, '..', '..');
const cache = join(root, '.pack-test');
const tsc = require.resolve('typescript/bin/tsc');

export interface Compiled {
  /** CommonJS: `<cjs>/lib/index.js`, `<cjs>/lib/client.js`, `<cjs>/example-server/app.js`. */
  readonly cjs: string;
  /** ES modules of lib/: `<esm>/client.js`; absent when compiled without them. */
  readonly esm: string;
  /** A folder of the test file's own, beside the compiled ones: `remove()` deletes it. */
  readonly scratch: string;
  remove(): void;
}

/** The compiler's options of each output, beyond tsconfig.json's: the outputs the package and `npm start` build. */
const outputs = {
  cjs: {
    compilerOptions: { rootDir: root, types: ['node'] },
    include: [join(root, 'lib'), join(root, 'example-server')],
    packageType: 'commonjs',
  },
  esm: {
    // The command line is CommonJS only (it reads require.main).
    compilerOptions: { rootDir: join(root, 'lib'), types: ['node'], module: 'es2022', moduleResolution: 'bundler' },
    include: [join(root, 'lib')],
    exclude: [join(root, 'lib', 'cli.ts')],
    packageType: 'module',
  },
} as const;

/** What the outputs are built from: a change to any of it builds them again. */
function sourcesHash(): string {
  const hash = createHash('sha256');
  hash.update(JSON.stringify(outputs)).update(readFileSync(require.resolve('typescript/package.json')));
  const files = ['tsconfig.json'];
  for (const dir of ['lib', 'example-server']) {
    files.push(...readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' }).map((name) => join(dir, name)));
  }
  for (const file of files.sort()) {
    if (statSync(join(root, file)).isFile()) hash.update(`${file}\0`).update(readFileSync(join(root, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

function build(kind: keyof typeof outputs, outDir: string): void {
  const { compilerOptions, packageType, ...files } = outputs[kind];
  mkdirSync(outDir, { recursive: true });
  const config = join(outDir, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      extends: join(root, 'tsconfig.json'),
      compilerOptions: { ...compilerOptions, noEmit: false, declaration: false, sourceMap: false, outDir },
      ...files,
    }),
  );
  // `npm run typecheck` checks every file: these builds only emit.
  execFileSync(process.execPath, [tsc, '-p', config, '--noCheck'], { cwd: root });
  rmSync(config);
  writeFileSync(join(outDir, 'package.json'), `{ "type": "${packageType}" }\n`);
}

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Whether the process that took a lock is gone (killed mid-build), leaving the lock behind. */
function abandoned(lock: string): boolean {
  try {
    process.kill(Number(readFileSync(lock, 'utf8')), 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'EPERM';
  }
}

/** The folder of an output, built by the first test file that asks while the others (in other workers) wait. */
function built(kind: keyof typeof outputs): string {
  const hash = sourcesHash();
  const dir = join(cache, `${kind}-${hash}`);
  const lock = `${dir}.lock`;
  mkdirSync(cache, { recursive: true });
  for (;;) {
    if (existsSync(dir)) return dir;
    try {
      closeSync(openSync(lock, 'wx'));
      writeFileSync(lock, String(process.pid));
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    if (abandoned(lock)) rmSync(lock, { force: true });
    else sleep(100);
  }
  try {
    if (existsSync(dir)) return dir;
    const temp = `${dir}.tmp`;
    rmSync(temp, { recursive: true, force: true });
    build(kind, temp);
    renameSync(temp, dir);
    // Outputs of sources since changed: none is in use an hour after it was built.
    for (const name of readdirSync(cache)) {
      const old = join(cache, name);
      if (name.startsWith(`${kind}-`) && !name.includes(hash) && Date.now() - statSync(old).mtimeMs > 3_600_000) {
        rmSync(old, { recursive: true, force: true });
      }
    }
    return dir;
  } finally {
    rmSync(lock, { force: true });
  }
}

/** lib/ compiled to CommonJS: `<dir>/index.js`, `<dir>/pages.js`. Shared by the test files: write nothing in it. */
export function compiledLib(): string {
  return join(built('cjs'), 'lib');
}

/**
 * lib/ with the example server in CommonJS, and lib/ in ES modules unless `esm` is false, with a scratch folder of
 * the test file's own. Call it in beforeAll: the first call of a run builds them, in a few seconds.
 */
export function compile(name: string, { esm: withEsm = true } = {}): Compiled {
  const cjs = built('cjs');
  const esm = withEsm ? built('esm') : join(cache, 'no-esm');
  mkdirSync(cache, { recursive: true });
  const scratch = mkdtempSync(join(cache, `${name}-`));
  return { cjs, esm, scratch, remove: () => rmSync(scratch, { recursive: true, force: true }) };
}
