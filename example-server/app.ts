// createExampleApp(): a local stand-in for a listing of the API, with listingLimits in front of every endpoint.
import express, { type Express, type RequestHandler } from 'express';
import { Registry } from 'prom-client';
import {
  type AnyListingName,
  listingChoices,
  listingHint,
  type ListingName,
  listingLimits,
  listingOf,
  listings,
  type Store,
  type WindowKind,
} from '../lib/index.js';
import { limitsAdmin, limitsRequestPage } from '../lib/pages.js';
import { type Bot, type ExampleData, generateData, type Server } from './data.js';
import { errorHandler, HttpError, notFound } from './errors.js';
import { accessLog } from './log.js';
import {
  botPayload,
  ownedBy,
  paginate,
  serverPayload,
  statisticsPayload,
  uptimePayload,
  userPayload,
} from './payloads.js';
import { parsePage, parseStats } from './validate.js';

/** Options of {@link createExampleApp}. */
interface ExampleAppOptions {
  /** The API to serve: a listing's name, `'A'` (or `'a'`, `'servers'`), `'B'` (or `'b'`, `'bots'`). */
  listing: AnyListingName;
  /** Where the limiter keeps its counters; give each app its own. Default: `memoryStore()`. */
  store?: Store;
  /** Receives one access-log line per request, e.g. `console.log`. Default: no log. */
  log?: (line: string) => void;
  /** How the limiter counts windows: `'fixed'` or `'sliding'` (checked by listingLimits). Default: `'fixed'`. */
  window?: WindowKind;
  /** The admin token of the operator's page at `/admin/limits` (16 characters or more). Default: no such page. */
  adminToken?: string;
}

/** Where the example server mounts the contact page of rule 6 and the operator's page. */
export const PAGES = { request: '/limits/request', admin: '/admin/limits' } as const;

function find<T>(entries: ReadonlyMap<string, T>, id: string, noun: string): T {
  const entry = entries.get(id);
  if (entry === undefined) throw new HttpError(404, `Not found: no ${noun} has the id ${JSON.stringify(id)}.`);
  return entry;
}

const requireAuthorization: RequestHandler = (req, _res, next) => {
  if (!req.headers.authorization) {
    throw new HttpError(401, 'Unauthorized: send an Authorization header (the example server accepts any value).');
  }
  next();
};

/** The list, single-entry and upvotes endpoints of one family, and the list of a user's entries. */
function serveEntries<T extends Server | Bot>(
  app: Express,
  data: ExampleData,
  family: 'servers' | 'bots',
  noun: string,
  entries: ReadonlyMap<string, T>,
  payload: (entry: T) => object,
): void {
  app.get(`/v1/${family}`, (req, res) => {
    res.json(paginate([...entries.values()], parsePage(req.query.page), payload));
  });
  app.get(`/v1/${family}/:id`, (req, res) => {
    res.json(payload(find(entries, req.params.id, noun)));
  });
  app.get(`/v1/${family}/:id/upvotes`, (req, res) => {
    const entry = find(entries, req.params.id, noun);
    res.json(paginate(entry.upvotes, parsePage(req.query.page), (upvote) => upvote));
  });
  app.get(`/v1/users/:id/${family}`, (req, res) => {
    const user = find(data.users, req.params.id, 'user');
    res.json(paginate(ownedBy(entries, user), parsePage(req.query.page), payload));
  });
}

function checkOptions(options: unknown): ExampleAppOptions & { listing: ListingName } {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('createExampleApp: options must be an object such as { listing: "B" }.');
  }
  const { listing, log, adminToken } = options as Partial<ExampleAppOptions>;
  const name = listingOf(listing);
  if (!name) {
    const hint = typeof listing === 'string' ? listingHint(listing) : '';
    throw new TypeError(
      `createExampleApp: options.listing must be ${listingChoices()}; got ${JSON.stringify(listing)}.${hint}`,
    );
  }
  if (log !== undefined && typeof log !== 'function') {
    throw new TypeError('createExampleApp: options.log must be a function that takes one line.');
  }
  if (adminToken !== undefined && (typeof adminToken !== 'string' || adminToken.length < 16)) {
    throw new TypeError('createExampleApp: options.adminToken must be a string of at least 16 characters.');
  }
  return { ...(options as ExampleAppOptions), listing: name };
}

/** The routes of each listing that has example data, after the statistics and users of every listing. */
const exampleRoutes: { readonly [L in ListingName]?: (app: Express, data: ExampleData) => void } = {
  A: (app, data) => serveEntries(app, data, 'servers', 'server', data.servers, serverPayload),
  B: (app, data) => {
    serveEntries(app, data, 'bots', 'bot', data.bots, botPayload);
    app.get('/v1/bots/:id/uptime', (req, res) => {
      res.json(uptimePayload(find(data.bots, req.params.id, 'bot')));
    });
    app.post<{ id: string }>(
      '/v1/bots/:id',
      requireAuthorization,
      (req, _res, next) => {
        find(data.bots, req.params.id, 'bot');
        next();
      },
      express.json({ strict: false }),
      (req, res) => {
        const bot = find(data.bots, req.params.id, 'bot');
        bot.stats = parseStats(req.body, new Date());
        res.json(botPayload(bot));
      },
    );
  },
};

/** A table without example data yet: each endpoint answers with its name and path parameters. */
function servePlaceholders(app: Express, listing: ListingName): void {
  for (const row of listings[listing]) {
    app[row.method.toLowerCase() as 'get'](row.path, (req, res) => {
      res.json({ endpoint: `${row.method} ${row.path}`, params: req.params });
    });
  }
}

/**
 * An Express app that serves every endpoint of a listing over generated data of its own, behind
 * `listingLimits(listing, { store })`. Mount it anywhere: `app.use('/api', createExampleApp({ listing: 'B' }))`.
 */
export function createExampleApp(options: ExampleAppOptions): Express {
  const { listing, store, log, window, adminToken } = checkOptions(options);
  const data = generateData();
  const app = express();
  app.disable('x-powered-by');
  if (log) app.use(accessLog(listing, log));
  // The limiter's metrics, for Prometheus to scrape; served before the limiter, so that scraping is never limited.
  const metrics = new Registry();
  app.get('/metrics', (_req, res, next) => {
    metrics.metrics().then((text) => res.type(metrics.contentType).send(text), next);
  });
  const limits = listingLimits(listing, { store, metrics, window });
  // For the app's own code and tests: its bans, grants, requests and counters.
  app.locals.limiter = limits;
  // The pages keep grant requests in the store: a custom store without runtime state has none.
  const pages = limits.requests.supported;
  // Before the limiter, so that no ban (of an address an operator shares, say) locks the operators out.
  if (pages && adminToken) app.use(PAGES.admin, limitsAdmin(limits, { authorize: { token: adminToken } }));
  // Before every handler, as on the original service: answers that end in 404, 401 or 400 are counted too.
  app.use(limits);
  // After the limiter: a banned client is refused there too (bans cover the whole site).
  if (pages) app.use(PAGES.request, limitsRequestPage(limits));

  const routes = exampleRoutes[listing];
  if (routes) {
    app.get('/v1/statistics', (_req, res) => {
      res.json(statisticsPayload(listing, data));
    });
    app.get('/v1/users/:id', (req, res) => {
      res.json(userPayload(find(data.users, req.params.id, 'user'), listing, data));
    });
    routes(app, data);
  } else {
    servePlaceholders(app, listing);
  }
  app.use(notFound);
  app.use(errorHandler);
  return app;
}
