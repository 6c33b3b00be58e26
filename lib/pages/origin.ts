// Whether a request that changes something comes from the page's own origin, as the browser says it does.
import type { Request } from 'express';

function first(value: string | string[] | undefined): string | undefined {
  const one = Array.isArray(value) ? value[0] : value;
  return one?.split(',')[0]?.trim();
}

/** `host[:port]` as a URL spells it (lower case, no default port); undefined when it is no host. */
function hostOf(scheme: string, host: string | undefined): string | undefined {
  if (!host) return undefined;
  try {
    const url = new URL(`${scheme}//${host}`);
    return url.pathname === '/' && !url.username && !url.password ? url.host : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CSRF's second line, after the token. `Sec-Fetch-Site` decides alone (a browser that sends it may send `Origin: null`
 * for its own forms); a request with neither it nor `Origin` is judged by its CSRF token alone.
 */
export function sameOrigin(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  let from: URL;
  try {
    from = new URL(origin);
  } catch {
    // `Origin: null`: sandboxed frames, cross-origin redirects.
    return false;
  }
  // Either scheme over plain HTTP: a proxy that ends TLS without `trust proxy` makes every request look plain.
  if (from.protocol !== 'https:' && (req.secure || from.protocol !== 'http:')) return false;
  const to = [req.headers.host, first(req.headers['x-forwarded-host'])].map((h) => hostOf(from.protocol, h));
  return to.includes(from.host);
}
