// Whether this process is one of several that serve the app: a node:cluster worker, or one of PM2's instances.
import cluster from 'node:cluster';
import type { Warn } from '../../shared/hooks.js';
import { once } from '../../shared/once.js';

/** PM2's own process, which answers no cluster store: PM2 sets `pm_id`, `exec_mode` and `instances` in each. */
export function underPm2(): boolean {
  return process.env.pm_id !== undefined && process.env.exec_mode !== undefined;
}

/** What this process is, when it is one of several: undefined when it serves the app alone. */
function oneOfSeveral(): string | undefined {
  const { pm_id: id, exec_mode: mode, instances } = process.env;
  if (underPm2() && instances !== '1' && (mode === 'cluster_mode' || Number(instances) > 1)) {
    return `PM2 instance ${id} (${mode}, instances: ${instances})`;
  }
  return cluster.isWorker ? `node:cluster worker ${cluster.worker?.id}` : undefined;
}

/** Tells once per process, at a memory store's start in one of several processes, that each counts alone. */
export const warnPerProcess = once((warn: Warn) => {
  const where = oneOfSeveral();
  if (where === undefined) return;
  warn(
    'LISTING_LIMITS_PER_PROCESS',
    `listing-limits: this process is ${where}, and the memory store counts in this process alone: N processes let ` +
      'a client through up to N times the limits. Share the counts with clusterStore() (clusterPrimary() in the ' +
      'primary) or redisStore(client); memoryStore({ perProcess: true }) counts per process without this warning.',
  );
});
