// The optional peer dependencies as the code meets them missing: the command's progress bar gives way to plain lines,
// and the pages name the packages to install (the packed package without them: package.test.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type * as Command from '../lib/verify/command';
import { missing, PAGES_PEERS, peersError } from '../lib/pages/peers.cjs';
import { createApp } from './helpers/app';
import { serverPerTest } from './helpers/serve';
import { useFakeClock } from './helpers/stores';

const start = serverPerTest();
beforeEach(useFakeClock);
afterEach(() => jest.useRealTimers());

it('the command on a terminal without cli-progress writes each wait as a line', async () => {
  let command: typeof Command | undefined;
  jest.isolateModules(() => {
    jest.doMock('../lib/verify/progress-bar.cjs', () => ({ MultiBar: undefined }));
    command = jest.requireActual<typeof Command>('../lib/verify/command');
  });
  const served = await start(createApp({ listing: 'A' }));
  let stderr = '';
  const context: Command.CliContext = {
    stdout: { write: () => true },
    stderr: { write: (text: string) => (stderr += text), isTTY: true },
    sleep: async (ms) => {
      jest.setSystemTime(Date.now() + ms);
    },
  };
  const argv = ['verify', served.url, '--listing', 'servers', '--only', 'GET /v1/servers'];
  expect(await (command as typeof Command).runCli(argv, context)).toBe(0);
  expect(stderr).toBe(
    [
      '[1/1] GET /v1/servers: probing',
      "[1/1] GET /v1/servers: waiting 1 min to send the rest of the limit before the window's end",
      '[1/1] GET /v1/servers: waiting 1 min 1 s for the window to end',
      '[1/1] GET /v1/servers: pass',
      '',
    ].join('\n'),
  );
});

it.each([
  [['helmet'], 'helmet'],
  [['csrf-csrf', 'cookie-parser'], 'csrf-csrf, cookie-parser'],
])('the pages without %p: an error naming every package with its version', (absent, named) => {
  expect(peersError(absent)).toMatchObject({
    code: 'ERR_MISSING_PEER_DEPENDENCY',
    message:
      'listing-limits/pages needs helmet, csrf-csrf, cookie-parser, which your app installs (optional peer ' +
      `dependencies of listing-limits); missing: ${named}. Install them: npm install helmet@^8.3.0 ` +
      'csrf-csrf@^4.0.3 cookie-parser@^1.4.7',
  });
});

it("the pages' peers and their versions are package.json's optional peer dependencies; with all installed, no error", () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as {
    peerDependencies: Record<string, string>;
    peerDependenciesMeta: Record<string, { optional?: boolean }>;
    dependencies: Record<string, string>;
  };
  for (const [name, range] of Object.entries(PAGES_PEERS)) {
    expect([pkg.peerDependencies[name], pkg.peerDependenciesMeta[name], pkg.dependencies[name]]).toEqual([
      range,
      { optional: true },
      undefined,
    ]);
  }
  expect(pkg.peerDependenciesMeta['cli-progress']).toEqual({ optional: true });
  expect(peersError([])).toBeUndefined();
  expect(missing).toBeUndefined();
});
