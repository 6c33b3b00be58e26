// The operator's page: its options, its login, and its routes (the page, a client's page, every action's form).
import { createHmac } from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { Checker, DAY_MS, isPlainObject, show } from '../shared/check.js';
import type { Store } from '../stores/store.js';
import { banClient } from '../records/bans.js';
import { grantInForce } from '../records/grants.js';
import { checkName } from '../records/kinds.js';
import type { Grant } from '../records/types.js';
import type { ListingLimitsMiddleware } from '../limiter/types.js';
import type { PagesLink } from '../records/pages-link.js';
import type { Records } from '../records/records.js';
import { clientPage } from './client.js';
import {
  alertPage,
  badInput,
  bare,
  checkMiddleware,
  checkRate,
  checkSecret,
  field,
  formLimiter,
  handle,
  needGrantRequests,
  pageRouter,
  refuseForgery,
  sendPage,
  unreachable,
} from './common.js';
import { checkStore } from '../stores/option.js';
import { dashboard } from './dashboard.js';
import { markup } from './html.js';
import { BAN_DURATIONS, clientPath, EXPIRIES, type View } from './rows.js';
import { type LoginSession, sameToken, type Sessions, sessions } from './session.js';

/**
 * Decides whether a request may use the operator's page: `true`, or the operator's name (1 to 64 letters, digits or
 * `_.@-`), which the page's changes record. Sync or async.
 */
export type Authorize = (req: Request) => boolean | string | Promise<boolean | string>;

/** Options of {@link limitsAdmin}. */
export interface AdminPageOptions {
  /**
   * Who may use the page: `(req) => boolean | name` (sync or async); `{ token }`, an admin token of at least 16
   * characters for the page's login form; or `{ tokens }`, a token per operator's name (at most 100), whose login
   * names the operator in every change. Required.
   */
  authorize: Authorize | { readonly token: string } | { readonly tokens: Readonly<Record<string, string>> };
  /** Signs cookies and CSRF tokens: 32 characters or more, the same on every instance. Default: random per process. */
  secret?: string;
  /** Where the limiter of login attempts counts. Default: the store of `limits`. */
  store?: Store;
  /** Login attempts per client address, right or wrong. Default: `{ limit: 10, windowMs: 900000 }`. */
  logins?: { limit: number; windowMs: number };
  /** Milliseconds a login lasts from when it is made, at most a year. Default: `28800000` (8 hours). */
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

/** Never a secret's value, only its length. */
function secretShown(value: string): string {
  return value === '' ? 'an empty string' : `a string of ${value.length} character${value.length === 1 ? '' : 's'}`;
}

/** Who may log in: one admin token (no name), or a token per operator. */
interface Operator {
  readonly name: string | undefined;
  readonly token: string;
}

const MOST_OPERATORS = 100;

function checkAdminToken(check: Checker, token: unknown, field = 'options.authorize.token'): string {
  if (typeof token === 'string' && token.length >= 16) return token;
  const got = typeof token === 'string' ? secretShown(token) : show(token);
  const unset =
    token === undefined || token === ''
      ? ' If it is read from an environment variable (process.env.ADMIN_TOKEN), set that variable to a secret.'
      : '';
  return check.invalid(field, `must be a string of at least 16 characters; got ${got}.${unset}`);
}

function checkOperatorTokens(check: Checker, tokens: unknown): Operator[] {
  const field = 'options.authorize.tokens';
  const count = isPlainObject(tokens) ? Object.keys(tokens).length : 0;
  if (!isPlainObject(tokens) || count === 0 || count > MOST_OPERATORS)
    check.invalid(field, `must be an object of 1 to ${MOST_OPERATORS} operators' tokens by name, { alice: '…' }.`);
  const operators: Operator[] = [];
  for (const [name, token] of Object.entries(tokens)) {
    checkName(check, name, `${field} key`);
    const checked = checkAdminToken(check, token, `${field}.${name}`);
    const same = operators.find((o) => o.token === checked);
    if (same)
      check.invalid(`${field}.${name}`, `is the token of ${same.name}: give each operator a token of their own.`);
    operators.push({ name, token: checked });
  }
  return operators;
}

function checkAuthorize(check: Checker, given: unknown): { authorize?: Authorize; operators?: Operator[] } {
  if (typeof given === 'function') return { authorize: given as Authorize };
  if (isPlainObject(given)) {
    check.unknownKeys(given, ['token', 'tokens'], (k) => `options.authorize.${k}`, 'a field of authorize');
    if (given.token !== undefined && given.tokens !== undefined)
      check.invalid('options.authorize', 'takes { token } or { tokens }, not both.');
    if (given.tokens !== undefined) return { operators: checkOperatorTokens(check, given.tokens) };
    return { operators: [{ name: undefined, token: checkAdminToken(check, given.token) }] };
  }
  if (typeof given === 'string') {
    check.invalid(
      'options.authorize',
      `is ${secretShown(given)}; give an admin token as { token }: ` +
        '`authorize: { token: process.env.ADMIN_TOKEN }`, tokens by name as { tokens }, or a function ' +
        '(req) => boolean.',
    );
  }
  return check.invalid(
    'options.authorize',
    'is required: a function (req) => boolean that says who may use the page, or { token } or { tokens } for a ' +
      'login form; ' +
      `got ${show(given)}.`,
  );
}

type AdminConfig = ReturnType<typeof checkAdminOptions>;

function checkAdminOptions(check: Checker, options: unknown, link: PagesLink) {
  const o = check.options(options, 'options', '{ authorize }');
  check.unknownKeys(o, ['authorize', 'secret', 'store', 'logins', 'sessionMs'], (k) => `options.${k}`);
  const { authorize, operators } = checkAuthorize(check, o.authorize);
  return {
    // Without `authorize` with `{ token }` or `{ tokens }`, whose login decides.
    authorize,
    operators,
    secret: checkSecret(check, o.secret),
    sessionMs: check.ms(o.sessionMs, 'options.sessionMs', 8 * 3600_000),
    logins: checkRate(check, o.logins, 'options.logins', { limit: 10, windowMs: 900_000 }),
    store: o.store === undefined ? link.store : checkStore(o.store, check),
  };
}

interface Admin {
  readonly middleware: ListingLimitsMiddleware;
  readonly link: PagesLink;
  readonly config: AdminConfig;
  readonly cookies: Sessions;
  readonly boundTo: (epoch: string, operator: Operator) => string;
  /** The operator's name of each request the gate let through, when it has one. */
  readonly names: WeakMap<Request, string>;
}

/**
 * A login is bound to its token, the logins' epoch and the store's state, and a named one to its operator's ending:
 * a new one of any ends it.
 */
function adminSessions(config: AdminConfig, records: Records): Pick<Admin, 'cookies' | 'boundTo'> {
  const boundTo = (epoch: string, { name, token }: Operator) => {
    const named = name === undefined ? '' : `\n${name}\n${records.logins.operatorEpoch(name)}`;
    return createHmac('sha256', config.secret)
      .update(`listing-limits admin login\n${epoch}\n${records.logins.stateId()}\n${token}${named}`)
      .digest('base64url')
      .slice(0, 22);
  };
  const inForce = async (login: LoginSession) => {
    // So that another instance's logout or new epoch holds here at once.
    await records.sync().catch((error: unknown) => Promise.reject(bare(error)));
    const epoch = records.logins.epoch();
    const operator = config.operators?.find((o) => o.name === login.name);
    if (epoch === undefined || operator === undefined || records.logins.ended(login.id)) return false;
    return sameToken(login.bound, boundTo(epoch, operator));
  };
  return { cookies: sessions(config.secret, 'admin', config.sessionMs, inForce), boundTo };
}

function viewOf(admin: Admin, req: Request, res: Response, client?: string): View {
  const names = admin.config.operators?.flatMap((o) => o.name ?? []);
  return {
    req,
    base: req.baseUrl,
    csrf: admin.cookies.csrf(req, res),
    client,
    operator: admin.names.get(req),
    operators: names && names.length > 0 ? names : undefined,
  };
}

/** The login form of `{ token }` or `{ tokens }`; answers the `authorize` it makes. */
function mountLogin(router: Router, admin: Admin, operators: readonly Operator[]): Authorize {
  const { cookies, link, config } = admin;
  const records = link.records;
  const loginPage = (req: Request, res: Response, status: number, message?: string) =>
    sendPage(
      res,
      status,
      'Operator login',
      markup`${message ? markup`<p class="alert" role="alert">${message}</p>` : ''}
          <form class="card" method="post" action="${req.baseUrl}/login">
            ${cookies.csrf(req, res)}
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
  router.use(formLimiter([{ method: 'POST', path: '/login', ...config.logins }], 'admin', config.store, link.ipOf));
  router.get('/login', (req, res) => loginPage(req, res, 200));
  router.post(
    '/login',
    handle(async (req, res) => {
      if (!cookies.valid(req)) return refuseForgery(req, res);
      const given = field(req.body, 'token');
      // Every token is compared, whichever matches: the time tells no name.
      const matches = operators.filter((o) => sameToken(given, o.token));
      const operator = matches[0];
      if (!operator) return loginPage(req, res, 401, 'Wrong admin token.');
      await records.sync();
      const epoch = await records.logins.epochNow();
      cookies.logIn(req, res, admin.boundTo(epoch, operator), operator.name);
      res.redirect(303, `${req.baseUrl}/`);
    }),
  );
  return (req) => {
    const login = cookies.login(req);
    return login === undefined ? false : (login.name ?? true);
  };
}

/** An answer of `authorize` that is a name the page cannot record refuses the request, and is told to `onError`. */
function answeredName(admin: Admin, req: Request, allowed: unknown): string | undefined {
  try {
    return checkName(new Checker('limitsAdmin'), allowed, 'the answer of options.authorize');
  } catch (error) {
    admin.link.records.calls.report(error, req);
    return undefined;
  }
}

function mountGate(router: Router, admin: Admin, authorize: Authorize): void {
  router.use((req: Request, res: Response, next: NextFunction) => {
    Promise.resolve()
      .then(() => authorize(req))
      .then((allowed) => {
        if (allowed === true) return next();
        const name = typeof allowed === 'string' ? answeredName(admin, req, allowed) : undefined;
        if (name !== undefined) {
          admin.names.set(req, name);
          return next();
        }
        if (admin.config.operators !== undefined && req.method === 'GET')
          return res.redirect(303, `${req.baseUrl}/login`);
        alertPage(req, res, 403, 'Not authorized', 'You may not use this page.');
      }, next);
  });
  router.use((req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'GET' && req.method !== 'HEAD' && !admin.cookies.valid(req)) return refuseForgery(req, res);
    next();
  });
}

function keyOf(records: Records, check: Checker, value: unknown): string {
  return records.keyOf(check, { key: typeof value === 'string' ? value : '' }).key;
}

function mountPages(router: Router, admin: Admin): void {
  const { middleware, link } = admin;
  const loginForm = admin.config.operators !== undefined;
  router.get(
    '/',
    handle(async (req, res) => {
      const v = viewOf(admin, req, res);
      sendPage(res, 200, 'Rate limits: operators', await dashboard(v, middleware, link, loginForm), req);
    }),
  );
  router.get(
    '/client',
    form(async (req, res, check) => {
      const key = keyOf(link.records, check, req.query.key);
      const page = await clientPage(viewOf(admin, req, res, key), key, middleware, link, loginForm);
      sendPage(res, 200, 'Rate limits: a client', page, req);
    }),
  );
}

/** Runs a form: bad input is a 400 page that names its field. */
function form(run: (req: Request, res: Response, check: Checker) => Promise<void>): RequestHandler {
  return handle(async (req, res) => {
    try {
      await run(req, res, new Checker('limitsAdmin'));
    } catch (error) {
      if (!badInput(error)) throw error;
      alertPage(req, res, 400, 'Not done', error.message, true);
    }
  });
}

/** Runs a form's action and goes back to the page of `back`, or the operators'. */
function action(records: Records, run: (req: Request, check: Checker) => Promise<string>): RequestHandler {
  return form(async (req, res, check) => {
    const back = field(req.body, 'back');
    const to = back === '' ? `${req.baseUrl}/?` : `${clientPath(req.baseUrl, keyOf(records, check, back))}&`;
    const done = await run(req, check);
    res.redirect(303, `${to}done=${done}`);
  });
}

function mountActions(router: Router, admin: Admin): void {
  const { records } = admin.link;
  // A POST, so that a token is hashed here and never appears in an address or a log.
  router.post(
    '/search',
    form(async (req, res, check) => {
      const by = check.oneOf(field(req.body, 'by'), ['token', 'ip', 'key'], 'by');
      const { key } = records.keyOf(check, { [by]: field(req.body, 'value').trim() });
      res.redirect(303, clientPath(req.baseUrl, key));
    }),
  );
  for (const [path, run] of Object.entries(actionsOf(admin))) router.post(path, action(records, run));
}

/** What each form's action does, and the word of what was done: `none` when the record was already gone. */
function actionsOf({
  middleware,
  link,
  names,
}: Admin): Record<string, (req: Request, check: Checker) => Promise<string>> {
  const ended = async (end: Promise<boolean>, done: string) => ((await end) ? done : 'none');
  // Who made each change: the name the gate found, if any.
  const byOf = (req: Request) => ({ by: names.get(req) });
  return {
    '/client/reset': async (req) => {
      const endpoint = field(req.body, 'endpoint');
      await middleware.reset({ key: field(req.body, 'back') }, endpoint === '' ? undefined : endpoint, byOf(req));
      return 'reset';
    },
    '/bans/new': async (req, check) => {
      const by = check.oneOf(field(req.body, 'by'), ['token', 'ip', 'key'], 'by');
      const value = field(req.body, 'value').trim();
      const seconds = BAN_DURATIONS.find(([s]) => s === field(req.body, 'duration'))?.[0];
      if (!seconds) check.invalid('duration', 'must be one of the choices.');
      const reason = field(req.body, 'reason').trim() || undefined;
      const client = by === 'token' ? { token: value } : by === 'ip' ? { ip: value } : { key: value };
      // The ban shows the token as its grant request does.
      const [request] =
        by === 'key' && value.startsWith('t:') ? await middleware.requests.find(client, { limit: 1 }) : [];
      const options = { duration: Number(seconds) * 1000, reason, ...byOf(req) };
      await banClient(link.records, client, options, request?.tokenEnd);
      return 'banned';
    },
    '/requests/approve': async (req, check) => {
      const id = field(req.body, 'id');
      const asked = (await middleware.requests.get(id))?.ask;
      const grant = grantOf(check, field(req.body, 'grant'), field(req.body, 'multiplier'), asked);
      await middleware.requests.approve(id, grant, { until: expiryOf(check, field(req.body, 'expiry')), ...byOf(req) });
      return 'approved';
    },
    '/requests/decline': async (req) => {
      await middleware.requests.decline(field(req.body, 'id'), field(req.body, 'reason'), byOf(req));
      return 'declined';
    },
    '/grants/expiry': async (req, check) => {
      const key = field(req.body, 'key');
      const grant = await grantInForce(link.records, key);
      if (!grant) return 'none';
      await middleware.grant({ key }, grant.grant, {
        until: expiryOf(check, field(req.body, 'expiry')),
        note: grant.note,
        ...byOf(req),
      });
      return 'expiry';
    },
    '/grants/revoke': (req) => ended(middleware.revoke({ key: field(req.body, 'key') }, byOf(req)), 'revoked'),
    '/bans/lift': (req) => ended(middleware.unban(field(req.body, 'key'), byOf(req)), 'lifted'),
    '/lost/restore': (req) => ended(middleware.restoreLost(field(req.body, 'id'), byOf(req)), 'restored'),
    '/lost/dismiss': (req) => ended(middleware.dismissLost(field(req.body, 'id')), 'removed'),
    '/foreign/remove': (req) => ended(middleware.removeForeign(field(req.body, 'id')), 'removed'),
  };
}

function mountLogout(router: Router, { cookies, link, config, names }: Admin): void {
  router.post(
    '/logout',
    handle(async (req, res) => {
      const login = cookies.login(req);
      // In the store, so that a copy of its cookie is refused on every instance too.
      if (login) await link.records.logins.end(login.id, login.issuedAt + config.sessionMs);
      cookies.logOut(req, res);
      res.redirect(303, `${req.baseUrl}/login`);
    }),
  );
  // Every operator's logins, or one operator's, as the form chose.
  const named = config.operators?.flatMap((o) => o.name ?? []) ?? [];
  router.post(
    '/logout/everywhere',
    form(async (req, res, check) => {
      const whose = named.length === 0 ? '' : check.oneOf(field(req.body, 'operator'), ['', ...named], 'operator');
      if (whose === '') await link.records.logins.endAll();
      else await link.records.logins.endOperator(whose);
      if (whose !== '' && whose !== names.get(req)) return res.redirect(303, `${req.baseUrl}/?done=loggedout`);
      cookies.logOut(req, res);
      res.redirect(303, `${req.baseUrl}/login`);
    }),
  );
}

/**
 * The operator's page, as a router: `app.use('/admin/limits', limitsAdmin(limits, { authorize }))`, where operators
 * decide grant requests and ban, grant and find clients. Throws a `ListingLimitsError` for an option that cannot work.
 */
export function limitsAdmin(middleware: ListingLimitsMiddleware, options: AdminPageOptions): Router {
  const check: Checker = new Checker('limitsAdmin');
  const link = checkMiddleware(check, middleware);
  const config = checkAdminOptions(check, options, link);
  needGrantRequests(check, middleware);
  // Counting the last hour starts now.
  middleware.traffic();

  const admin: Admin = { middleware, link, config, names: new WeakMap(), ...adminSessions(config, link.records) };
  const router = pageRouter(link.records, 'limitsAdmin', admin.cookies);
  const { operators } = config;
  const authorize = operators === undefined ? (config.authorize as Authorize) : mountLogin(router, admin, operators);
  mountGate(router, admin, authorize);
  mountPages(router, admin);
  mountActions(router, admin);
  if (operators !== undefined) mountLogout(router, admin);
  router.use(
    unreachable(
      link.records,
      (req) => markup`<p class="alert" role="alert">The store of the rate limits' state (Redis) did not answer in time:
        nothing was changed, and this page cannot be shown now.</p>
        <p>What still works: the API answers its requests as the store's <code>onFailure</code> says (by default each
        instance counts them in its own memory), and every instance keeps applying the bans and grants it last read.
        Bans, grants and grant requests can be changed again, and this page shown, as soon as the store answers.</p>
        <p><a href="${req.baseUrl}/">Try again</a></p>`,
    ),
  );
  return router;
}
