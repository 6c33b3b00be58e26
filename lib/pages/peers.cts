// The pages' optional peer dependencies, loaded once and named when missing; CommonJS in both builds, to load them
// synchronously. It throws nothing (an ES module importing a CommonJS module that throws crashes Node 20).
import type { doubleCsrf as DoubleCsrf } from 'csrf-csrf';
import type CookieParser from 'cookie-parser';
import type Helmet from 'helmet';

/** As package.json's `peerDependencies` has them. */
export const PAGES_PEERS: Readonly<Record<string, string>> = Object.freeze({
  helmet: '^8.3.0',
  'csrf-csrf': '^4.0.3',
  'cookie-parser': '^1.4.7',
});

function installed(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

export function peersError(absent: readonly string[]): (Error & { code: string }) | undefined {
  if (absent.length === 0) return undefined;
  const all = Object.keys(PAGES_PEERS);
  const error = new Error(
    `listing-limits/pages needs ${all.join(', ')}, which your app installs (optional peer dependencies of ` +
      `listing-limits); missing: ${absent.join(', ')}. Install them: npm install ` +
      all.map((name) => `${name}@${PAGES_PEERS[name]}`).join(' '),
  );
  return Object.assign(error, { code: 'ERR_MISSING_PEER_DEPENDENCY' });
}

export const missing = peersError(Object.keys(PAGES_PEERS).filter((name) => !installed(name)));

/** Undefined when one is missing, never used: importing the pages has thrown. */
function load<M, T>(name: string, pick: (exports: M) => T): T {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (missing ? undefined : pick(require(name) as M)) as T;
}

export const helmet: typeof Helmet = load('helmet', (m: { default: typeof Helmet }) => m.default);
export const doubleCsrf: typeof DoubleCsrf = load('csrf-csrf', (m: { doubleCsrf: typeof DoubleCsrf }) => m.doubleCsrf);
export const cookieParser: typeof CookieParser = load('cookie-parser', (m: typeof CookieParser) => m);
