// listingClient in real time against APIs built on the rate limiters people run, each in a process of its own:
// 3 × limit calls at once on every endpoint of listing B, and the server counts no refusal, whatever fields it sends
// or omits.
import { type EndpointRow, listings } from '../lib';
import { type ListingClient, listingClient } from '../lib/client';
import type { WorldKind } from './helpers/world-apis';
import { startWorldApi, type WorldProcess } from './helpers/world-process';

/** The contract's rows with windows of at most 2 s, so that three windows of every endpoint take seconds. */
const rows: EndpointRow[] = listings.B.map((row) => ({ ...row, windowMs: Math.min(row.windowMs, 2000) }));

const kinds: WorldKind[] = [
  'rate-limiter-flexible, no headers',
  'express-rate-limit draft-7',
  'express-rate-limit draft-8',
  'express-rate-limit legacy',
  '@fastify/rate-limit',
  '@fastify/rate-limit draft',
];

/** Sends `count` calls on `row` at once (distinct query strings: no cache, no shared request). */
async function burst(api: ListingClient, row: EndpointRow, count: number): Promise<void> {
  await Promise.all(
    Array.from({ length: count }, (_, n) =>
      row.method === 'POST'
        ? api.post(row.path, { id: '1', n }, { server_count: n })
        : api.get(row.path, { id: '1', n }),
    ),
  );
}

const apis: WorldProcess[] = [];
/** Per kind: how each call settled, as `<endpoint> <outcome>`, when one did not resolve. */
let failed: string[][];

beforeAll(async () => {
  apis.push(...(await Promise.all(kinds.map((kind) => startWorldApi({ kind, rows })))));
  // Every kind and every endpoint at the same time: the endpoints are counted apart, and so are the servers.
  failed = await Promise.all(
    apis.map(async ({ url, settled }) => {
      const api = listingClient({ listing: rows, baseUrl: url, token: 'Bot paced' });
      const results = await Promise.allSettled(rows.map((row) => burst(api, row, 3 * row.limit)));
      await api.close();
      await settled();
      return results.flatMap((result, i) =>
        result.status === 'fulfilled' ? [] : [`${rows[i]?.method} ${rows[i]?.path} ${String(result.reason)}`],
      );
    }),
  );
}, 60_000);
afterAll(() => Promise.all(apis.map((api) => api.stop())));

it.each(kinds.map((kind, i) => [kind, i] as const))(
  '%s: the server answered every call, and refused none',
  (_kind, i) => {
    const { answered, stderr } = apis[i] as WorldProcess;
    const counted = rows.map((row) => {
      const shape = new RegExp(`^${row.path.replace(/:\w+/g, '[^/]+')}(\\?|$)`);
      const on = answered.filter((a) => a.method === row.method && shape.test(a.url));
      return [`${row.method} ${row.path}`, on.length, on.filter((a) => a.status === 429).length];
    });
    expect(counted).toEqual(rows.map((row) => [`${row.method} ${row.path}`, 3 * row.limit, 0]));
    expect(answered.every((a) => a.status === 200)).toBe(true);
    expect(failed[i]).toEqual([]);
    expect(stderr()).toBe('');
  },
);
