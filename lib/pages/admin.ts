// The operator's page: its options, its login, and its routes (the page, a client's page, every action's form).
import { createHmac } from 'node:crypto';
import type { NextFunction, Request, Response, Router } from 'express';
import { Checker, isPlainObject, show } from '../shared/check.js';
import { ListingLimitsError } from '../shared/errors.js';
import type { Store } from '../stores/store.js';
import type { Grant, ListingLimitsMiddleware } from '../limiter/types.js';
import { clientPage } from './client.js';
import {
  bare,
  checkLimits,
  checkRate,
  checkSecret,
  checkStore,
  field,
  formLimiter,
  handle,
  refuseForgery,
  secureRouter,
  sendPage,
} from './common.js';
import { dashboard } from './dashboard.js';
import { markup } from './html.js';
import { BAN_DURATIONS, clientPath, DAY_MS, EXPIRIES, type View } from './rows.js';
import { CSRF_FIELD, type LoginSession, sameToken, sessions } from './session.js';

/** Decides whether a request may use the operator's page. Sync or async. */
export type Authorize = (req: Request) => boolean | Promise<boolean>;

/** Options of {@link limitsAdmin}. */
export interface AdminPageOptions {
  /**
   * Who may use the page: a function `(req) => boolean` (sync or async) for an app with its own login, or
   * `{ token }`, an admin token of at least 16 characters entered once on the page's login form (then a login session
   * is kept in a signed, `HttpOnly`, `SameSite=Strict` cookie). Required: the page is never open by accident.
   */
  authorize: Authorize | { readonly token: string };
  /**
   * Signs the page's cookies and CSRF tokens: at least 32 characters, the same on every instance behind one
   * address. Default: random for this process (logins and forms then hold on this instance only, until it restarts).
   */
  secret?: string;
  /**
   * Where the limiter of login attempts counts, under counter names of its own. Default: the store of `limits`, so
   * that every instance sharing it shares the counts.
   */
  store?: Store;
  /**
   * Login attempts each client address may make, right or wrong; addresses are grouped as `limits` groups them (IPv6
   * by its `ipv6Subnet`). Default: `{ limit: 10, windowMs: 900000 }`.
   */
  logins?: { limit: number; windowMs: number };
  /**
   * How long a login session lasts from the moment it is made, in milliseconds (at most one year); a cookie older
   * than that is refused, whatever the browser keeps. Default: `28800000` (8 hours).
   */
  sessionMs?: number;
}

function expiryOf(check: Checker, value: string): number | undefined {
  if (value === 'never') return undefined;
  const days = EXPIRIES.find(([v]) => v === value);
  if (!days) check.invalid('expiry', `must be one of the choices; got ${show(value)}.`);
  return Date.now() + Number(value) * DAY_MS;
}

function grantOf(check: Checker, choice: string, multiplier: string, asked: Grant | undefined): Grant {
  if (choice === 'asked' && asked) return asked;
  if (choice === 'unlimited') return 'unlimited';
  if (choice === 'multiplier') return { multiplier: Number(multiplier) };
  return check.invalid('grant', `must be one of the choices; got ${show(choice)}.`);
}

/** A secret as an error message shows it: never its value, only its length. */
function secretShown(value: string): string {
  return value === '' ? 'an empty string' : `a string of ${value.length} character${value.length === 1 ? '' : 's'}`;
}

/** The admin token of `{ token }`: at least 16 characters; one read from an unset variable is told so. */
function checkAdminToken(check: Checker, token: unknown): string {
  if (typeof token === 'string' && token.length >= 16) return token;
  const got = typeof token === 'string' ? secretShown(token) : show(token);
  const unset =
    token === undefined || token === ''
      ? ' If it is read from an environment variable (process.env.ADMIN_TOKEN), set that variable to a secret.'
      : '';
  return check.invalid('options.authorize.token', `must be a string of at least 16 characters; got ${got}.${unset}`);
}

/**
 * The operator's page, as an Express router: `app.use('/admin/limits', limitsAdmin(limits, { authorize }))`. Every
 * route is behind `authorize`, every form that changes something carries a CSRF token, and the page sets a strict
 * Content-Security-Policy. Throws a `ListingLimitsError` naming the field when an option cannot work, and always
 * without `authorize`.
 */
export function limitsAdmin(limits: ListingLimitsMiddleware, options: AdminPageOptions): Router {
  const check: Checker = new Checker('limitsAdmin');
  const { limits: l, linked } = checkLimits(check, limits);
  const o = check.options(options, 'options', '{ authorize }');
  check.unknownKeys(o, ['authorize', 'secret', 'store', 'logins', 'sessionMs'], (k) => `options.${k}`);
  let authorize: Authorize;
  let adminToken: string | undefined;
  const given = o.authorize as AdminPageOptions['authorize'] | undefined;
  if (typeof given === 'function') authorize = given;
  else if (isPlainObject(given)) {
    check.unknownKeys(given, ['token'], (k) => `options.authorize.${k}`, 'a field of authorize');
    adminToken = checkAdminToken(check, given.token);
    authorize = () => false;
  } else if (typeof given === 'string') {
    check.invalid(
      'options.authorize',
      `is ${secretShown(given)}; give an admin token as { token }: ` +
        '`authorize: { token: process.env.ADMIN_TOKEN }`, or a function (req) => boolean.',
    );
  } else {
    check.invalid(
      'options.authorize',
      'is required: a function (req) => boolean that says who may use the page, or { token } for a login form; ' +
        `got ${show(given)}.`,
    );
  }
  const secret = checkSecret(check, o.secret);
  const sessionMs = o.sessionMs === undefined ? 8 * 3600_000 : check.ms(o.sessionMs, 'options.sessionMs');
  const logins = checkRate(check, o.logins, 'options.logins', { limit: 10, windowMs: 900_000 });
  const store = checkStore(check, o.store);
  if (!l.requests.supported)
    check.fail(
      'ERR_UNSUPPORTED_STORE',
      'limits',
      'has a store that keeps no grant requests: use memoryStore() or redisStore().',
    );
  // Counting the last hour starts now.
  l.traffic();

  // A login is bound to the admin token, to the logins' epoch and to the store's state: a new token, a new epoch
  // ("log out everywhere") or a state that replaced the one it was made in (lost, or a copy behind it) ends every login
  // made before; a logout ends its own, on every instance.
  const { registry } = linked;
  const boundTo = (epoch: string) =>
    createHmac('sha256', secret)
      .update(`listing-limits admin login\n${epoch}\n${registry.stateId()}\n${adminToken ?? ''}`)
      .digest('base64url')
      .slice(0, 22);
  const inForce = async (login: LoginSession) => {
    // What another instance changed a moment ago (a logout, a new epoch) holds here from this request on. A store
    // that fails goes to the app's error handler as every error of the pages does: bare.
    await registry.sync().catch((error: unknown) => Promise.reject(bare(error)));
    const epoch = registry.loginEpoch();
    return epoch !== undefined && !registry.loginEnded(login.id) && sameToken(login.bound, boundTo(epoch));
  };
  const cookies = sessions(secret, 'admin', sessionMs, inForce);
  const router = secureRouter();
  router.use(...cookies.start);
  const view = (req: Request, res: Response, client?: string): View => ({
    req,
    base: req.baseUrl,
    csrf: markup`<input type="hidden" name="${CSRF_FIELD}" value="${cookies.token(req, res)}" />`,
    client,
  });
  if (adminToken !== undefined) {
    const token = adminToken;
    const loginPage = (req: Request, res: Response, status: number, message?: string) =>
      sendPage(
        res,
        status,
        'Operator login',
        markup`${message ? markup`<p class="alert" role="alert">${message}</p>` : ''}
          <form class="card" method="post" action="${req.baseUrl}/login">
            ${view(req, res).csrf}
            <label for="admin-token">Admin token</label>
            <input
              type="password"
              id="admin-token"
              name="token"
              autocomplete="current-password"
              spellcheck="false"
              required
            />
            <button type="submit">Log in</button>
          </form>`,
        req,
      );
    authorize = (req) => cookies.login(req) !== undefined;
    router.use(
      formLimiter([{ method: 'POST', path: '/login', ...logins }], 'admin', store ?? linked.store, linked.ipOf),
    );
    router.get('/login', (req, res) => loginPage(req, res, 200));
    router.post(
      '/login',
      handle(async (req, res) => {
        if (!cookies.valid(req)) return refuseForgery(req, res);
        if (!sameToken(field(req.body, 'token'), token)) return loginPage(req, res, 401, 'Wrong admin token.');
        await registry.sync();
        const epoch = await registry.loginsEpoch();
        cookies.logIn(req, res, boundTo(epoch));
        res.redirect(303, `${req.baseUrl}/`);
      }),
    );
  }

  // Every route from here on is the operators'.
  router.use((req: Request, res: Response, next: NextFunction) => {
    Promise.resolve()
      .then(() => authorize(req))
      .then((allowed) => {
        if (allowed === true) return next();
        if (adminToken !== undefined && req.method === 'GET') return res.redirect(303, `${req.baseUrl}/login`);
        sendPage(res, 403, 'Not authorized', markup`<p class="alert" role="alert">You may not use this page.</p>`, req);
      }, next);
  });
  router.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' && req.method !== 'HEAD' && !cookies.valid(req)) return refuseForgery(req, res);
    next();
  });

  router.get(
    '/',
    handle(async (req, res) => {
      const v = view(req, res);
      sendPage(res, 200, 'Rate limits: operators', await dashboard(v, l, linked, adminToken !== undefined), req);
    }),
  );

  /** A 400 page that names the field of a ListingLimitsError (bad input). */
  const notDone = (req: Request, res: Response, error: ListingLimitsError) =>
    sendPage(
      res,
      400,
      'Not done',
      markup`<p class="alert" role="alert">${error.message}</p>
        <p><a href="${req.baseUrl}/">Back to the page</a></p>`,
      req,
    );

  /** The key of a client as a form or an address gives it (`key`), checked as `limits` checks a `{ key }`. */
  const keyOf = (check: Checker, value: unknown) =>
    registry.keyOf(check, { key: typeof value === 'string' ? value : '' }).key;

  router.get(
    '/client',
    handle(async (req, res) => {
      let key: string;
      try {
        key = keyOf(new Checker('limitsAdmin'), req.query.key);
      } catch (error) {
        if (!(error instanceof ListingLimitsError)) throw error;
        return notDone(req, res, error);
      }
      sendPage(res, 200, 'Rate limits: a client', await clientPage(view(req, res, key), key, l, linked), req);
    }),
  );

  /**
   * Runs an action of a form, then goes back to the page it came from (the client's page of `back`, else the
   * operators'): a ListingLimitsError (bad input) is a 400 page that names the field.
   */
  const action = (run: (req: Request, check: Checker) => Promise<string>) =>
    handle(async (req, res) => {
      try {
        const check = new Checker('limitsAdmin');
        const back = field(req.body, 'back');
        const to = back === '' ? `${req.baseUrl}/?` : `${clientPath(req.baseUrl, keyOf(check, back))}&`;
        const done = await run(req, check);
        res.redirect(303, `${to}done=${done}`);
      } catch (error) {
        if (!(error instanceof ListingLimitsError)) throw error;
        notDone(req, res, error);
      }
    });

  /** Finds a client's page: a token is hashed here, so that it never appears in an address or a log. */
  router.post(
    '/search',
    handle(async (req, res) => {
      try {
        const check = new Checker('limitsAdmin');
        const by = check.oneOf(field(req.body, 'by'), ['token', 'ip', 'key'], 'by');
        const value = field(req.body, 'value').trim();
        const { key } = registry.keyOf(check, { [by]: value });
        res.redirect(303, clientPath(req.baseUrl, key));
      } catch (error) {
        if (!(error instanceof ListingLimitsError)) throw error;
        notDone(req, res, error);
      }
    }),
  );
  router.post(
    '/client/reset',
    action(async (req) => {
      const endpoint = field(req.body, 'endpoint');
      await l.reset({ key: field(req.body, 'back') }, endpoint === '' ? undefined : endpoint);
      return 'reset';
    }),
  );

  router.post(
    '/requests/approve',
    action(async (req, check) => {
      const id = field(req.body, 'id');
      const asked = (await l.requests.get(id))?.ask;
      const grant = grantOf(check, field(req.body, 'grant'), field(req.body, 'multiplier'), asked);
      await l.requests.approve(id, grant, { until: expiryOf(check, field(req.body, 'expiry')) });
      return 'approved';
    }),
  );
  router.post(
    '/requests/decline',
    action(async (req) => {
      await l.requests.decline(field(req.body, 'id'), field(req.body, 'reason'));
      return 'declined';
    }),
  );
  router.post(
    '/grants/revoke',
    action(async (req) => ((await l.revoke({ key: field(req.body, 'key') })) ? 'revoked' : 'none')),
  );
  router.post(
    '/grants/expiry',
    action(async (req, check) => {
      const key = field(req.body, 'key');
      const grant = await registry.grantOfKey(key);
      if (!grant) return 'none';
      await l.grant({ key }, grant.grant, { until: expiryOf(check, field(req.body, 'expiry')), note: grant.note });
      return 'expiry';
    }),
  );
  router.post(
    '/bans/lift',
    action(async (req) => ((await l.unban(field(req.body, 'key'))) ? 'lifted' : 'none')),
  );
  router.post(
    '/bans/new',
    action(async (req, check) => {
      const by = check.oneOf(field(req.body, 'by'), ['token', 'ip', 'key'], 'by');
      const value = field(req.body, 'value').trim();
      const seconds = BAN_DURATIONS.find(([s]) => s === field(req.body, 'duration'))?.[0];
      if (!seconds) check.invalid('duration', 'must be one of the choices.');
      const reason = field(req.body, 'reason').trim() || undefined;
      const client = by === 'token' ? { token: value } : by === 'ip' ? { ip: value } : { key: value };
      await l.ban(client, { duration: Number(seconds) * 1000, reason });
      return 'banned';
    }),
  );
  router.post(
    '/lost/restore',
    action(async (req) => ((await l.restoreLost(field(req.body, 'id'))) ? 'restored' : 'none')),
  );
  router.post(
    '/lost/dismiss',
    action(async (req) => ((await l.dismissLost(field(req.body, 'id'))) ? 'removed' : 'none')),
  );
  router.post(
    '/foreign/remove',
    action(async (req) => ((await l.removeForeign(field(req.body, 'id'))) ? 'removed' : 'none')),
  );
  if (adminToken !== undefined) {
    router.post(
      '/logout',
      handle(async (req, res) => {
        const login = cookies.login(req);
        // Ended in the store, so that a copy of its cookie is refused on every instance too.
        if (login) await registry.endLogin(login.id, login.issuedAt + sessionMs);
        cookies.logOut(req, res);
        res.redirect(303, `${req.baseUrl}/login`);
      }),
    );
    router.post(
      '/logout/everywhere',
      handle(async (req, res) => {
        await registry.endLogins();
        cookies.logOut(req, res);
        res.redirect(303, `${req.baseUrl}/login`);
      }),
    );
  }
  return router;
}
