// Whether a request that changes something comes from the page's own origin, as the browser says it does.
import type { Request } from 'express';

/** The first value of a header that may be given several times, or as a list. */
function first(value: string | string[] | undefined): string | undefined {
  const one = Array.isArray(value) ? value[0] : value;
  return one?.split(',')[0]?.trim();
}

/** `host[:port]` as the URL of `scheme` spells it (lower case, no default port); undefined when it is no host. */
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
 * CSRF's second line, after the token. A browser says where a request comes from: `Sec-Fetch-Site`, when sent,
 * decides alone and must be `same-origin` (a browser that sends it may send `Origin: null` for its own forms);
 * otherwise `Origin`, when sent, must be the scheme and host the request was sent to (`Host`, or `X-Forwarded-Host`
 * as a proxy passes it on; no page can set either). A request with neither, as older browsers and other clients send,
 * is judged by its CSRF token alone. Over HTTPS (`req.secure`), an `http:` origin is another origin; over plain HTTP
 * either scheme is taken, since a proxy that ends TLS without `trust proxy` makes every request look plain.
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
  if (from.protocol !== 'https:' && (req.secure || from.protocol !== 'http:')) return false;
  const to = [req.headers.host, first(req.headers['x-forwarded-host'])].map((h) => hostOf(from.protocol, h));
  return to.includes(from.host);
}
