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

// Importing the pages without their peer dependencies fails here, at once, naming the packages to install.
if (missing) throw missing;

/** The largest form body the pages read, and the most fields. */
const BODY_LIMIT = '16kb';
const FIELDS_LIMIT = 200;

/**
 * Checks that the page's first argument (`limits` in its errors) is the middleware listingLimits() returned; answers
 * what the middleware tells its pages.
 */
export function checkMiddleware(check: Checker, middleware: unknown): PagesLink {
  const m = middleware as { grant?: unknown; requests?: unknown } | null;
  const link = pagesLinkOf(middleware);
  if (!link || typeof m?.grant !== 'function' || typeof m.requests !== 'object') {
    check.invalid('limits', `must be the middleware listingLimits() returned; got ${show(middleware)}.`);
  }
  return link;
}

/** Refuses a middleware whose store keeps no grant requests (a custom store): both pages need them. */
export function needGrantRequests(check: Checker, middleware: ListingLimitsMiddleware): void {
  if (!middleware.requests.supported)
    check.fail(
      'ERR_UNSUPPORTED_STORE',
      'limits',
      'has a store that keeps no grant requests: use memoryStore() or redisStore().',
    );
}

/** A `{ limit, windowMs }` option of a form's limiter. */
export function checkRate(
  check: Checker,
  value: unknown,
  field: string,
  fallback: { limit: number; windowMs: number },
): { limit: number; windowMs: number } {
  if (value === undefined) return fallback;
  if (!isPlainObject(value)) check.invalid(field, `must be an object { limit, windowMs }; got ${show(value)}.`);
  check.unknownKeys(value, ['limit', 'windowMs'], (k) => `${field}.${k}`);
  return {
    limit: check.count(value.limit, `${field}.limit`),
    windowMs: check.seconds(value.windowMs, `${field}.windowMs`),
  };
}

/** The secret of a page's signed cookies and CSRF tokens: 32 characters or more; random for this process if unset. */
export function checkSecret(check: Checker, secret: unknown): string {
  if (secret === undefined) return randomBytes(32).toString('base64url');
  if (typeof secret !== 'string' || secret.length < 32)
    check.invalid('options.secret', 'must be a string of at least 32 characters.');
  return secret;
}

/** The answer to a state-changing POST from another origin, or without a CSRF token of its session. */
export function refuseForgery(req: Request, res: Response): void {
  sendPage(
    res,
    403,
    'Refused',
    markup`<p class="alert" role="alert">This form did not come from this page, or has expired. Go back, reload the
page and try again.</p><p><a href="${req.baseUrl}/">Back to the page</a></p>`,
    req,
  );
}

/** The status and page of a refusal, as HTML. */
export function sendPage(res: Response, status: number, title: string, body: Html, req: Request): void {
  res
    .status(status)
    .type('html')
    .send(page(title, body, { assets: `${req.baseUrl}/assets` }));
}

/** The answer to a form body that cannot be read: too large (413), or not a form of a known charset. */
function refuseBody(req: Request, res: Response, error: unknown): void {
  const status = (error as { status?: unknown } | null)?.status;
  const large = status === 413;
  const message = large
    ? `This form is too large: ${BODY_LIMIT.replace('kb', ' KB')} and ${FIELDS_LIMIT} fields at most.`
    : 'This form could not be read.';
  sendPage(res, large ? 413 : 400, 'Refused', markup`<p class="alert" role="alert">${message}</p>`, req);
}

/**
 * A router with strict security headers (a CSP that allows no inline script or style and no other origin, no
 * framing), no caching of its pages, its static files, no POST from another origin, and form bodies up to
 * {@link BODY_LIMIT}. A body it cannot read is answered here: the parser's error holds the raw form, which must not
 * reach the app's error handler and its logs.
 */
export function secureRouter(): Router {
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
      // Request ids stay out of other origins' logs; the pages' own forms still tell their origin (no-referrer would
      // make it `Origin: null`, which older browsers, without Sec-Fetch-Site, would then be refused for).
      referrerPolicy: { policy: 'same-origin' },
    }),
  );
  router.get('/assets/pages.css', serveCss);
  router.get('/assets/pages.js', serveJs);
  router.use((req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    // Before the body is read and before the limiters count: another site's page cannot spend an operator's logins.
    if (req.method !== 'GET' && req.method !== 'HEAD' && !sameOrigin(req)) return refuseForgery(req, res);
    next();
  });
  const parse = express.urlencoded({ extended: false, limit: BODY_LIMIT, parameterLimit: FIELDS_LIMIT });
  router.use((req, res, next) => {
    parse(req, res, (error?: unknown) => (error === undefined ? next() : refuseBody(req, res, error)));
  });
  return router;
}

/**
 * What the app's error handler gets of an error met by a page: its name, code, message and stack, nothing else. The
 * errors of other libraries keep what they were given (a Redis client's, the command and its arguments: a request's
 * contact and reason), and that must not reach the app's logs.
 */
export function bare(error: unknown): Error {
  if (!(error instanceof Error)) return new Error('listing-limits/pages: a page failed with a value that is no Error.');
  const copy = new Error(error.message);
  copy.name = error.name;
  copy.stack = error.stack;
  const { code } = error as { code?: unknown };
  if (typeof code === 'string' || typeof code === 'number') Object.assign(copy, { code });
  return copy;
}

/**
 * This package's own middleware in front of a page's forms: each client address gets `rate` of each row, grouped as
 * `limits` groups them (IPv4-mapped as IPv4, IPv6 by `ipv6Subnet`), counted in `store` under names of their own
 * (`listing-limits <page> POST /login`), so that every instance sharing the store shares the counts. A refusal is a
 * page that says when to try again.
 */
export function formLimiter(rows: readonly EndpointRow[], page: string, store: Store, ipOf: IpKey): RequestHandler {
  const named = <S extends { readonly name: string }>(spec: S): S => ({
    ...spec,
    name: `listing-limits ${page} ${spec.name}`,
  });
  // What the forms take of the store, in its public form: its counters, under their names, and how it fails. No
  // runtime state: the forms need none, and so no background reads of it.
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
      sendPage(
        res,
        429,
        'Too many attempts',
        markup`<p class="alert" role="alert">
          Too many attempts from your address. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.
        </p>`,
        req,
      );
    },
  });
  return (req, res, next) => limiter(req, res, (error?: unknown) => (error === undefined ? next() : next(bare(error))));
}

/** A form field's value: the first, when a field is sent more than once; '' when absent. */
export function field(body: unknown, name: string): string {
  const value = isPlainObject(body) ? body[name] : undefined;
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : '';
}

/**
 * Whether an error is bad input of a form, which a page answers with the form and the field named: a
 * `ListingLimitsError`, but for a store that could not be reached (`ERR_STORE_UNAVAILABLE`: see {@link unreachable}).
 */
export function badInput(error: unknown): error is ListingLimitsError {
  return error instanceof ListingLimitsError && error.code !== 'ERR_STORE_UNAVAILABLE';
}

/**
 * One bound for every store call of a page's load (see `CallBound`): the page answers within the store's
 * `callTimeoutMs` in all, whatever it reads and changes.
 */
export function boundEachLoad(records: Records, source: string): RequestHandler {
  return (_req, _res, next) => records.calls.withBound(source, next);
}

/**
 * A page's answer when its store did not answer within `callTimeoutMs`, or failed (`ERR_STORE_UNAVAILABLE`): 503,
 * with `body`, which says what still works; the error goes to the middleware's `onError`. Nothing of the load was
 * changed. Any other error goes on to the app's error handler.
 */
export function unreachable(records: Records, body: (req: Request) => Html): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if ((error as { code?: unknown } | null)?.code !== 'ERR_STORE_UNAVAILABLE' || res.headersSent) return next(error);
    records.calls.report(error, req);
    res.setHeader('Retry-After', '10');
    sendPage(res, 503, 'Try again in a moment', body(req), req);
  };
}

/** Runs an async handler: what it throws goes to the app's error handler, {@link bare}. */
export function handle(fn: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return (req, res, next) => {
    fn(req, res).then(undefined, (error: unknown) => next(bare(error)));
  };
}
