// The operator's page: grant requests to decide, grants and bans to change, the audit trail and the last hour.
import { createHmac } from 'node:crypto';
import type { NextFunction, Request, Response, Router } from 'express';
import { Checker, show } from '../check.js';
import { ListingLimitsError } from '../errors.js';
import type { Store } from '../stores.js';
import type {
  ActiveBan,
  ActiveGrant,
  ChangeEvent,
  ForeignEntry,
  Grant,
  GrantRequest,
  ListingLimitsMiddleware,
  LostRecord,
} from '../types.js';
import { trafficChart } from './chart.js';
import {
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
import { grantText, when } from './describe.js';
import { type Html, markup } from './html.js';
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

const DAY_MS = 24 * 3600_000;
/** The expiries an operator chooses from: days, or none (until revoked). */
const EXPIRIES: readonly (readonly [string, string])[] = [
  ['7', '7 days'],
  ['30', '30 days'],
  ['90', '90 days'],
  ['365', '1 year'],
  ['never', 'until revoked'],
];
const BAN_DURATIONS: readonly (readonly [string, string])[] = [
  ['3600', '1 hour'],
  ['86400', '1 day'],
  ['604800', '7 days'],
  ['2592000', '30 days'],
  ['31536000', '1 year'],
];
/** What a successful action says once back on the page: fixed words, never text from the request. */
const DONE: Readonly<Record<string, string>> = {
  approved: 'The request is approved and the grant given.',
  declined: 'The request is declined.',
  revoked: 'The grant is revoked.',
  expiry: 'The grant has its new expiry.',
  lifted: 'The ban is lifted.',
  banned: 'The client is banned.',
  none: 'Nothing changed: it was already gone.',
  restored: 'The lost record is in force again.',
  removed: 'The entry is removed.',
};

function options(list: readonly (readonly [string, string])[], selected?: string): Html[] {
  return list.map(
    ([value, label]) =>
      markup`<option value="${value}" ${value === selected ? markup` selected` : ''}>${label}</option>`,
  );
}

function proofText(r: GrantRequest): Html {
  const p = r.proof;
  const size = p.kind === 'bot' ? `bot in ${p.servers} servers, ${p.shards} shards` : `server of ${p.members} members`;
  return markup`${size}; <a href="${p.link}" rel="noopener noreferrer nofollow" target="_blank">${p.link}</a>`;
}

/** A key as the page shows it: short, whole in its title. */
function keyText(key: string): Html {
  return markup`<span class="key" title="${key}">${key.length > 24 ? `${key.slice(0, 22)}…` : key}</span>`;
}

interface View {
  readonly req: Request;
  readonly csrf: Html;
  readonly base: string;
}

function requestCard(v: View, r: GrantRequest): Html {
  return markup`<article class="card" aria-labelledby="request-${r.id}">
    <h3 id="request-${r.id}">Request <code>${r.id}</code></h3>
    <table>
      <tbody>
        <tr>
          <th scope="row">Token</th>
          <td>ending in <code>${r.tokenEnd || '(hidden)'}</code>, key ${keyText(r.key)}</td>
        </tr>
        <tr>
          <th scope="row">Asks for</th>
          <td>${grantText(r.ask)}</td>
        </tr>
        <tr>
          <th scope="row">Proof</th>
          <td>${proofText(r)}</td>
        </tr>
        <tr>
          <th scope="row">Contact</th>
          <td>${r.contact}</td>
        </tr>
        <tr>
          <th scope="row">Reason</th>
          <td>${r.reason}</td>
        </tr>
        <tr>
          <th scope="row">Filed</th>
          <td>${when(r.at)}</td>
        </tr>
      </tbody>
    </table>
    <form method="post" action="${v.base}/requests/approve" class="inline">
      ${v.csrf}
      <input type="hidden" name="id" value="${r.id}" />
      <label for="grant-${r.id}">Grant</label>
      <select id="grant-${r.id}" name="grant">
        ${options([
          ['asked', `as asked (${grantText(r.ask)})`],
          ['multiplier', 'every limit multiplied by…'],
          ['unlimited', 'removal of limits'],
        ])}
      </select>
      <label for="multiplier-${r.id}">Multiplier</label>
      <input type="number" id="multiplier-${r.id}" name="multiplier" min="1" step="any" value="10" />
      <label for="expiry-${r.id}">Expires</label>
      <select id="expiry-${r.id}" name="expiry">
        ${options(EXPIRIES, '90')}
      </select>
      <button type="submit">Approve</button>
    </form>
    <form method="post" action="${v.base}/requests/decline">
      ${v.csrf}
      <input type="hidden" name="id" value="${r.id}" />
      <label for="answer-${r.id}">Reason for declining (the requester sees it)</label>
      <textarea id="answer-${r.id}" name="reason" maxlength="2000" required></textarea>
      <button type="submit" class="danger">Decline</button>
    </form>
  </article>`;
}

function decidedRow(r: GrantRequest): Html {
  const outcome =
    r.status === 'approved'
      ? `approved: ${grantText(r.granted ?? r.ask)}, until ${when(r.until, 'revoked')}`
      : `declined: ${r.answer ?? ''}`;
  return markup`<tr>
    <td><code>${r.id}</code></td>
    <td>${keyText(r.key)}</td>
    <td>${grantText(r.ask)}</td>
    <td>${outcome}</td>
    <td>${when(r.decidedAt)}</td>
  </tr>`;
}

function grantRow(v: View, g: ActiveGrant): Html {
  return markup`<tr>
    <td>${keyText(g.key)}</td>
    <td>${grantText(g.grant)}</td>
    <td>${when(g.since)}</td>
    <td>${when(g.until, 'revoked')}</td>
    <td>${g.note ?? ''}</td>
    <td>
      <form method="post" action="${v.base}/grants/expiry" class="inline">
        ${v.csrf}<input type="hidden" name="key" value="${g.key}" /> <label for="expiry-${g.key}">New expiry</label
        ><select id="expiry-${g.key}" name="expiry">
          ${options(EXPIRIES, '30')}
        </select>
        <button type="submit" class="plain">Change</button>
      </form>
      <form method="post" action="${v.base}/grants/revoke" data-confirm="Revoke this grant?">
        ${v.csrf}<input type="hidden" name="key" value="${g.key}" />
        <button type="submit" class="danger">Revoke</button>
      </form>
    </td>
  </tr>`;
}

function banRow(v: View, b: ActiveBan): Html {
  return markup`<tr>
    <td>${keyText(b.key)}</td>
    <td>${b.kind}</td>
    <td>${b.reason}</td>
    <td>${b.by}</td>
    <td>${when(b.since)}</td>
    <td>${when(b.until)}</td>
    <td>
      <form method="post" action="${v.base}/bans/lift">
        ${v.csrf}<input type="hidden" name="key" value="${b.key}" /> <button type="submit" class="plain">Lift</button>
      </form>
    </td>
  </tr>`;
}

function lostRow(v: View, l: LostRecord): Html {
  const what = l.ban
    ? `ban (${l.ban.reason}) until ${when(l.ban.until)}`
    : `grant: ${l.grant ? grantText(l.grant.grant) : ''}, until ${when(l.grant?.until, 'revoked')}`;
  return markup`<tr>
    <td>${keyText(l.key)}</td>
    <td>${what}</td>
    <td>${when(l.lostAt)}</td>
    <td>
      <form method="post" action="${v.base}/lost/restore" class="inline" data-confirm="Apply this record again?">
        ${v.csrf}<input type="hidden" name="id" value="${l.id}" /> <button type="submit" class="plain">Restore</button>
      </form>
      <form method="post" action="${v.base}/lost/dismiss" class="inline">
        ${v.csrf}<input type="hidden" name="id" value="${l.id}" /> <button type="submit" class="plain">Dismiss</button>
      </form>
    </td>
  </tr>`;
}

function foreignRow(v: View, f: ForeignEntry): Html {
  return markup`<tr>
    <td>${f.field === undefined ? 'history' : keyText(f.field)}</td>
    <td><code>${f.text}</code></td>
    <td>${f.problem}</td>
    <td>
      <form method="post" action="${v.base}/foreign/remove" data-confirm="Remove this entry from the store?">
        ${v.csrf}<input type="hidden" name="id" value="${f.id}" /> <button type="submit" class="danger">Remove</button>
      </form>
    </td>
  </tr>`;
}

/**
 * What needs an operator besides requests, grants and bans: records the store lost, and entries of its state that no
 * instance applies. Said only when there are some.
 */
function attention(v: View, lost: readonly LostRecord[], foreign: readonly ForeignEntry[]): Html | '' {
  if (lost.length === 0 && foreign.length === 0) return '';
  return markup`<section id="state" aria-labelledby="state-h">
    <h2 id="state-h">The store's state: lost records (${lost.length}) and foreign entries (${foreign.length})</h2>
    <p class="hint">
      Lost records are operators' bans and grants the store lost (a restart, a flush, a failover): none applies until
      restored. Foreign entries were written by something else and are skipped by every instance.
    </p>
    ${table(
      ['Client', 'Record', 'Lost', ''],
      lost.map((l) => lostRow(v, l)),
      'No record was lost.',
    )}
    ${table(
      ['Entry', 'As stored', 'Problem', ''],
      foreign.map((f) => foreignRow(v, f)),
      'No foreign entry.',
    )}
  </section>`;
}

function eventRow(e: ChangeEvent): Html {
  const detail = [
    e.reason ? `reason: ${e.reason}` : '',
    e.grant ? grantText(e.grant) : '',
    e.until ? `until ${when(e.until)}` : '',
    e.note ? `note: ${e.note}` : '',
  ]
    .filter(Boolean)
    .join('; ');
  return markup`<tr>
    <td>${when(e.at)}</td>
    <td>${e.action}</td>
    <td>${keyText(e.key)}</td>
    <td>${e.by}</td>
    <td>${detail}</td>
  </tr>`;
}

function table(head: readonly string[], rows: Html[], empty: string): Html {
  if (rows.length === 0) return markup`<p class="hint">${empty}</p>`;
  return markup`<div class="table">
    <table>
      <thead>
        <tr>
          ${head.map((h) => markup`<th scope="col">${h}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}

async function dashboard(v: View, limits: ListingLimitsMiddleware, loginForm: boolean): Promise<Html> {
  const [requests, grants, bans, history, lost, foreign] = await Promise.all([
    limits.requests.list(),
    limits.grants(),
    limits.bans(),
    limits.history({ limit: 50 }),
    limits.lost(),
    limits.foreign(),
  ]);
  const traffic = limits.traffic();
  const pending = requests.filter((r) => r.status === 'pending');
  const decided = requests.filter((r) => r.status !== 'pending').slice(0, 10);
  const done = typeof v.req.query.done === 'string' ? DONE[v.req.query.done] : undefined;
  const logout = loginForm
    ? markup`<form method="post" action="${v.base}/logout" class="inline">
          ${v.csrf}<button type="submit" class="plain">Log out</button>
        </form>
        <form
          method="post"
          action="${v.base}/logout/everywhere"
          class="inline"
          data-confirm="End the login of every operator, on every instance?"
        >
          ${v.csrf}<button type="submit" class="plain">Log out everywhere</button>
        </form>`
    : '';
  return markup`<nav>
      <p>
        <a href="#requests">Requests</a> · <a href="#grants">Grants</a> · <a href="#bans">Bans</a> ·
        <a href="#traffic">Last hour</a> · <a href="#audit">Audit trail</a>
      </p>
      ${logout}
    </nav>
    ${done ? markup`<p class="notice" role="status">${done}</p>` : ''}
    <section id="requests" aria-labelledby="requests-h">
      <h2 id="requests-h">Pending grant requests (${pending.length})</h2>
      ${pending.length ? pending.map((r) => requestCard(v, r)) : markup`<p class="hint">No request is waiting.</p>`}
      <h3>Recently decided</h3>
      ${table(['Id', 'Client', 'Asked', 'Decision', 'Decided'], decided.map(decidedRow), 'None yet.')}
    </section>
    <section id="grants" aria-labelledby="grants-h">
      <h2 id="grants-h">Active grants (${grants.length})</h2>
      ${table(
        ['Client', 'Grant', 'Since', 'Until', 'Note', 'Change'],
        grants.map((g) => grantRow(v, g)),
        'No grant is in force.',
      )}
    </section>
    <section id="bans" aria-labelledby="bans-h">
      <h2 id="bans-h">Active bans (${bans.length})</h2>
      ${table(
        ['Client', 'Kind', 'Reason', 'By', 'Since', 'Until', ''],
        bans.map((b) => banRow(v, b)),
        'No ban is in force.',
      )}
      <h3>Ban a client</h3>
      <form method="post" action="${v.base}/bans/new" data-confirm="Ban this client?">
        ${v.csrf}
        <label for="ban-by">Identify it by</label>
        <select id="ban-by" name="by">
          <option value="token">Authorization token</option>
          <option value="ip">IP address</option>
        </select>
        <label for="ban-value">Token or IP address</label>
        <input type="password" id="ban-value" name="value" autocomplete="off" spellcheck="false" />
        <label for="ban-reason">Reason</label>
        <input type="text" id="ban-reason" name="reason" maxlength="500" />
        <label for="ban-duration">For</label>
        <select id="ban-duration" name="duration">
          ${options(BAN_DURATIONS, '86400')}
        </select>
        <button type="submit" class="danger">Ban</button>
      </form>
    </section>
    ${attention(v, lost, foreign)}
    <section id="traffic" aria-labelledby="traffic-h">
      <h2 id="traffic-h">The last hour on this instance</h2>
      ${trafficChart(traffic)}
      ${table(
        ['Endpoint', 'Allowed', 'Refused'],
        traffic.endpoints.map(
          (e) =>
            markup`<tr>
              <td>${e.endpoint}</td>
              <td>${e.allowed}</td>
              <td>${e.refused}</td>
            </tr>`,
        ),
        'No endpoint.',
      )}
      <h3>Clients refused most often</h3>
      ${table(
        ['Client', 'Refusals'],
        traffic.refused.map(
          (r) =>
            markup`<tr>
              <td>${keyText(r.key)}</td>
              <td>${r.count}</td>
            </tr>`,
        ),
        'No client was refused in the last hour.',
      )}
    </section>
    <section id="audit" aria-labelledby="audit-h">
      <h2 id="audit-h">Audit trail</h2>
      ${table(['When', 'Action', 'Client', 'By', 'Details'], history.map(eventRow), 'No change yet.')}
    </section>`;
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
  else if (typeof given === 'object' && given !== null && Object.keys(given).join() === 'token') {
    if (typeof given.token !== 'string' || given.token.length < 16)
      check.invalid('options.authorize.token', 'must be a string of at least 16 characters.');
    adminToken = given.token;
    authorize = () => false;
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

  // A login is bound to the admin token and to the logins' epoch in the store's runtime state: a new token, or a new
  // epoch ("log out everywhere"), ends every login made before; a logout ends its own, on every instance.
  const { registry } = linked;
  const boundTo = (epoch: string) =>
    createHmac('sha256', secret)
      .update(`listing-limits admin login\n${epoch}\n${adminToken ?? ''}`)
      .digest('base64url')
      .slice(0, 22);
  const inForce = async (login: LoginSession) => {
    // What another instance changed a moment ago (a logout, a new epoch) holds here from this request on.
    await registry.sync();
    const epoch = registry.loginEpoch();
    return epoch !== undefined && !registry.loginEnded(login.id) && sameToken(login.bound, boundTo(epoch));
  };
  const cookies = sessions(secret, 'admin', sessionMs, inForce);
  const router = secureRouter();
  router.use(...cookies.start);
  const view = (req: Request, res: Response): View => ({
    req,
    base: req.baseUrl,
    csrf: markup`<input type="hidden" name="${CSRF_FIELD}" value="${cookies.token(req, res)}" />`,
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
        cookies.logIn(req, res, boundTo(await registry.loginsEpoch()));
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
      sendPage(res, 200, 'Rate limits: operators', await dashboard(v, l, adminToken !== undefined), req);
    }),
  );

  /** Runs an action of a form: a ListingLimitsError (bad input) is a 400 page that names the field. */
  const action = (run: (req: Request, check: Checker) => Promise<string>) =>
    handle(async (req, res) => {
      try {
        const done = await run(req, new Checker('limitsAdmin'));
        res.redirect(303, `${req.baseUrl}/?done=${done}`);
      } catch (error) {
        if (!(error instanceof ListingLimitsError)) throw error;
        sendPage(
          res,
          400,
          'Not done',
          markup`<p class="alert" role="alert">${error.message}</p>
            <p><a href="${req.baseUrl}/">Back to the page</a></p>`,
          req,
        );
      }
    });

  router.post(
    '/requests/approve',
    action(async (req, check) => {
      const id = field(req.body, 'id');
      const asked = (await l.requests.list()).find((r) => r.id === id)?.ask;
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
      const grant = (await l.grants()).find((g) => g.key === key);
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
      const by = check.oneOf(field(req.body, 'by'), ['token', 'ip'], 'by');
      const value = field(req.body, 'value').trim();
      const seconds = BAN_DURATIONS.find(([s]) => s === field(req.body, 'duration'))?.[0];
      if (!seconds) check.invalid('duration', 'must be one of the choices.');
      const reason = field(req.body, 'reason').trim() || undefined;
      const client = by === 'token' ? { token: value } : { ip: value };
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
