// Cookies of a page: its form session, the operator's login session, and CSRF tokens derived from the session in use.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CookieOptions, Request, RequestHandler, Response } from 'express';
import { cookieParser, doubleCsrf } from './peers.cjs';

/** The form field that carries the CSRF token. */
export const CSRF_FIELD = '_csrf';
/** How far ahead of this instance's clock another instance may have issued a login: their clocks may differ. */
const CLOCK_SKEW_MS = 60_000;
/** A session id: 16 random bytes, base64url. */
const ID = /^[\w-]{22}$/;
/** A login cookie's value: `<session id>.<issue time, epoch ms>.<what it is bound to>`. */
const LOGIN_VALUE = /^([\w-]{22})\.(\d{13})\.([\w-]{22})$/;

/** A login in force, as its signed cookie carries it. */
export interface LoginSession {
  /** Random, made at login: the CSRF tokens of the operator's forms are derived from it. */
  readonly id: string;
  /** When the login was made, epoch ms: a login ends `sessionMs` later. */
  readonly issuedAt: number;
  /** What the login is bound to (a MAC of the admin token and the logins' epoch): a login in force has it right. */
  readonly bound: string;
}

/**
 * Whether a login, signed and within its lifetime, is still in force: not ended, nor of another token or epoch. What
 * it rejects with goes to the app's error handler as it is.
 */
type InForce = (login: LoginSession) => boolean | Promise<boolean>;

interface Sessions {
  /** Reads the cookies, and gives a browser without a valid form session a new one. */
  readonly start: RequestHandler[];
  /** A CSRF token for the forms of this answer, derived from the request's session (sets the CSRF cookie). */
  token(req: Request, res: Response): string;
  /** Whether a state-changing request carries a CSRF token of its own session. */
  valid(req: Request): boolean;
  /**
   * The request's login in force: signed, of the right shape, issued no more than `lifetimeMs` ago, and in force as
   * `inForce` says.
   */
  login(req: Request): LoginSession | undefined;
  /**
   * Starts a new login session (a new id: the tokens of the page before are no good after it), bound to `bound`.
   */
  logIn(req: Request, res: Response, bound: string): void;
  logOut(req: Request, res: Response): void;
}

/** Compares an admin token in constant time (of their hashes, so lengths tell nothing either). */
export function sameToken(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The cookies' settings: only for the page's path, never readable by script, never sent by another site. */
function cookieOptions(req: Request, maxAge?: number): CookieOptions {
  return { httpOnly: true, sameSite: 'strict', secure: req.secure, path: req.baseUrl || '/', maxAge };
}

/** What a request's cookies hold, once read. */
interface Read {
  readonly form: string;
  readonly login: LoginSession | undefined;
}

/**
 * The sessions of one page, whose cookies are named `listing-limits.<name>…`: a form session (a random id in a
 * signed cookie) for a browser without a login, and, when `lifetimeMs` is given, the login session of the operator,
 * taken only while `inForce` says it is. A CSRF token is bound to the login session when there is one, else to the
 * form session: a token of the login form, of another login or of another browser is no good for an operator's action.
 */
export function sessions(secret: string, name: string, lifetimeMs?: number, inForce?: InForce): Sessions {
  const FORM = `listing-limits.${name}-form`;
  const LOGIN = `listing-limits.${name}`;
  // What each request's cookies hold: a WeakMap rather than a property on `req`.
  const read = new WeakMap<Request, Read>();
  const identity = (req: Request) => {
    const r = read.get(req);
    return r?.login ? `login:${r.login.id}` : `form:${r?.form ?? ''}`;
  };
  const csrf = doubleCsrf({
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
    return { id: match[1] as string, issuedAt, bound: match[3] as string };
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
    token: (req, res) => csrf.generateCsrfToken(req, res, { overwrite: false, cookieOptions: cookieOptions(req) }),
    valid: (req) => csrf.validateRequest(req),
    login: (req) => read.get(req)?.login,
    logIn(req, res, bound) {
      if (lifetimeMs === undefined) throw new Error(`listing-limits.${name} has no login sessions`);
      const session: LoginSession = { id: randomBytes(16).toString('base64url'), issuedAt: Date.now(), bound };
      const value = `${session.id}.${session.issuedAt}.${bound}`;
      res.cookie(LOGIN, value, { ...cookieOptions(req, lifetimeMs), signed: true });
      // The rest of this request (the page it may render) is of the new session.
      read.set(req, { form: read.get(req)?.form ?? '', login: session });
    },
    logOut(req, res) {
      const { maxAge: _maxAge, ...options } = cookieOptions(req);
      res.clearCookie(LOGIN, options);
      read.set(req, { form: read.get(req)?.form ?? '', login: undefined });
    },
  };
}
