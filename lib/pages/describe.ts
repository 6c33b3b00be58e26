// Words for what the pages show: grants, durations and dates, the same on the contact page and the operator's.
import type { EndpointRow } from '../contract/listings.js';
import type { Grant } from '../records/types.js';

/** Grouped by thousands: `1,234,567`. */
export const countText = (n: number): string => counts.format(n);
const counts = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function perWindow(limit: number, windowMs: number): string {
  return `${limit} per ${windowMs / 1000} s`;
}

export function grantText(grant: Grant): string {
  if (grant === 'unlimited') return 'removal of limits';
  if ('multiplier' in grant) return `every limit ×${grant.multiplier}`;
  return grant.rows
    .map((row: EndpointRow) => `${row.method} ${row.path}: ${perWindow(row.limit, row.windowMs)}`)
    .join('; ');
}

/** `token ending in 3456` where its grant request told it; any other key cut to 24 characters. */
export function clientLabel(key: string, tokenEnd = ''): string {
  if (tokenEnd !== '' && key.startsWith('t:')) return `token ending in ${tokenEnd}`;
  return key.length > 24 ? `${key.slice(0, 22)}…` : key;
}

/** UTC, to the minute: `2026-01-01 00:10 UTC`. */
export function when(date: Date | undefined, none = 'never'): string {
  if (!date) return none;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
