// Who a request is counted for: options `key`, `authenticate`, `invalidToken` and `ipv6Subnet`, checked and compiled.
import { IncomingMessage } from 'node:http';
import type { Request } from 'express';
import type { Checker } from '../shared/check.js';
import { type IpKey, ipKey, tokenKey } from '../contract/keys.js';
import { remembered } from '../shared/remembered.js';
import { Lookups } from '../shared/lookups.js';
import type { ClientKeys } from '../records/cache.js';
import type { ListingLimitsOptions } from './types.js';
import type { Warn } from '../shared/hooks.js';
import { once } from '../shared/once.js';

/** The client of a request: its storage key, how it was found, and the keys of its address and token. */
export interface Client extends ClientKeys {
  /** The Authorization value, when there was one that identifies the client (not one `authenticate` refused). */
  readonly token: string | undefined;
  /** `t:<sha256 of the token>`, when there was such a token. */
  readonly tokenKey: string | undefined;
}

/** A client identified by its token; its address is read only when asked (Express 5 computes `req.ip` per read). */
class TokenClient implements Client {
  readonly kind = 'token';
  #ip: string | undefined;

  constructor(
    readonly key: string,
    readonly token: string,
    private readonly req: Request,
    private readonly addressKey: AddressKey,
  ) {}

  get tokenKey(): string {
    return this.key;
  }

  get ip(): string {
    this.#ip ??= this.addressKey(this.req);
    return this.#ip;
  }
}

/** The key of a request's address, as {@link IpKey} makes it. */
type AddressKey = (req: Request) => string;

/** The key of a request's address; where that is the socket's, remembered per socket. */
function addressKeyOf(ipOf: IpKey): AddressKey {
  const bySocket = new WeakMap<object, string>();
  return (req) => {
    if (!readsSocket(req)) return ipOf(req.ip);
    const { socket } = req;
    if (typeof socket !== 'object' || socket === null) return ipOf(undefined);
    let key = bySocket.get(socket);
    if (key === undefined) {
      const address = socket.remoteAddress;
      key = ipOf(address);
      if (address !== undefined) bySocket.set(socket, key);
    }
    return key;
  };
}

/** Whether requests of a prototype read `req.ip` from Express' own getter. */
const expressIp = new WeakMap<object, boolean>();

function readsExpressIp(proto: object): boolean {
  let known = expressIp.get(proto);
  if (known === undefined) {
    let owner: object | null = proto;
    while (owner !== null && !Object.prototype.hasOwnProperty.call(owner, 'ip')) owner = Object.getPrototypeOf(owner);
    const getter = owner && Object.getOwnPropertyDescriptor(owner, 'ip')?.get;
    known = getter?.name === 'ip' && Object.getPrototypeOf(owner) === IncomingMessage.prototype;
    expressIp.set(proto, known);
  }
  return known;
}

/** Whether `req.ip` is the socket's address: Express' getter with `trust proxy` off, which parses XFF on each read. */
function readsSocket(req: Request): boolean {
  const proto = Object.getPrototypeOf(req) as object | null;
  return (
    proto !== null &&
    req.app?.get('trust proxy') === false &&
    readsExpressIp(proto) &&
    !Object.prototype.hasOwnProperty.call(req, 'ip')
  );
}

/** What identification answers when `invalidToken: 'reject'` refuses a token that `authenticate` did not accept. */
export const REJECTED = Symbol('token rejected');

export const identifyOptions = ['key', 'authenticate', 'invalidToken', 'ipv6Subnet'] as const;

/** Identification compiled: it answers the client, or REJECTED; synchronous unless `key` or `authenticate` is given. */
export function compileIdentify(check: Checker, options: ListingLimitsOptions, cacheMs: number) {
  const { key, authenticate, invalidToken } = options;
  const ipv6Subnet = options.ipv6Subnet ?? 64;
  if (ipv6Subnet !== false && !(Number.isInteger(ipv6Subnet) && ipv6Subnet >= 1 && ipv6Subnet <= 128)) {
    const got = JSON.stringify(ipv6Subnet);
    check.invalid('options.ipv6Subnet', `must be an integer from 1 to 128, or false; got ${got}.`);
  }
  check.callback(key, 'options.key', '(req) => string');
  check.callback(authenticate, 'options.authenticate', '(token, req) => boolean');
  if (key && authenticate) {
    check.invalid(
      'options.authenticate',
      'cannot be combined with options.key: authenticate judges Authorization tokens, which a custom key replaces.',
    );
  }
  if (invalidToken !== undefined) check.oneOf(invalidToken, ['ip', 'reject'], 'options.invalidToken');
  if (invalidToken && !authenticate)
    check.invalid('options.invalidToken', 'needs options.authenticate, which decides what is invalid.');
  const known = remembered((ip) => ipKey(ip, ipv6Subnet));
  const ipOf: IpKey = (ip) => (ip ? known(ip) : ipKey(undefined, ipv6Subnet));
  return { identify: identifyOf(options, invalidToken === 'reject', ipOf, cacheMs), ipOf, ipv6Subnet };
}

type Identified = Client | typeof REJECTED;

function identifyOf(options: ListingLimitsOptions, reject: boolean, ipOf: IpKey, cacheMs: number) {
  const { key, authenticate } = options;
  const hash = remembered(tokenKey);
  const addressKey = addressKeyOf(ipOf);
  if (key) {
    return async (req: Request): Promise<Identified> => {
      const value = await key(req);
      if (typeof value !== 'string' || value === '') {
        throw new TypeError(
          `listingLimits: options.key returned ${JSON.stringify(value)}; it must return a non-empty string.`,
        );
      }
      const token = req.headers.authorization || undefined;
      return { key: value, kind: 'custom', ip: ipOf(req.ip), token, tokenKey: token && hash(token) };
    };
  }
  if (!authenticate) {
    return (req: Request): Identified => {
      const token = req.headers.authorization;
      if (token) return new TokenClient(hash(token), token, req, addressKey);
      const ip = ipOf(req.ip);
      return { key: ip, kind: 'ip', ip, token: undefined, tokenKey: undefined };
    };
  }
  // Verdicts are kept briefly, keyed by the token's hash: a flood of one token costs one check.
  const verdicts = new Lookups<boolean>(cacheMs);
  const verdict = (hashed: string, token: string, req: Request) =>
    verdicts.get(hashed, async () => (await authenticate(token, req)) === true);
  return async (req: Request): Promise<Identified> => {
    const token = req.headers.authorization || undefined;
    const ip = ipOf(req.ip);
    if (!token) return { key: ip, kind: 'ip', ip, token, tokenKey: undefined };
    const hashed = hash(token);
    if (await verdict(hashed, token, req)) return { key: hashed, kind: 'token', ip, token, tokenKey: hashed };
    // A refused token is not the client: it is counted by its address, and no grant of the token applies to it.
    return reject ? REJECTED : { key: ip, kind: 'ip', ip, token: undefined, tokenKey: undefined };
  };
}

/** Clients behind a proxy share one counter when requests carry X-Forwarded-For and `trust proxy` is off. */
export function forwardedWarning(warn: Warn): (req: Request) => void {
  const tell = once(() =>
    warn(
      'LISTING_LIMITS_TRUST_PROXY',
      "listing-limits: requests carry X-Forwarded-For but the app's 'trust proxy' setting is off, so req.ip is the " +
        "proxy's address and every client behind the proxy shares one counter. " +
        "Set app.set('trust proxy', ...) to your proxies.",
    ),
  );
  return (req) => {
    if (req.headers['x-forwarded-for'] !== undefined && !req.app?.get('trust proxy')) tell();
  };
}
