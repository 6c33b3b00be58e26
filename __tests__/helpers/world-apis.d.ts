// The types of world-apis.js, which child processes load as it is.
import type { RequestListener } from 'node:http';
import type { EndpointRow } from '../../lib';

/** The kinds of API, by the limiter they run and how it writes its fields. */
export declare const KINDS: readonly WorldKind[];

export type WorldKind =
  | 'express-rate-limit draft-6'
  | 'express-rate-limit draft-7'
  | 'express-rate-limit draft-8'
  | 'express-rate-limit legacy'
  | '@fastify/rate-limit'
  | '@fastify/rate-limit draft'
  | 'rate-limiter-flexible, no headers';

/** One fault of an API that otherwise enforces its table. */
export type Fault =
  | { kind: 'limit'; endpoint: string; limit: number }
  | { kind: 'window'; endpoint: string }
  | { kind: 'unlimited'; endpoint: string }
  | { kind: 'status'; status: number }
  | { kind: 'params' }
  | { kind: 'ip' }
  | { kind: 'post-shares-get' };

export interface WorldSpec {
  readonly kind: WorldKind;
  readonly rows: readonly EndpointRow[];
  readonly fault?: Fault;
}

/** A request listener for an API of `kind` that enforces `rows`, with `fault` if given. */
export declare function worldApi(spec: WorldSpec): Promise<RequestListener>;
