// Who a request is counted for, with `authenticate` deciding whether a token may have a counter of its own.
import type { Request } from 'express';
import { LRUCache } from 'lru-cache';
import { ipKey, remembered, tokenKey } from './keys.js';

/** How a client was identified. */
export type ClientKind = 'token' | 'ip' | 'custom';

/** The client of a request: its storage key, how it was found, and the key of its IP address. */
export interface Client {
  /** Storage key: `t:<sha256 of the token>`, `ip:<address>`, or what the `key` option returned. */
  readonly key: string;
  readonly kind: ClientKind;
  /** `ip:<address>`: the key of the client's address, whatever `key` is. */
  readonly ip: string;
  /** The Authorization value, when there was one. */
  readonly token: string | undefined;
}

export type Authenticate = (token: string, req: Request) => boolean | Promise<boolean>;

export interface IdentifyConfig {
  readonly key: ((req: Request) => string | Promise<string>) | undefined;
  readonly authenticate: Authenticate | undefined;
  readonly cacheMs: number;
  readonly ipv6Subnet: number | false;
}

/** Thrown to the middleware when `invalidToken: 'reject'` refuses a token that `authenticate` did not accept. */
export const REJECTED = Symbol('token rejected');

/**
 * Compiles the identification of clients. Returns the client, or REJECTED when `authenticate` refused the
 * token and `reject` is set; without `authenticate`, every token is taken as given.
 */
export function compileIdentify(
  config: IdentifyConfig,
  reject: boolean,
): (req: Request) => Client | typeof REJECTED | Promise<Client | typeof REJECTED> {
  const { key, authenticate, ipv6Subnet } = config;
  const hash = remembered(tokenKey);
  const ipOf = remembered((ip) => ipKey(ip, ipv6Subnet));
  const clientIp = (req: Request) => (req.ip ? ipOf(req.ip) : ipKey(undefined, ipv6Subnet));
  if (key) {
    return async (req) => {
      const value = await key(req);
      if (typeof value !== 'string' || value === '') {
        throw new TypeError(`listingLimits: options.key returned ${JSON.stringify(value)}; it must return a non-empty string.`);
      }
      return { key: value, kind: 'custom', ip: clientIp(req), token: req.headers.authorization || undefined };
    };
  }
  if (!authenticate) {
    return (req) => {
      const token = req.headers.authorization || undefined;
      const ip = clientIp(req);
      return token ? { key: hash(token), kind: 'token', ip, token } : { key: ip, kind: 'ip', ip, token };
    };
  }
  // Verdicts are kept briefly, keyed by the token's hash, so that a flood of one token costs one lookup.
  const verdicts = new LRUCache<string, boolean>({ max: 10_000, ttl: config.cacheMs, perf: Date });
  return async (req) => {
    const token = req.headers.authorization || undefined;
    const ip = clientIp(req);
    if (!token) return { key: ip, kind: 'ip', ip, token };
    const hashed = hash(token);
    let valid = verdicts.get(hashed);
    if (valid === undefined) {
      valid = (await authenticate(token, req)) === true;
      verdicts.set(hashed, valid);
    }
    if (valid) return { key: hashed, kind: 'token', ip, token };
    return reject ? REJECTED : { key: ip, kind: 'ip', ip, token };
  };
}
