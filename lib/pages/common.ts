// What both pages share: their options' checks, security headers, bodies, the limiter of their forms, errors.
import { randomBytes } from 'node:crypto';
import express, {
  type ErrorRequestHandler,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { type Checker, isPlainObject, show } from '../shared/check.js';
import { ListingLimitsError } from '../shared/errors.js';
import type { IpKey } from '../contract/keys.js';
import type { Limit } from '../contract/limit.js';
import type { EndpointRow } from '../contract/listings.js';
import { listingLimits } from '../limiter/middleware.js';
import type { ListingLimitsMiddleware } from '../limiter/types.js';
import { type PagesLink, pagesLinkOf } from '../records/pages-link.js';
import type { Records } from '../records/records.js';
import type { CounterSpec, LimitsSpec, Store } from '../stores/store.js';
import { serveCss, serveJs } from './assets.js';
import { helmet, missing } from './peers.cjs';
import { type Html, markup, page } from './html.js';
import { sameOrigin } from './origin.js';
import type { Sessions } from './session.js';

// Importing the pages without their peer dependencies fails at once, naming them.
if (missing) throw missing;

const BODY_LIMIT = '16kb';
const FIELDS_LIMIT = 200;

/** Checks that `limits` is the middleware listingLimits() returned. */
export function checkMiddleware(check: Checker, middleware: unknown): PagesLink {
  const m = middleware as { grant?: unknown; requests?: unknown } | null;
  const link = pagesLinkOf(middleware);
  if (!link || typeof m?.grant !== 'function' || typeof m.requests !== 'object') {
    check.invalid('limits', `must be the middleware listingLimits() returned; got ${show(middleware)}.`);
  }
  return link;
}

/** Both pages need grant requests, which a custom store may not keep. */
export function needGrantRequests(check: Checker, middleware: ListingLimitsMiddleware): void {
  if (!middleware.requests.supported)
    check.fail(
      'ERR_UNSUPPORTED_STORE',
      'limits',
      'has a store that keeps no grant requests: use memoryStore() or redisStore().',
    );
}

export function checkRate(check: Checker, value: unknown, field: string, fallback: Limit): Limit {
  if (value === undefined) return fallback;
  if (!isPlainObject(value)) check.invalid(field, `must be an object { limit, windowMs }; got ${show(value)}.`);
  check.unknownKeys(value, ['limit', 'windowMs'], (k) => `${field}.${k}`);
  return {
    limit: check.count(value.limit, `${field}.limit`),
    windowMs: check.seconds(value.windowMs, `${field}.windowMs`),
  };
}

export function checkSecret(check: Checker, secret: unknown): string {
  if (secret === undefined) return randomBytes(32).toString('base64url');
  if (typeof secret !== 'string' || secret.length < 32)
    check.invalid('options.secret', 'must be a string of at least 32 characters.');
  return secret;
}

export function refuseForgery(req: Request, res: Response): void {
  const message = 'This form did not come from this page, or has expired. Go back, reload the page and try again.';
  alertPage(req, res, 403, 'Refused', message, true);
}

export function sendPage(res: Response, status: number, title: string, body: Html, req: Request): void {
  res
    .status(status)
    .type('html')
    .send(page(title, body, `${req.baseUrl}/assets`));
}

/** A page of one alert; `back` adds a link back to the page. */
export function alertPage(req: Request, res: Response, status: number, title: string, text: string, back?: true): void {
  const link = back ? markup`<p><a href="${req.baseUrl}/">Back to the page</a></p>` : '';
  sendPage(res, status, title, markup`<p class="alert" role="alert">${text}</p>${link}`, req);
}

function refuseBody(req: Request, res: Response, error: unknown): void {
  const status = (error as { status?: unknown } | null)?.status;
  const large = status === 413;
  const message = large
    ? `This form is too large: ${BODY_LIMIT.replace('kb', ' KB')} and ${FIELDS_LIMIT} fields at most.`
    : 'This form could not be read.';
  alertPage(req, res, large ? 413 : 400, 'Refused', message);
}

/**
 * A page's router: strict headers, its sessions, every load within one bound of the store's `callTimeoutMs`. A body it
 * cannot read is answered here: the parser's error holds the raw form, which must stay out of the logs.
 */
export function pageRouter(records: Records, source: string, cookies: Sessions): Router {
  const router = express.Router();
  router.use(
    helmet({
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          scriptSrc: ["'self'"],
          styleSrc: ["'self'"],
          imgSrc: ["'self'", 'data:'],
          formAction: ["'self'"],
          frameAncestors: ["'none'"],
          baseUri: ["'none'"],
          connectSrc: ["'self'"],
        },
      },
      // Not no-referrer: older browsers would then send the pages' own forms with `Origin: null`, which is refused.
      referrerPolicy: { policy: 'same-origin' },
    }),
  );
  router.get('/assets/pages.css', serveCss);
  router.get('/assets/pages.js', serveJs);
  router.use((req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    // Before the limiters count: another site's page cannot spend an operator's logins.
    if (req.method !== 'GET' && req.method !== 'HEAD' && !sameOrigin(req)) return refuseForgery(req, res);
    next();
  });
  const parse = express.urlencoded({ extended: false, limit: BODY_LIMIT, parameterLimit: FIELDS_LIMIT });
  router.use((req, res, next) => {
    parse(req, res, (error?: unknown) => (error === undefined ? next() : refuseBody(req, res, error)));
  });
  router.use((_req, _res, next) => records.calls.withBound(source, next));
  router.use(...cookies.start);
  return router;
}

/** Only name, code, message and stack: another library's error (Redis') may hold a request's contact and reason. */
export function bare(error: unknown): Error {
  if (!(error instanceof Error)) return new Error('listing-limits/pages: a page failed with a value that is no Error.');
  const copy = new Error(error.message);
  copy.name = error.name;
  copy.stack = error.stack;
  const { code } = error as { code?: unknown };
  if (typeof code === 'string' || typeof code === 'number') Object.assign(copy, { code });
  return copy;
}

/** This package's middleware in front of a page's forms, by client address, under counter names of their own. */
export function formLimiter(rows: readonly EndpointRow[], page: string, store: Store, ipOf: IpKey): RequestHandler {
  const named = <S extends { readonly name: string }>(spec: S): S => ({
    ...spec,
    name: `listing-limits ${page} ${spec.name}`,
  });
  // No runtime state: the forms need none, and so no background reads of it.
  const { failure, limits } = store;
  const forms: Store = Object.assign((spec: CounterSpec) => store(named(spec)), {
    ...(failure && { failure }),
    ...(limits && { limits: (spec: LimitsSpec) => limits(named(spec)) }),
  });
  const limiter = listingLimits(rows, {
    store: forms,
    // By address only: a form's Authorization header (or its absence) must not give a fresh counter.
    key: (req) => ipOf(req.ip),
    handler: (req, res, _next, info) => {
      const minutes = Math.ceil(info.retryAfter / 60);
      const message = `Too many attempts from your address. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
      alertPage(req, res, 429, 'Too many attempts', message);
    },
  });
  return (req, res, next) => limiter(req, res, (error?: unknown) => (error === undefined ? next() : next(bare(error))));
}

/** The first value of a field sent more than once; '' when absent. */
export function field(body: unknown, name: string): string {
  const value = isPlainObject(body) ? body[name] : undefined;
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : '';
}

export function badInput(error: unknown): error is ListingLimitsError {
  return error instanceof ListingLimitsError && error.code !== 'ERR_STORE_UNAVAILABLE';
}

/** A 503 when the store did not answer (`ERR_STORE_UNAVAILABLE`), with `body`, which says what still works. */
export function unreachable(records: Records, body: (req: Request) => Html): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if ((error as { code?: unknown } | null)?.code !== 'ERR_STORE_UNAVAILABLE' || res.headersSent) return next(error);
    records.calls.report(error, req);
    res.setHeader('Retry-After', '10');
    sendPage(res, 503, 'Try again in a moment', body(req), req);
  };
}

/** What an async handler throws goes to the app's error handler, {@link bare}. */
export function handle(fn: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return (req, res, next) => {
    fn(req, res).then(undefined, (error: unknown) => next(bare(error)));
  };
}
