// Where the middleware is mounted: under a path its table's paths start with, or after routes that answer its table's
// endpoints, it sees none of their requests; each mistake is told once.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Request } from 'express';
import { parse, type Token } from 'path-to-regexp';
import type { Warn } from '../shared/hooks.js';
import { once } from '../shared/once.js';

/** Node's channel of every HTTP response that finished, whichever server sent it. */
const FINISHED = 'http.server.response.finish';

/** How many responses of other apps (or of no Express app) a check waits through before it gives up. */
const PATIENCE = 1000;

/** The deepest a check follows routers within routers. */
const DEPTH = 8;

function leadingOf(path: string, tokens: readonly Token[], leading: Set<string>): void {
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

/** What the checks need of the middleware's table: `samples`, a path a request to each endpoint could have. */
type Table = ReturnType<typeof tableOf>;

export function tableOf(
  rows: readonly { readonly method: string; readonly path: string; readonly name: string }[],
  match: (method: string, path: string) => unknown,
) {
  // The leading whole segments of each path, before any parameter, lower case: `/v1`, `/v1/bots` of `/v1/bots/:id`.
  const leading = new Set<string>();
  const samples = rows.map(({ method, path, name }) => {
    const { tokens } = parse(path);
    leadingOf(path, tokens, leading);
    // Each parameter `0`, optional parts left out.
    const sample = tokens.map((t) => (t.type === 'text' ? t.value : t.type === 'group' ? '' : '0')).join('');
    return { method, name, path: sample };
  });
  leading.delete('/');
  return { samples, match, leading };
}

/** Called with each request that matches no row: Express takes the mount path off `req.path`. */
export function mountWarning(table: Table, warn: Warn): (req: Request) => void {
  const tell = once((base: string) =>
    warn(
      'LISTING_LIMITS_MOUNT_PATH',
      `listing-limits: the limiter is mounted under ${JSON.stringify(base)}, which Express takes off req.path, so ` +
        `no path of its table (they start with ${base}) can match and nothing is counted. ` +
        'Mount it at the root: app.use(listingLimits(...)).',
    ),
  );
  return (req) => {
    const base = req.baseUrl;
    if (base && table.leading.has(base.toLowerCase())) tell(base);
  };
}

/** What a check reads of a layer of Express' router, 4 or 5. */
interface Layer {
  readonly handle?: { readonly stack?: unknown };
  readonly route?: { readonly path?: unknown; readonly methods?: Record<string, boolean | undefined> };
  /** Express 4: the layer's path as a regular expression, `fast_slash` for `/`. */
  readonly regexp?: RegExp & { fast_slash?: boolean };
  /** Express 5 (router 2): the layer's matchers, `slash` for `/`. */
  readonly matchers?: readonly ((path: string) => { path: string } | false)[];
  readonly slash?: boolean;
}

/** The part of `path` a layer matches (`''` for a router at `/`), or undefined when it does not. */
function matched(layer: Layer, path: string): string | undefined {
  if (layer.slash || layer.regexp?.fast_slash) return '';
  if (Array.isArray(layer.matchers)) {
    for (const matcher of layer.matchers) {
      const found = matcher(path);
      if (found) return found.path;
    }
    return undefined;
  }
  if (layer.regexp instanceof RegExp) return layer.regexp.exec(path)?.[0];
  return undefined;
}

function stackOf(value: unknown): readonly Layer[] | undefined {
  const stack = (value as { stack?: unknown } | null | undefined)?.stack;
  return Array.isArray(stack) ? (stack as Layer[]) : undefined;
}

/** The router of an Express app: `app.router` in Express 5, `app._router` in Express 4. */
function routerOf(app: unknown): readonly Layer[] | undefined {
  const a = app as { router?: unknown; _router?: unknown };
  return stackOf(a._router) ?? stackOf(a.router);
}

/** Where the middleware is: each router from the app's down to its own, and its layer's index in each. */
type Chain = { readonly layers: readonly Layer[]; readonly at: number }[];

function chainTo(layers: readonly Layer[], middleware: unknown, depth: number): Chain | undefined {
  for (let at = 0; at < layers.length; at++) {
    const layer = layers[at] as Layer;
    if (layer.handle === middleware) return [{ layers, at }];
    const inner = depth < DEPTH && !layer.route ? stackOf(layer.handle) : undefined;
    const chain = inner && chainTo(inner, middleware, depth + 1);
    if (chain) return [{ layers, at }, ...chain];
  }
  return undefined;
}

/** A route that answers `method path` before the middleware: its own path matches the endpoint, unlike a catch-all. */
function answeredBy(
  layers: readonly Layer[],
  method: string,
  path: string,
  endpoint: unknown,
  table: Table,
  before: string,
  depth: number,
): string | undefined {
  for (const layer of layers) {
    const part = matched(layer, path);
    if (part === undefined) continue;
    const { route } = layer;
    if (route) {
      const methods = route.methods ?? {};
      const answers = methods[method.toLowerCase()] || methods._all;
      if (answers && typeof route.path === 'string' && table.match(method, before + route.path) === endpoint)
        return before + route.path;
      continue;
    }
    const inner = depth < DEPTH ? stackOf(layer.handle) : undefined;
    if (!inner) continue;
    // Express takes the router's mount path off the path, and keeps the `/` that starts what is left.
    const mount = part.endsWith('/') ? part.slice(0, -1) : part;
    const rest = path.slice(mount.length) || '/';
    const found = answeredBy(inner, method, rest, endpoint, table, before + mount, depth + 1);
    if (found) return found;
  }
  return undefined;
}

// The endpoints that routes before the middleware answer; undefined when the app does not hold it. Routers around it
// count while each between is mounted at `/`, seeing the path it sees.
function shadowed(app: unknown, middleware: unknown, table: Table): string[] | undefined {
  const root = routerOf(app);
  const chain = root && chainTo(root, middleware, 0);
  if (!chain) return undefined;
  const found: string[] = [];
  for (const { method, name, path } of table.samples) {
    const endpoint = table.match(method, path);
    for (let level = chain.length - 1; level >= 0; level--) {
      const { layers, at } = chain[level] as Chain[number];
      // Under a mount path, the layers before see a path the check cannot spell (Express keeps mount paths compiled).
      if (matched(layers[at] as Layer, path) !== '') break;
      const route = answeredBy(layers.slice(0, at), method, path, endpoint, table, '', 0);
      if (route !== undefined) {
        found.push(`${name} (route ${JSON.stringify(route)})`);
        break;
      }
    }
  }
  return found;
}

interface Pending {
  /** Checks the app of a finished response; true once done (the app holds the middleware). */
  readonly check: (app: unknown) => boolean;
  /** Apps that do not hold the middleware, looked at once each. */
  readonly others: WeakSet<object>;
  waited: number;
}

const pending = new Set<Pending>();

function onFinished(message: unknown): void {
  const app = (message as { request?: { app?: unknown } }).request?.app;
  for (const check of pending) {
    if (typeof app === 'function' && !check.others.has(app)) {
      if (check.check(app)) {
        pending.delete(check);
        continue;
      }
      check.others.add(app);
    }
    if (++check.waited >= PATIENCE) pending.delete(check);
  }
  if (pending.size === 0) unsubscribe(FINISHED, onFinished);
}

/** Warns, at the first response of the app that holds `middleware`, of routes before it; answers what stops it. */
export function watchMountOrder(middleware: unknown, table: Table, warn: Warn): () => void {
  const check: Pending = {
    check: (app) => {
      const routes = shadowed(app, middleware, table);
      if (routes === undefined) return false;
      if (routes.length > 0) {
        warn(
          'LISTING_LIMITS_MOUNT_ORDER',
          'listing-limits: the limiter is mounted after routes that answer endpoints of its table, so Express ' +
            `answers their requests before the limiter sees them and none is counted: ${routes.join(', ')}. Mount ` +
            'it before the routes: app.use(listingLimits(...)) first.',
        );
      }
      return true;
    },
    others: new WeakSet(),
    waited: 0,
  };
  if (pending.size === 0) subscribe(FINISHED, onFinished);
  pending.add(check);
  return () => {
    if (pending.delete(check) && pending.size === 0) unsubscribe(FINISHED, onFinished);
  };
}
