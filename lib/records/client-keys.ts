// The client an operator names (`{ token }`, `{ ip }` or `{ key }`), as the key its records and counters have.
import ipaddr from 'ipaddr.js';
import { type Checker, isPlainObject, show } from '../shared/check.js';
import { type ClientKind, type IpKey, kindOfKey, tokenEnd, tokenKey } from '../contract/keys.js';
import { LONGEST_TEXT } from './kinds.js';

export interface ClientKeyOf {
  readonly key: string;
  readonly kind: ClientKind;
  readonly address: boolean;
  readonly tokenEnd: string;
}

export type KeyOf = (check: Checker, client: unknown) => ClientKeyOf;

/** A token hashed at once, an address keyed by `ipOf` as requests are; the end of its token, given or kept. */
export function clientKeyOf(
  check: Checker,
  client: unknown,
  ipOf: IpKey,
  tokenEndOf: (key: string) => string | undefined,
): ClientKeyOf {
  const fields = isPlainObject(client) ? Object.keys(client) : [];
  if (fields.length !== 1 || !['token', 'ip', 'key'].includes(fields[0] as string)) {
    check.invalid('client', `must be { token }, { ip } or { key }; got ${show(fields.length ? fields : client)}.`);
  }
  const c = client as { token?: unknown; ip?: unknown; key?: unknown };
  const field = fields[0] as string;
  const value = c[field as keyof typeof c];
  if (typeof value !== 'string' || value === '')
    check.invalid(
      `client.${field}`,
      `must be a non-empty string; got ${field === 'token' ? typeof value : show(value)}.`,
    );
  if (field === 'token') return { key: tokenKey(value), kind: 'token', address: false, tokenEnd: tokenEnd(value) };
  if (field === 'ip') {
    if (!ipaddr.isValid(value)) check.invalid('client.ip', `must be an IP address; got ${show(value)}.`);
    return { key: ipOf(value), kind: 'ip', address: true, tokenEnd: '' };
  }
  if (value.length > LONGEST_TEXT)
    check.invalid('client.key', `must be at most ${LONGEST_TEXT} characters; got ${value.length}.`);
  return { key: value, kind: kindOfKey(value), address: false, tokenEnd: tokenEndOf(value) ?? '' };
}
