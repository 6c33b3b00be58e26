// Which Redis the tests can use here: REDIS_URL, or redis-server on PATH; and what a run without them says.
import { accessSync, constants } from 'node:fs';
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

/** The one line a run prints when Redis tests cannot run here, or undefined when they all can. */
export function redisNotice(): string | undefined {
  const missing = redisMissing ?? serverMissing;
  if (!missing) return undefined;
  if (inCI) return `Redis tests FAIL: ${missing}, and CI=true never skips them (apt-get install -y redis-server).`;
  const which = redisMissing ? 'Redis tests' : 'Redis outage, cluster and multi-process tests';
  const fix = redisMissing ? 'apt-get install redis-server, or set REDIS_URL' : 'apt-get install redis-server';
  return `${which} skipped: ${missing} (${fix}).`;
}
