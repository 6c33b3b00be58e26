// Builds real Express apps (4 and 5) that serve every row of a table behind listingLimits, for the HTTP tests.
import express5, { type Express, type RequestHandler } from 'express';
import express4 from 'express4';
import { type EndpointRow, type ListingLimitsOptions, type ListingName, listingLimits, listings } from '../../lib';

export type ExpressFactory = typeof express5;

/** Both Express majors, for `describe.each`. */
export const expressVersions: [string, ExpressFactory][] = [
  ['express 4', express4 as unknown as ExpressFactory],
  ['express 5', express5],
];

interface AppOptions {
  express?: ExpressFactory;
  listing?: ListingName | readonly EndpointRow[];
  options?: ListingLimitsOptions;
  /** Mount the middleware and the routes under this path. */
  mount?: string;
  /** Extra set-up before the limiter, e.g. `app.set('trust proxy', true)`. */
  setup?: (app: Express) => void;
  /** The rows served with a route. Default: those of `listing`. */
  routes?: readonly EndpointRow[];
}

let inTest = false;
const ofTest: { close(): void }[] = [];
const ofFile: { close(): void }[] = [];
beforeEach(() => (inTest = true));
afterEach(() => {
  inTest = false;
  for (const limiter of ofTest.splice(0)) limiter.close();
});
afterAll(() => {
  for (const limiter of ofFile.splice(0)) limiter.close();
});

/**
 * Closes `limiter` after the test that made it (after the file, made outside a test): over a Redis store it would
 * go on adding its traffic, every 5 s, to a Redis the test has closed.
 */
export function closeAfterTest<T extends { close(): void }>(limiter: T): T {
  (inTest ? ofTest : ofFile).push(limiter);
  return limiter;
}

/** Answers with the row it serves and what the limiter told it. */
function routeHandler(row: EndpointRow): RequestHandler {
  return (req, res) => {
    res.json({ route: `${row.method} ${row.path}`, rateLimit: req.rateLimit ?? null });
  };
}

/** An app that mounts listingLimits in front of a real route for every row of the table; the middleware is `app.locals.limiter`. */
export function createApp({
  express = express5,
  listing = 'B',
  options,
  mount,
  setup,
  routes,
}: AppOptions = {}): Express {
  const app = express();
  setup?.(app);
  const rows = routes ?? (typeof listing === 'string' ? listings[listing] : listing);
  const router = express.Router();
  const limiter = closeAfterTest(listingLimits(listing, options));
  app.locals.limiter = limiter;
  router.use(limiter);
  for (const row of rows) {
    const method = row.method.toLowerCase() as 'get' | 'post';
    router[method](row.path, routeHandler(row));
  }
  router.get('/v1/unlimited', (_req, res) => {
    res.json({ route: 'unlimited' });
  });
  if (mount) app.use(mount, router);
  else app.use(router);
  return app;
}

/** A concrete path for a row: each `:param` replaced by `value`. */
export function pathOf(row: EndpointRow, value = '1'): string {
  return row.path.replace(/:\w+/g, value);
}
