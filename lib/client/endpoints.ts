// The table as the client calls it: each endpoint's path template and pacer, and the URL and body of a call.
import { isPlainObject, show, suggestion } from '../shared/check.js';
import { ListingClientError } from './errors.js';
import { endpointsOf, type TableEndpoint } from '../contract/table.js';
import { Pacer } from './pacing.js';
import type { ClientSettings } from './options.js';

export interface Endpoint extends TableEndpoint {
  readonly cacheMs: number;
  readonly pacer: Pacer;
}

export type Endpoints = ReadonlyMap<string, Endpoint>;

export function compileEndpoints(settings: ClientSettings): Endpoints {
  const { rows, cacheMs, maxWaitMs, onWait } = settings;
  return new Map(
    endpointsOf(rows).map((endpoint) => [
      endpoint.name,
      {
        ...endpoint,
        cacheMs: cacheMs.get(endpoint.path) ?? 0,
        pacer: new Pacer(endpoint.name, endpoint.limits, maxWaitMs, onWait),
      },
    ]),
  );
}

/** The endpoint of a method and path shape; ERR_UNKNOWN_ENDPOINT, with the nearest one, when the table has none. */
export function endpointOf(endpoints: Endpoints, method: string, shape: unknown): Endpoint {
  const endpoint = endpoints.get(`${method} ${String(shape)}`);
  if (endpoint) return endpoint;
  const near = suggestion(`${method} ${String(shape)}`, [...endpoints.keys()]);
  throw new ListingClientError(
    'ERR_UNKNOWN_ENDPOINT',
    `${method} ${show(shape)}`,
    `is not an endpoint of the table.${near ? ` Did you mean \`${near}\`?` : ''}`,
  );
}

/** Path parameters go into the path, the others into the query string. */
export function urlOf(baseUrl: string, endpoint: Endpoint, params: unknown): string {
  if (params !== undefined && !isPlainObject(params)) {
    throw new ListingClientError('ERR_INVALID_PARAMS', endpoint.name, `params must be an object; got ${show(params)}.`);
  }
  const path: Record<string, string> = {};
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params ?? {})) {
    if (typeof value !== 'string' && typeof value !== 'number') {
      throw new ListingClientError('ERR_INVALID_PARAMS', endpoint.name, `params.${key} must be a string or a number.`);
    }
    if (endpoint.keys.includes(key)) path[key] = String(value);
    else query.append(key, String(value));
  }
  const missing = endpoint.keys.find((key) => !(key in path) || path[key] === '');
  if (missing) throw new ListingClientError('ERR_INVALID_PARAMS', endpoint.name, `params.${missing} is required.`);
  const search = query.toString() === '' ? '' : `?${query}`;
  return `${baseUrl}${endpoint.toPath(path)}${search}`;
}

export function jsonOf(endpoint: Endpoint, body: unknown): string | undefined {
  try {
    return JSON.stringify(body);
  } catch (error) {
    throw new ListingClientError('ERR_INVALID_PARAMS', endpoint.name, `body cannot be sent as JSON: ${error}`);
  }
}
