// The build of dist/ (`npm run build`): one CommonJS bundle per entry point with its types, and ES module wrappers.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { defineConfig } from 'tsdown';

/**
 * Writes `<entry>.mjs` and `<entry>.d.mts` beside each entry's bundle: an ES module that re-exports the CommonJS one,
 * so that import and require() share one copy of the package's state (its error classes, the pages' middleware).
 * @type {import('tsdown').Rolldown.Plugin}
 */
const esmWrappers = {
  name: 'esm-wrappers',
  generateBundle(_options, bundle) {
    for (const chunk of Object.values(bundle)) {
      if (chunk.type !== 'chunk' || !chunk.isEntry || chunk.name === 'cli') continue;
      const names = chunk.exports.join(', ');
      const source = `import cjs from './${chunk.fileName}';\nexport const { ${names} } = cjs;\n`;
      this.emitFile({ type: 'asset', fileName: `${chunk.name}.mjs`, source });
      this.emitFile({
        type: 'asset',
        fileName: `${chunk.name}.d.mts`,
        source: `export * from './${chunk.fileName}';\n`,
      });
    }
  },
};

export default defineConfig({
  entry: ['lib/index.ts', 'lib/pages.ts', 'lib/client.ts', 'lib/verify.ts', 'lib/cli.ts'],
  format: 'cjs',
  platform: 'node',
  target: 'node22',
  dts: { compilerOptions: { stripInternal: true, types: ['node'] } },
  hash: false,
  // The declarations take the type checker's time, which the bundler would otherwise warn of at each build.
  checks: { pluginTimings: false },
  outputOptions: {
    comments: false,
    // The bundler's helpers in a chunk of their own: else they land in the middleware's, which every chunk then loads.
    codeSplitting: { groups: [{ name: 'runtime', test: /rolldown[\\/]runtime/ }] },
  },
  plugins: [esmWrappers],
  // The command exports nothing: its empty declarations would only weigh on the tarball.
  hooks: { 'build:done': ({ options }) => rmSync(join(options.outDir, 'cli.d.cts')) },
});
