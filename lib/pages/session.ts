// Cookies of the operator's page: a browser id for CSRF tokens (csrf-csrf's signed double submit) and the login.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import cookieParser from 'cookie-parser';
import { doubleCsrf } from 'csrf-csrf';
import type { CookieOptions, Request, RequestHandler, Response } from 'express';

const BROWSER = 'listing-limits.browser';
const LOGIN = 'listing-limits.admin';
const CSRF = 'listing-limits.csrf';
/** The form field that carries the CSRF token. */
export const CSRF_FIELD = '_csrf';

/** The cookies' settings: only for the page's path, never readable by script, never sent by another site. */
function cookieOptions(req: Request, maxAge?: number): CookieOptions {
  return { httpOnly: true, sameSite: 'strict', secure: req.secure, path: req.baseUrl || '/', signed: true, maxAge };
}

export interface Session {
  /** Reads the cookies, and gives a browser without a valid browser id a new one. */
  readonly start: RequestHandler[];
  /** A CSRF token for the forms of this answer (sets the CSRF cookie). */
  token(req: Request, res: Response): string;
  /** Whether a state-changing request carries the CSRF token of its browser. */
  valid(req: Request): boolean;
  /** Whether the request carries a login cookie in force. */
  loggedIn(req: Request): boolean;
  logIn(req: Request, res: Response): void;
  logOut(req: Request, res: Response): void;
}

/** Compares an admin token in constant time (of their hashes, so lengths tell nothing either). */
export function sameToken(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export function session(secret: string, sessionMs: number): Session {
  // The id of each request's browser: a WeakMap rather than a property on `req`.
  const browsers = new WeakMap<Request, string>();
  const browserOf = (req: Request) => browsers.get(req) ?? '';
  const csrf = doubleCsrf({
    getSecret: () => secret,
    getSessionIdentifier: browserOf,
    cookieName: CSRF,
    cookieOptions: { httpOnly: true, sameSite: 'strict', secure: false, path: '/' },
    getCsrfTokenFromRequest: (req) => {
      const body = req.body as Record<string, unknown> | undefined;
      const value = body?.[CSRF_FIELD];
      return typeof value === 'string' ? value : undefined;
    },
  });
  const signedCookie = (req: Request, name: string): string | undefined => {
    const value = (req.signedCookies as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'string' ? value : undefined;
  };
  const start: RequestHandler = (req, res, next) => {
    let browser = signedCookie(req, BROWSER);
    if (!browser || !/^[\w-]{22}$/.test(browser)) {
      browser = randomBytes(16).toString('base64url');
      res.cookie(BROWSER, browser, cookieOptions(req));
    }
    browsers.set(req, browser);
    next();
  };
  return {
    start: [cookieParser(secret), start],
    token: (req, res) =>
      csrf.generateCsrfToken(req, res, {
        overwrite: false,
        cookieOptions: { httpOnly: true, sameSite: 'strict', secure: req.secure, path: req.baseUrl || '/' },
      }),
    valid: (req) => csrf.validateRequest(req),
    loggedIn(req) {
      const value = signedCookie(req, LOGIN);
      const match = value && /^(\d{13})\.[\w-]{22}$/.exec(value);
      return !!match && Number(match[1]) > Date.now();
    },
    logIn(req, res) {
      const until = Date.now() + sessionMs;
      res.cookie(LOGIN, `${until}.${randomBytes(16).toString('base64url')}`, cookieOptions(req, sessionMs));
    },
    logOut(req, res) {
      const { maxAge: _maxAge, signed: _signed, ...options } = cookieOptions(req);
      res.clearCookie(LOGIN, options);
    },
  };
}
