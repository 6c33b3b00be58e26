// Which Redis the tests can use here: REDIS_URL, or redis-server on PATH; and what a run without them says.
import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, join } from 'node:path';

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Whether this run is CI's, where a missing Redis must fail the tests instead of skipping them. */
export const inCI = !!process.env.CI && process.env.CI !== 'false';

/** The Redis the tests that need any Redis use, when given: otherwise they start redis-server here. */
export const redisUrl = process.env.REDIS_URL || undefined;

/** Why the tests that start their own redis-server (outage, cluster, processes) cannot run, or undefined. */
export const serverMissing = onPath('redis-server') ? undefined : 'redis-server is not on PATH';

/** Why the tests that need any Redis cannot run, or undefined. */
export const redisMissing =
  redisUrl || !serverMissing ? undefined : 'redis-server is not on PATH and REDIS_URL is not set';

const load = createRequire(__filename);

/** The client packages the Redis tests drive, by the kind of client each makes. */
export const clientPackages = {
  ioredis: 'ioredis',
  'node-redis': 'redis',
  iovalkey: 'iovalkey',
  glide: '@valkey/valkey-glide',
} as const;
export type ClientPackage = keyof typeof clientPackages;

/**
 * Why a client package cannot be loaded here (not installed; for GLIDE, no native binary for this platform), or
 * undefined. Loading it is the test: GLIDE loads its binary when required.
 */
function clientMissing(kind: ClientPackage): string | undefined {
  try {
    load(clientPackages[kind]);
    return undefined;
  } catch (error) {
    const first = String((error as Error).message).split('\n')[0];
    return `${clientPackages[kind]} cannot be loaded (${first}; npm ci installs it)`;
  }
}

/**
 * The rows of a table of clients whose package loads here, so that the others' tests are skipped (and said so in one
 * line); under CI every row, so that a missing client fails its tests.
 */
export function withClients<T>(rows: readonly T[], kindOf: (row: T) => ClientPackage): T[] {
  return inCI ? [...rows] : rows.filter((row) => !clientMissing(kindOf(row)));
}

/** The one line a run prints when Redis tests cannot run here, or undefined when they all can. */
export function redisNotice(): string | undefined {
  const clients = (Object.keys(clientPackages) as ClientPackage[]).flatMap((kind) => clientMissing(kind) ?? []);
  const lines = [serverNotice()];
  if (clients.length > 0) {
    lines.push(
      inCI
        ? `Redis tests of a client FAIL: ${clients.join('; ')}; CI=true never skips them.`
        : `Redis tests of a client skipped: ${clients.join('; ')}.`,
    );
  }
  return lines.filter(Boolean).join('\n') || undefined;
}

function serverNotice(): string | undefined {
  const missing = redisMissing ?? serverMissing;
  if (!missing) return undefined;
  if (inCI) return `Redis tests FAIL: ${missing}, and CI=true never skips them (apt-get install -y redis-server).`;
  const which = redisMissing ? 'Redis tests' : 'Redis outage, cluster and multi-process tests';
  const fix = redisMissing ? 'apt-get install redis-server, or set REDIS_URL' : 'apt-get install redis-server';
  return `${which} skipped: ${missing} (${fix}).`;
}
