// What both pages share: their options' checks, security headers, body limits, the limiter of their forms, errors.
import { randomBytes } from 'node:crypto';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import helmet from 'helmet';
import { type Checker, isPlainObject, show } from '../check.js';
import { listingLimits } from '../middleware.js';
import type { EndpointRow } from '../listings.js';
import type { CounterSpec, Store } from '../stores.js';
import type { ListingLimitsMiddleware } from '../types.js';
import { serveCss, serveJs } from './assets.js';
import { type Html, markup, page } from './html.js';

/** The largest form body the pages read. */
export const BODY_LIMIT = '16kb';

/** Checks that `limits` is what listingLimits() returned. */
export function checkLimits(check: Checker, limits: unknown): ListingLimitsMiddleware {
  const l = limits as { grant?: unknown; requests?: unknown } | null;
  if (typeof limits !== 'function' || typeof l?.grant !== 'function' || typeof l.requests !== 'object') {
    check.invalid('limits', `must be the middleware listingLimits() returned; got ${show(limits)}.`);
  }
  return limits as ListingLimitsMiddleware;
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

/** The store of a form's limiter: as listingLimits checks it. */
export function checkStore(check: Checker, store: unknown): Store | undefined {
  if (store !== undefined && typeof store !== 'function')
    check.invalid('options.store', `must be a store such as memoryStore() or redisStore(client); got ${show(store)}.`);
  return store as Store | undefined;
}

/** The secret of a page's signed cookies and CSRF tokens: 32 characters or more; random for this process if unset. */
export function checkSecret(check: Checker, secret: unknown): string {
  if (secret === undefined) return randomBytes(32).toString('base64url');
  if (typeof secret !== 'string' || secret.length < 32)
    check.invalid('options.secret', 'must be a string of at least 32 characters.');
  return secret;
}

/** The answer to a state-changing POST without the CSRF token of its browser. */
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

/**
 * A router with strict security headers (a CSP that allows no inline script or style and no other origin, no
 * framing), no caching of its pages, its static files, and form bodies up to {@link BODY_LIMIT}.
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
      // The pages open no other origin's resource: a strict referrer policy keeps request ids out of other logs.
      referrerPolicy: { policy: 'no-referrer' },
    }),
  );
  router.get('/assets/pages.css', serveCss);
  router.get('/assets/pages.js', serveJs);
  router.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  router.use(express.urlencoded({ extended: false, limit: BODY_LIMIT, parameterLimit: 200 }));
  return router;
}

/**
 * This package's own middleware in front of a page's forms: each client address gets `rate` of each row, and a
 * refusal is a page that says when to try again.
 */
export function formLimiter(rows: readonly EndpointRow[], store: Store | undefined): ListingLimitsMiddleware {
  // The counters of the store only: the forms need no runtime state, and so no background reads of it.
  const counters = store && (Object.assign((spec: CounterSpec) => store(spec), { failure: store.failure }) as Store);
  return listingLimits(rows, {
    store: counters,
    // By address only: a form's Authorization header (or its absence) must not give a fresh counter.
    key: (req) => `ip:${req.ip ?? 'unknown'}`,
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
}

/** A form field's value: the first, when a field is sent more than once; '' when absent. */
export function field(body: unknown, name: string): string {
  const value = isPlainObject(body) ? body[name] : undefined;
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === 'string' ? first : '';
}

/** Runs an async handler: what it throws goes to the app's error handler. */
export function handle(fn: (req: Request, res: Response) => Promise<void>): RequestHandler {
  return (req, res, next) => {
    fn(req, res).then(undefined, next);
  };
}
