// What each product of the package weighs once installed: the packed package installed with npm, from the registry,
// into a fresh app under the system's temporary folder, with what each product needs beside it. Prints, for each,
// the packages installed and their size on disk (`du`), as docs/install.md states them.
// `node scripts/install-weights.js` (it runs `npm pack`, so it builds dist/ first); `--json` prints JSON.
const { execFileSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const root = join(__dirname, '..');

/** Each product: what an app installs for it, beside the package. */
const products = [
  { product: 'the client, the verifier', with: [] },
  { product: 'the middleware', with: ['express@5'] },
  { product: 'the middleware with the Redis store', with: ['express@5', 'ioredis'] },
  { product: 'the middleware with the pages', with: ['express@5', 'helmet', 'csrf-csrf', 'cookie-parser'] },
];

/** Packs the package into `dir`; answers the tarball's path. */
function pack(dir) {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: root, encoding: 'utf8' });
  const [{ filename }] = JSON.parse(out.slice(out.indexOf('[')));
  return join(dir, filename);
}

/**
 * Installs `specs` into a new app, as npm installs them from the registry (from its cache when `offline` allows),
 * and answers the app's folder, the packages installed (`name@version`, by their path) and their bytes on disk.
 */
function install(specs, { offline = false } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'listing-limits-app-'));
  writeFileSync(join(dir, 'package.json'), '{ "name": "app", "private": true }\n');
  const flags = ['--no-audit', '--no-fund', '--ignore-scripts', '--loglevel=error'];
  if (offline) flags.push('--prefer-offline');
  execFileSync('npm', ['install', ...flags, ...specs], { cwd: dir, encoding: 'utf8' });
  const lock = JSON.parse(readFileSync(join(dir, 'node_modules', '.package-lock.json'), 'utf8'));
  const packages = Object.entries(lock.packages).map(
    ([path, { version }]) => `${path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)}@${version}`,
  );
  const bytes = Number(
    execFileSync('du', ['-s', '-B1', join(dir, 'node_modules')], { encoding: 'utf8' }).split('\t')[0],
  );
  return { dir, packages, bytes };
}

function main() {
  const scratch = mkdtempSync(join(tmpdir(), 'listing-limits-pack-'));
  try {
    const tarball = pack(scratch);
    const rows = products.map(({ product, with: beside }) => {
      const { dir, packages, bytes } = install([tarball, ...beside]);
      rmSync(dir, { recursive: true, force: true });
      return {
        product,
        install: ['listing-limits', ...beside.map((spec) => spec.replace(/@\d+$/, ''))].join(' '),
        packages: packages.length,
        mb: Math.round(bytes / 1e5) / 10,
        express: packages.some((p) => p.startsWith('express@')),
      };
    });
    if (process.argv.includes('--json')) console.log(JSON.stringify(rows, null, 2));
    else
      for (const r of rows) console.log(`${r.product}: npm install ${r.install}: ${r.packages} packages, ${r.mb} MB`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

module.exports = { install, pack };

if (require.main === module) main();
