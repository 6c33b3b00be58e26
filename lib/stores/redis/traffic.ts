// The traffic in Redis: each instance adds its minutes in one script, which answers the hour to those who read it.
import { newEpoch } from '../state.js';
import {
  MINUTE_MS,
  MINUTES,
  newMinute,
  OTHER_CLIENTS,
  type SiteHour,
  STORED_CLIENTS_PER_MINUTE,
  TOP_CLIENTS,
  type TrafficStore,
} from '../traffic.js';
import type { Script } from './scripts.js';

/** This process, as the instances' set names it: every middleware of the process on a prefix is one instance. */
const INSTANCE = newEpoch();
/** A minute's keys outlive the hour they are shown in by a minute. */
const KEPT_MS = (MINUTES + 1) * MINUTE_MS;

/** A count the store holds, or undefined for what is none. */
function storedCount(value: unknown): number | undefined {
  const n = Number(value);
  return typeof value !== 'object' && value !== '' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The traffic of a prefix: keys on the runtime state's hash tag, so that a Cluster keeps them on one node. */
export function redisTraffic(script: Script, prefix: string, intervalMs: number): TrafficStore {
  const keysOf = (at: number) => [`${prefix}:{runtime}:traffic:${at}`, `${prefix}:{runtime}:refused:${at}`];
  const instances = `${prefix}:{runtime}:instances`;
  return {
    intervalMs,
    add: async (minutes, read, skipped) => {
      const ats = read === undefined ? minutes.map((m) => m.at) : Array.from({ length: MINUTES }, (_, i) => read - i);
      const byAt = new Map(minutes.map((m) => [m.at, m]));
      const head = [INSTANCE, 3 * intervalMs, KEPT_MS, STORED_CLIENTS_PER_MINUTE, OTHER_CLIENTS];
      const args = [...head, read === undefined ? 0 : TOP_CLIENTS].map(String);
      for (const at of ats) {
        const minute = byAt.get(at);
        const fields = [...(minute?.endpoints ?? [])].flatMap(([endpoint, [allowed, refused]]) => [
          ...(allowed > 0 ? [`a ${endpoint}`, String(allowed)] : []),
          ...(refused > 0 ? [`r ${endpoint}`, String(refused)] : []),
        ]);
        const clients = [...(minute?.refused ?? [])].flatMap(([key, n]) => [key, String(n)]);
        args.push(String(fields.length / 2), ...fields, String(clients.length / 2), ...clients);
      }
      const answer = (await script([instances, ...ats.flatMap(keysOf)], args)) as unknown[];
      for (const entry of (answer[1] as unknown[] | undefined) ?? []) {
        const [key, problem] = String(entry).split('\n', 2);
        skipped(`traffic ${key}`, String(problem).slice(0, 200));
      }
      if (read === undefined) return undefined;
      return hourOf(answer, ats, keysOf, skipped);
    },
  };
}

/** The hour the traffic script answered; a field that is no count is skipped and told. */
function hourOf(
  answer: unknown[],
  ats: readonly number[],
  keysOf: (at: number) => string[],
  skipped: (entry: string, problem: string) => void,
): SiteHour {
  const minutes = ats.map((at, i) => {
    const minute = newMinute(at);
    const flat = (answer[2 + i] as unknown[] | undefined) ?? [];
    for (let f = 0; f + 1 < flat.length; f += 2) {
      const [field, n] = [String(flat[f]), storedCount(flat[f + 1])];
      const kind = field.slice(0, 2);
      if (n === undefined || (kind !== 'a ' && kind !== 'r ')) {
        skipped(`traffic ${keysOf(at)[0]}`, `holds no count in ${JSON.stringify(field.slice(0, 80))}`);
        continue;
      }
      const endpoint = field.slice(2);
      const counts = minute.endpoints.get(endpoint) ?? [0, 0];
      counts[kind === 'a ' ? 0 : 1] += n;
      minute.endpoints.set(endpoint, counts);
    }
    return minute;
  });
  const best = (answer[2 + ats.length] as unknown[] | undefined) ?? [];
  const refused = new Map<string, number>();
  for (let i = 0; i + 1 < best.length; i += 2) refused.set(String(best[i]), storedCount(best[i + 1]) ?? 0);
  return { instances: storedCount(answer[0]) ?? 0, minutes, refused };
}
