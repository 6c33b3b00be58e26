// Who a request is counted for: a hash of its Authorization value, or else its client IP (IPv6 grouped by subnet).
import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/** How a client was identified. */
export type ClientKind = 'token' | 'ip' | 'custom';

/** Keys of IP addresses, as counting groups them. */
export type IpKey = (ip: string | undefined) => string;

/**
 * Hash of a credential, used in its place in every storage key: a shared store never holds the token itself.
 * SHA-256 is deterministic, so every app instance derives the same counter key for the same token.
 */
export function tokenKey(authorization: string): string {
  return `t:${createHash('sha256').update(authorization).digest('base64url')}`;
}

/**
 * The part of a token shown to operators and requesters, so that they can recognise it: its last 4 characters, and
 * none of a token shorter than 12 (where 4 characters would give away too much of it).
 */
export function tokenEnd(authorization: string): string {
  return authorization.length >= 12 ? authorization.slice(-4) : '';
}

/**
 * Storage key of a client address. IPv4-mapped IPv6 addresses count as their IPv4 address; other IPv6
 * addresses are cut to their first `ipv6Subnet` bits, since one subscriber is usually given a whole /64
 * (or /56) and could otherwise rotate through it for fresh counters.
 */
export function ipKey(ip: string | undefined, ipv6Subnet: number | false): string {
  if (!ip) return 'ip:unknown';
  if (!ip.includes(':')) return `ip:${canonicalIPv4(ip)}`;
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(ip);
  } catch {
    return `ip:${ip}`;
  }
  if (address.kind() === 'ipv4') return `ip:${address.toString()}`;
  const v6 = address as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return `ip:${v6.toIPv4Address().toString()}`;
  const bytes = v6.toByteArray();
  if (ipv6Subnet === false || ipv6Subnet === 128) return `ip:${ipaddr.fromByteArray(bytes).toString()}`;
  const mask = ipaddr.IPv6.subnetMaskFromPrefixLength(ipv6Subnet).toByteArray();
  const network = ipaddr.fromByteArray(bytes.map((byte, i) => byte & (mask[i] ?? 0)));
  return `ip:${network.toString()}/${ipv6Subnet}`;
}

/**
 * The dotted-decimal spelling of an IPv4 address written another way (`3405803785`, `0xcb.0.113.9`, `203.0.113.09`),
 * as a header that `trust proxy` trusts may carry it: one address, one counter. Anything else is kept as given.
 */
function canonicalIPv4(ip: string): string {
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) return ip;
  if (ipaddr.IPv4.isValid(ip)) return ipaddr.IPv4.parse(ip).toString();
  const parts = ip.split('.');
  if (parts.length === 4 && parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) {
    return parts.map(Number).join('.');
  }
  return ip;
}

/** How the client of a key was identified, from the key: `t:` a token's, `ip:` an address's, else a custom key. */
export function kindOfKey(key: string): ClientKind {
  return key.startsWith('t:') ? 'token' : key.startsWith('ip:') ? 'ip' : 'custom';
}
