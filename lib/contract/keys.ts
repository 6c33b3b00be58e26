// Who a request is counted for: a hash of its Authorization value, or else its client IP (IPv6 grouped by subnet).
import { createHash } from 'node:crypto';
import ipaddr from 'ipaddr.js';

/** How a client was identified. */
export type ClientKind = 'token' | 'ip' | 'custom';

export type IpKey = (ip: string | undefined) => string;

/** A shared store never holds the token itself; every instance derives the same key from it. */
export function tokenKey(authorization: string): string {
  return `t:${createHash('sha256').update(authorization).digest('base64url')}`;
}

/** What operators are shown of a token: its last 4 characters, none of one under 12 (4 would tell too much). */
export function tokenEnd(authorization: string): string {
  return authorization.length >= 12 ? authorization.slice(-4) : '';
}

/** IPv6 is cut to its first `ipv6Subnet` bits: a subscriber given a whole /64 could rotate through it otherwise. */
export function ipKey(ip: string | undefined, ipv6Subnet: number | false): string {
  if (!ip) return 'ip:unknown';
  if (!ip.includes(':')) return `ip:${canonicalIPv4(ip)}`;
  let v6: ipaddr.IPv6;
  try {
    v6 = ipaddr.IPv6.parse(ip);
  } catch {
    return `ip:${ip}`;
  }
  if (v6.isIPv4MappedAddress()) return `ip:${v6.toIPv4Address().toString()}`;
  const bytes = v6.toByteArray();
  if (ipv6Subnet === false || ipv6Subnet === 128) return `ip:${ipaddr.fromByteArray(bytes).toString()}`;
  const mask = ipaddr.IPv6.subnetMaskFromPrefixLength(ipv6Subnet).toByteArray();
  const network = ipaddr.fromByteArray(bytes.map((byte, i) => byte & (mask[i] ?? 0)));
  return `ip:${network.toString()}/${ipv6Subnet}`;
}

/** One counter per address, however a trusted header spells it (`3405803785`, `0xcb.0.113.9`, `203.0.113.09`). */
function canonicalIPv4(ip: string): string {
  if (ipaddr.IPv4.isValidFourPartDecimal(ip)) return ip;
  if (ipaddr.IPv4.isValid(ip)) return ipaddr.IPv4.parse(ip).toString();
  const parts = ip.split('.');
  if (parts.length === 4 && parts.every((part) => /^\d{1,3}$/.test(part) && Number(part) <= 255)) {
    return parts.map(Number).join('.');
  }
  return ip;
}

export function kindOfKey(key: string): ClientKind {
  return key.startsWith('t:') ? 'token' : key.startsWith('ip:') ? 'ip' : 'custom';
}
