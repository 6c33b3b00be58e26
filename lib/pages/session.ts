// Cookies of a page: its form session, the operator's login session, and CSRF tokens derived from the session in use.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CookieOptions, Request, RequestHandler, Response } from 'express';
import { type Html, markup } from './html.js';
import { cookieParser, doubleCsrf } from './peers.cjs';

const CSRF_FIELD = '_csrf';
/** How far ahead of this instance's clock another instance may have issued a login. */
const CLOCK_SKEW_MS = 60_000;
const ID = /^[\w-]{22}$/;
/** A login cookie's value: `<session id>.<issue time, epoch ms>.<what it is bound to>[.<operator's name>]`. */
const LOGIN_VALUE = /^([\w-]{22})\.(\d{13})\.([\w-]{22})(?:\.([\w.@-]{1,64}))?$/;

/** A login in force, as its signed cookie carries it. */
export interface LoginSession {
  /** The operator's CSRF tokens are derived from it. */
  readonly id: string;
  readonly issuedAt: number;
  /** A MAC of the admin token and the logins' epoch. */
  readonly bound: string;
  /** The operator's, with named tokens. */
  readonly name: string | undefined;
}

/** Whether a signed login within its lifetime is still in force: not ended, nor of another token or epoch. */
type InForce = (login: LoginSession) => boolean | Promise<boolean>;

export type Sessions = ReturnType<typeof sessions>;

/** In constant time, of their hashes, so that lengths tell nothing either. */
export function sameToken(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

function cookieOptions(req: Request, maxAge?: number): CookieOptions {
  return { httpOnly: true, sameSite: 'strict', secure: req.secure, path: req.baseUrl || '/', maxAge };
}

/**
 * A form session for every browser and, with `lifetimeMs`, an operator's login session. A CSRF token is bound to the
 * login when there is one: a token of the login form, another login or another browser is no good for an action.
 */
export function sessions(secret: string, name: string, lifetimeMs?: number, inForce?: InForce) {
  const FORM = `listing-limits.${name}-form`;
  const LOGIN = `listing-limits.${name}`;
  const read = new WeakMap<Request, { form: string; login: LoginSession | undefined }>();
  const identity = (req: Request) => {
    const r = read.get(req);
    return r?.login ? `login:${r.login.id}` : `form:${r?.form ?? ''}`;
  };
  const tokens = doubleCsrf({
    getSecret: () => secret,
    getSessionIdentifier: identity,
    cookieName: `listing-limits.${name}-csrf`,
    getCsrfTokenFromRequest: (req) => {
      const body = req.body as Record<string, unknown> | undefined;
      const value = body?.[CSRF_FIELD];
      return typeof value === 'string' ? value : undefined;
    },
  });
  const signedCookie = (req: Request, cookie: string): string | undefined => {
    const value = (req.signedCookies as Record<string, unknown> | undefined)?.[cookie];
    return typeof value === 'string' ? value : undefined;
  };
  const loginOf = (req: Request): LoginSession | undefined => {
    if (lifetimeMs === undefined) return undefined;
    const match = LOGIN_VALUE.exec(signedCookie(req, LOGIN) ?? '');
    if (!match) return undefined;
    const issuedAt = Number(match[2]);
    const now = Date.now();
    if (issuedAt > now + CLOCK_SKEW_MS || now - issuedAt >= lifetimeMs) return undefined;
    return { id: match[1] as string, issuedAt, bound: match[3] as string, name: match[4] };
  };
  const start: RequestHandler = (req, res, next) => {
    let form = signedCookie(req, FORM);
    if (!form || !ID.test(form)) {
      form = randomBytes(16).toString('base64url');
      res.cookie(FORM, form, { ...cookieOptions(req), signed: true });
    }
    const login = loginOf(req);
    const done = (inForceNow: boolean) => {
      read.set(req, { form, login: inForceNow ? login : undefined });
      next();
    };
    if (!login || !inForce) return done(login !== undefined);
    Promise.resolve()
      .then(() => inForce(login))
      .then(done, (error: unknown) => next(error));
  };
  return {
    start: [cookieParser(secret), start],
    /** The hidden field of a form's CSRF token. */
    csrf(req: Request, res: Response): Html {
      const token = tokens.generateCsrfToken(req, res, { overwrite: false, cookieOptions: cookieOptions(req) });
      return markup`<input type="hidden" name="${CSRF_FIELD}" value="${token}" />`;
    },
    valid: (req: Request) => tokens.validateRequest(req),
    login: (req: Request) => read.get(req)?.login,
    /** A new id: the tokens of the page before are no good after it. */
    logIn(req: Request, res: Response, bound: string, operator?: string): void {
      if (lifetimeMs === undefined) throw new Error(`listing-limits.${name} has no login sessions`);
      const id = randomBytes(16).toString('base64url');
      const session: LoginSession = { id, issuedAt: Date.now(), bound, name: operator };
      const value = `${session.id}.${session.issuedAt}.${bound}${operator === undefined ? '' : `.${operator}`}`;
      res.cookie(LOGIN, value, { ...cookieOptions(req, lifetimeMs), signed: true });
      // The page this request may render is of the new session.
      read.set(req, { form: read.get(req)?.form ?? '', login: session });
    },
    logOut(req: Request, res: Response): void {
      const { maxAge: _maxAge, ...options } = cookieOptions(req);
      res.clearCookie(LOGIN, options);
      read.set(req, { form: read.get(req)?.form ?? '', login: undefined });
    },
  };
}
