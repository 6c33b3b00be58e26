// The contract's per-row assertion, shared by every suite that serves the tables: limit passes, then the exact 429.
import type request from 'supertest';
import { type EndpointRow, type ListingName, listings } from '../../lib';
import { type StoreCase, T0 } from './stores';

export const BODY_429 = (retryAfter: number) =>
  `{"success":false,"code":429,"message":"You are sending too many requests, please slow down","retryAfter":${retryAfter}}`;

/** `[listing, name, row]` for each row of a listing, for `it.each`. */
export const rowsOf = (listing: ListingName) =>
  listings[listing].map((row) => [listing, `${row.method} ${row.path}`, row] as const);

/**
 * Sends `limit` requests with `send()` and expects each to pass with the exact headers of its place in the window,
 * then one more to get the exact 429, then another 429. The store's clock must stand at T0 and the counter be new.
 */
export async function expectLimitHolds(
  row: EndpointRow,
  store: StoreCase,
  send: () => request.Test,
  onAllowed: (res: request.Response) => void = () => {},
): Promise<void> {
  const name = `${row.method} ${row.path}`;
  const seconds = row.windowMs / 1000;
  const fields = (remaining: number) => ({
    'ratelimit-policy': `"${name}";q=${row.limit};w=${seconds}`,
    ratelimit: `"${name}";r=${remaining};t=${seconds}`,
    'x-ratelimit-limit': String(row.limit),
    'x-ratelimit-remaining': String(remaining),
    'x-ratelimit-reset': String(T0 / 1000 + seconds),
    'x-ratelimit-reset-after': store.resetAfter(row.windowMs),
    'x-ratelimit-bucket': name,
  });
  for (let i = 1; i <= row.limit; i++) {
    const res = await send().expect(200);
    onAllowed(res);
    expect(res.headers).toMatchObject(fields(row.limit - i));
    expect(res.headers['retry-after']).toBeUndefined();
  }
  const refused = await send().expect(429);
  expect(refused.text).toBe(BODY_429(seconds));
  expect(refused.headers).toMatchObject({
    'content-type': 'application/json; charset=utf-8',
    'retry-after': String(seconds),
    ...fields(0),
  });
  await send().expect(429);
}
