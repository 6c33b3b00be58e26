// Runs a command with another Node.js major first on PATH: `node scripts/node.js 24 jest`. The versions CI tests are
// pinned in node-versions.json, by major (`engines` in package.json names the same majors). Each comes from the npm
// registry as the `node-linux-<arch>` package of its exact version (the Node.js binary alone), installed once into
// ~/.cache/listing-limits/node/<version>: outside node_modules, which `npm ci` empties (XDG_CACHE_HOME moves it).
// Linux only, as CI is.
const { execFileSync, spawn } = require('node:child_process');
const { existsSync } = require('node:fs');
const { constants, homedir } = require('node:os');
const { delimiter, join } = require('node:path');

const VERSIONS = require('./node-versions.json');

const INSTALL = ['install', '--no-save', '--no-package-lock', '--ignore-scripts', '--no-audit', '--no-fund'];

/** The folder that holds `node` of this exact version, installed from the registry when it is not there yet. */
function binOf(version) {
  const pkg = `node-linux-${process.arch}`;
  const prefix = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'listing-limits', 'node', version);
  const bin = join(prefix, 'node_modules', pkg, 'bin');
  if (!existsSync(join(bin, 'node'))) {
    console.error(`Installing Node.js ${version} (${pkg}@${version} from the npm registry) into ${prefix}`);
    execFileSync('npm', [...INSTALL, '--prefix', prefix, `${pkg}@${version}`], { stdio: ['ignore', 2, 2] });
  }
  return bin;
}

function main() {
  const [major, command, ...args] = process.argv.slice(2);
  const version = VERSIONS[major];
  if (!version || !command) {
    console.error(`usage: node scripts/node.js <${Object.keys(VERSIONS).join('|')}> <command> [args...]`);
    return process.exit(2);
  }
  if (process.platform !== 'linux') {
    console.error(
      `scripts/node.js installs Node.js from the registry's node-linux-* packages: not on ${process.platform}`,
    );
    return process.exit(2);
  }
  const env = { ...process.env, PATH: `${binOf(version)}${delimiter}${process.env.PATH ?? ''}` };
  const child = spawn(command, args, { env, stdio: 'inherit' });
  child.on('error', (err) => {
    console.error(`${command}: ${err.message}`);
    process.exit(127);
  });
  // Signals reach the child from the terminal's process group; its exit code (or 128 + its signal) is ours.
  child.on('exit', (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
}

main();
