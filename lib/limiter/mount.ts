// A limiter mounted under a path its table's paths start with (`app.use('/v1', limits)`) counts nothing: warned once.
import type { Request } from 'express';
import { parse } from 'path-to-regexp';
import type { Warn } from '../shared/hooks.js';

/** The leading whole segments of each path, before any parameter, lower case: `/v1`, `/v1/bots` of `/v1/bots/:id`. */
function leadingPaths(paths: readonly string[]): Set<string> {
  const leading = new Set<string>();
  for (const path of paths) {
    const tokens = parse(path).tokens;
    let text = '';
    for (const token of tokens) {
      if (token.type !== 'text') break;
      text += token.value;
    }
    // A segment is whole when a `/` follows it, or when the path is text to its end.
    const whole = text.length === path.length ? text : text.slice(0, text.lastIndexOf('/'));
    const segments = whole.toLowerCase().split('/').slice(1);
    segments.forEach((_segment, i) => leading.add(`/${segments.slice(0, i + 1).join('/')}`));
  }
  leading.delete('/');
  return leading;
}

/**
 * What the middleware calls with each request that matches no row: the first one under a mount path that its table's
 * paths start with is warned of (code `LISTING_LIMITS_MOUNT_PATH`) naming that path, since Express takes the
 * mount path off `req.path` and no row can match. Requests of an app that mounts the limiter at its root cost one
 * read of `req.baseUrl`.
 */
export function mountWarning(paths: readonly string[], warn: Warn): (req: Request) => void {
  const leading = leadingPaths(paths);
  let warned = false;
  return (req) => {
    const base = req.baseUrl;
    if (warned || !base || !leading.has(base.toLowerCase())) return;
    warned = true;
    warn(
      'LISTING_LIMITS_MOUNT_PATH',
      `listing-limits: the limiter is mounted under ${JSON.stringify(base)}, which Express takes off req.path, so ` +
        `no path of its table (they start with ${base}) can match and nothing is counted. ` +
        'Mount it at the root: app.use(listingLimits(...)).',
    );
  };
}
