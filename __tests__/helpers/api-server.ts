// Starts api-server-child.js in a child process and reads what its apps counted: the server's word, not the client's.
import type { EndpointRow, ListingName } from '../../lib';
import type { Compiled } from './compiled';
import { launch, type Launched } from './launch';

export type AppSpec =
  | {
      kind: 'rows';
      rows: readonly EndpointRow[];
      window?: 'fixed' | 'sliding';
      delayMs?: number;
      grants?: Record<string, unknown>;
    }
  | { kind: 'example'; listing: ListingName; window?: 'fixed' | 'sliding'; delayMs?: number }
  | { kind: 'hostile' };

/** Requests by endpoint and outcome (`allowed`, `limited`, `banned`, ...), from `listing_limits_requests_total`. */
export type Outcomes = Record<string, Record<string, number>>;

export interface ApiServer extends Launched {
  /** The base URL of each app, in the order given. */
  readonly urls: readonly string[];
  /** What app `i`'s limiter counted, from its /metrics. */
  outcomes(i: number): Promise<Outcomes>;
  /** Requests app `i` received, by method and path: `{ 'GET /v1/bots/1': 2 }`. */
  requests(i: number): Promise<Record<string, number>>;
  /** The bodies app `i` (of kind rows) was posted, by path. */
  reports(i: number): Promise<Record<string, unknown>>;
}

export async function startApiServer(compiled: Compiled, apps: readonly AppSpec[]): Promise<ApiServer> {
  const launched = await launch(
    'api-server-child.js',
    [compiled.cjs, JSON.stringify({ apps })],
    (line: { urls: string[] }) => line.urls,
  );
  const urls = launched.started;
  const read = async (i: number, path: string) => {
    const res = await fetch(`${urls[i]}${path}`);
    return res.text();
  };
  return {
    ...launched,
    urls,
    async outcomes(i) {
      const outcomes: Outcomes = {};
      const text = await read(i, '/metrics');
      for (const [, endpoint, outcome, value] of text.matchAll(
        /^listing_limits_requests_total\{endpoint="([^"]*)",outcome="(\w+)"\} (\d+)$/gm,
      )) {
        (outcomes[endpoint as string] ??= {})[outcome as string] = Number(value);
      }
      return outcomes;
    },
    requests: async (i) => JSON.parse(await read(i, '/requests')) as Record<string, number>,
    reports: async (i) => JSON.parse(await read(i, '/reports')) as Record<string, unknown>,
  };
}
