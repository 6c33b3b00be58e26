// The grants made at runtime (`grant()`, a grant request's approval), which win over the `grants` option.
import { Checker, MAX_DURATION_MS, show } from '../shared/check.js';
import type { RequestPut, StateChangeResult } from '../stores/state.js';
import type { Parts } from './calls.js';
import { byOption, checkName, checkText, type GrantRecord } from './kinds.js';
import type { ActiveGrant } from './types.js';
import { activeGrant, eventOf, grantEvent, listPage } from './views.js';

/** A grant; with a grant request's decision, in one change: only while the request holds `request.expected`. */
export function grantClient(
  parts: Parts,
  check: Checker,
  client: unknown,
  grant: unknown,
  options: unknown,
  known = '',
  request?: RequestPut,
): Promise<StateChangeResult> {
  const { key, tokenEnd: end } = parts.keyOf(check, client);
  const checked = parts.checkGrant(check, grant, 'grant');
  const o = check.options(options, 'options', '{ until, note, by }');
  check.unknownKeys(o, ['until', 'note', 'by'], (k) => `options.${k}`);
  const since = Date.now();
  let until: number | null = null;
  if (o.until !== undefined) {
    const at: unknown = o.until instanceof Date ? o.until.getTime() : o.until;
    if (typeof at !== 'number' || !Number.isSafeInteger(at) || at <= since || at - since > MAX_DURATION_MS) {
      check.invalid(
        'options.until',
        `must be a Date (or epoch milliseconds) in the future, at most one year ahead; got ${show(o.until)}.`,
      );
    }
    until = at as number;
  }
  const note = o.note === undefined ? null : checkText(check, o.note, 'options.note');
  const operator = checkName(check, o.by, 'options.by');
  parts.calls.writable(check);
  const tokenEnd = end || known || undefined;
  const record: GrantRecord = { key, grant: checked, since, until, note, tokenEnd, operator };
  const changes = [{ field: `grant:${key}`, record, event: grantEvent(record) }];
  return parts.calls.bounded(check.source, (bound) => parts.calls.change(changes, bound, undefined, request));
}

export async function grantsPage(
  parts: Parts,
  offset: number,
  limit: number,
  source = 'limitsAdmin',
): Promise<{ total: number; offset: number; grants: ActiveGrant[] }> {
  await parts.calls.synced(source);
  const { total, from, rows } = listPage(parts.cache.grantsInForce(), offset, limit, activeGrant);
  return { total, offset: from, grants: rows };
}

export async function grantInForce(parts: Parts, key: string): Promise<ActiveGrant | undefined> {
  await parts.calls.synced('limitsAdmin');
  const grant = parts.cache.grants.get(key);
  return grant && (grant.until === null || grant.until > Date.now()) ? activeGrant(grant) : undefined;
}

export function grantMethods(parts: Parts) {
  const { calls } = parts;
  return {
    grant: (client: unknown, grant: unknown, options?: unknown): Promise<boolean> =>
      grantClient(parts, new Checker('limits.grant'), client, grant, options).then(() => true),
    revoke(client: unknown, options?: unknown): Promise<boolean> {
      const check = new Checker('limits.revoke');
      const { key, kind } = parts.keyOf(check, client);
      const operator = byOption(check, options);
      calls.writable(check);
      return calls.bounded('limits.revoke', async (bound) => {
        const event = eventOf('revoke', key, kind, Date.now(), { operator });
        const result = await calls.change([{ field: `grant:${key}`, record: null, event }], bound);
        return result.records[0]?.changed === true;
      });
    },
    grants: async (): Promise<ActiveGrant[]> => (await grantsPage(parts, 0, Infinity, 'limits.grants')).grants,
  };
}
