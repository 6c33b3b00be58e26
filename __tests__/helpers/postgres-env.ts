// Whether the tests can start a PostgreSQL here (initdb and postgres), and what a run without them says.
import { existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { inCI } from './redis-env';

/** The folder of `initdb` and `postgres`: on PATH, else Debian's newest `/usr/lib/postgresql/<major>/bin`. */
function binaries(): string | undefined {
  const dirs = (process.env.PATH ?? '').split(delimiter);
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const majors = readdirSync(debian).filter((name) => /^\d+$/.test(name));
    dirs.push(...majors.sort((a, b) => Number(b) - Number(a)).map((major) => join(debian, major, 'bin')));
  }
  return dirs.find((dir) => existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'postgres')));
}

/** Where `initdb` and `postgres` are, or undefined. */
export const bin = binaries();

/** Why the PostgreSQL tests cannot run, or undefined. */
export const postgresMissing = bin
  ? undefined
  : 'initdb and postgres are neither on PATH nor in /usr/lib/postgresql/<major>/bin';

/** The one line a run prints when they cannot: skipped here, bound to fail under CI. */
export function postgresNotice(): string | undefined {
  if (!postgresMissing) return undefined;
  return inCI
    ? `PostgreSQL tests FAIL: ${postgresMissing}, and CI=true never skips them (apt-get install -y postgresql).`
    : `PostgreSQL tests skipped: ${postgresMissing} (apt-get install postgresql).`;
}
