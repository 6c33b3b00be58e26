// The contact page of rule 6: a client asks for extended limits with proof of its size, and checks its request later.
import type { Request, Response, Router } from 'express';
import ipaddr from 'ipaddr.js';
import { Checker, DAY_MS } from '../shared/check.js';
import type { EndpointRow } from '../contract/listings.js';
import type { Store } from '../stores/store.js';
import type { GrantProof, GrantRequest, GrantRequestInput } from '../records/types.js';
import type { ListingLimitsMiddleware } from '../limiter/types.js';
import { type ListingLimitsError } from '../shared/errors.js';
import {
  badInput,
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
import { clientLabel, grantText, perWindow, when } from './describe.js';
import { type Html, markup } from './html.js';
import { sessions } from './session.js';
import {
  LARGEST_COUNT,
  LONGEST_CONTACT,
  LONGEST_LINK,
  LONGEST_REASON,
  LONGEST_TOKEN,
  PENDING_KEPT_MS,
} from '../records/grant-requests.js';

/** Options of {@link limitsRequestPage}. */
export interface RequestPageOptions {
  /** Where the limiter of the page's forms counts. Default: the store of `limits`. */
  store?: Store;
  /** Requests each client address may file. Default: `{ limit: 5, windowMs: 3600000 }` (5 an hour). */
  submissions?: { limit: number; windowMs: number };
  /** Status checks each client address may make. Default: `{ limit: 30, windowMs: 900000 }`. */
  checks?: { limit: number; windowMs: number };
  /** Signs the form's CSRF tokens: 32 characters or more, the same on every instance. Default: random per process. */
  secret?: string;
}

/** The form's own bounds; its texts and counts are bounded as `requests.file()` bounds them. */
const LARGEST_MULTIPLIER = 1000;
const LARGEST_LIMIT = 1e9;

/** As typed, to fill the form again when it is refused (never the token). */
type Form = Record<string, string>;
type Errors = Record<string, string>;

const FIELDS = ['ask', 'multiplier', 'kind', 'servers', 'shards', 'members', 'link', 'contact', 'reason'] as const;

function wholeNumber(text: string, largest: number): number | undefined {
  if (!/^\d{1,13}$/.test(text.trim())) return undefined;
  const n = Number(text.trim());
  return n <= largest ? n : undefined;
}

function validate(
  form: Form,
  token: string,
  rows: readonly EndpointRow[],
): { errors: Errors; input?: GrantRequestInput } {
  const errors: Errors = {};
  if (token.trim() === '') errors.token = 'Enter the Authorization token your client sends.';
  else if (token.length > LONGEST_TOKEN) errors.token = `This token is too long (${LONGEST_TOKEN} characters at most).`;

  let ask: GrantRequestInput['ask'] | undefined;
  if (form.ask === 'unlimited') ask = 'unlimited';
  else if (form.ask === 'multiplier') {
    const m = Number(form.multiplier);
    if (!/^\d+(\.\d+)?$/.test(form.multiplier?.trim() ?? '') || !(m > 1) || m > LARGEST_MULTIPLIER)
      errors.multiplier = `Enter a multiplier above 1 and at most ${LARGEST_MULTIPLIER}, e.g. 10.`;
    else ask = { multiplier: m };
  } else if (form.ask === 'endpoints') {
    const wanted: EndpointRow[] = [];
    let bad = false;
    rows.forEach((row, i) => {
      const text = (form[`limit_${i}`] ?? '').trim();
      if (text === '') return;
      const n = wholeNumber(text, LARGEST_LIMIT);
      if (n === undefined || n <= row.limit) bad = true;
      else wanted.push({ ...row, limit: n });
    });
    if (bad) errors.rows = 'Each limit you fill in must be a whole number above the current limit.';
    else if (wanted.length === 0) errors.rows = 'Fill in the limit you want for at least one endpoint.';
    else ask = { rows: wanted };
  } else errors.ask = 'Choose what you ask for.';

  let proof: GrantProof | undefined;
  const link = (form.link ?? '').trim();
  const url = URL.canParse(link) ? new URL(link) : undefined;
  if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:') || link.length > LONGEST_LINK)
    errors.link = 'Enter a link (https://…) where the size of your service can be checked.';
  if (form.kind === 'bot') {
    const servers = wholeNumber(form.servers ?? '', LARGEST_COUNT);
    const shards = wholeNumber(form.shards ?? '', LARGEST_COUNT);
    if (servers === undefined) errors.servers = 'Enter the number of servers your bot is in.';
    if (shards === undefined) errors.shards = 'Enter the number of shards your bot runs (1 if it is not sharded).';
    if (servers !== undefined && shards !== undefined && url) proof = { kind: 'bot', servers, shards, link: url.href };
  } else if (form.kind === 'server') {
    const members = wholeNumber(form.members ?? '', LARGEST_COUNT);
    if (members === undefined) errors.members = 'Enter the number of members of your server.';
    else if (url) proof = { kind: 'server', members, link: url.href };
  } else errors.kind = 'Say whether your service is a bot or a server.';

  const contact = (form.contact ?? '').trim();
  if (!/^[^\s@<>"]+@[^\s@<>"]+\.[^\s@<>"]+$/.test(contact) || contact.length > LONGEST_CONTACT)
    errors.contact = 'Enter an e-mail address where we can answer you.';
  const reason = (form.reason ?? '').trim();
  if (reason.length < 10 || reason.length > LONGEST_REASON)
    errors.reason = `Tell us why you need more, in 10 to ${LONGEST_REASON} characters.`;

  if (Object.keys(errors).length > 0 || !ask || !proof) return { errors };
  return { errors, input: { token, ask, proof, contact, reason } };
}

/** A refusal of `requests.file()` on the form's field: `input.ask.rows[1].limit` on the endpoints'. */
function refusal(error: ListingLimitsError): Errors {
  const at = error.field.replace(/^input\./, '');
  const detail = error.message.slice(error.message.indexOf(error.field) + error.field.length).trim();
  if (at.startsWith('ask.rows')) return { rows: `A limit you filled in ${detail}` };
  const proof = at.startsWith('proof.') ? at.slice('proof.'.length) : undefined;
  let name: string;
  if (at.startsWith('ask.multiplier')) name = 'multiplier';
  else if (at.startsWith('ask')) name = 'ask';
  else if (proof !== undefined) name = (FIELDS as readonly string[]).includes(proof) ? proof : 'kind';
  else name = at === 'token' || at === 'contact' || at === 'reason' ? at : 'ask';
  return { [name]: `This value ${detail}` };
}

function fieldError(errors: Errors, name: string): { attrs: Html; message: Html } {
  const error = errors[name];
  if (!error) return { attrs: markup``, message: markup`` };
  return {
    attrs: markup` aria-invalid="true" aria-describedby="error-${name}"`,
    message: markup`<p class="error" id="error-${name}">${error}</p>`,
  };
}

function input(form: Form, errors: Errors, name: string, label: string, type: string, hint?: string): Html {
  const { attrs, message } = fieldError(errors, name);
  const extra = type === 'number' ? markup` min="0" step="1" inputmode="numeric"` : markup``;
  return markup`<label for="${name}">${label}</label>${hint ? markup`<p class="hint">${hint}</p>` : ''}${message}
    <input type="${type}" id="${name}" name="${name}" value="${form[name] ?? ''}" ${extra}${attrs} />`;
}

/** The style sheet shows the fields of the chosen one (`data-when-<name>`), without script. */
function radio(form: Form, name: string, value: string, label: string): Html {
  return markup`<label class="choice"
    ><input type="radio" name="${name}" value="${value}" ${form[name] === value ? markup` checked` : ''} />
    ${label}</label
  >`;
}

function anchor(name: string): string {
  return name === 'rows' ? 'limit_0' : name;
}

function requestForm(req: Request, rows: readonly EndpointRow[], form: Form, errors: Errors, csrf: Html): Html {
  const names = Object.keys(errors);
  const summary =
    names.length === 0
      ? ''
      : markup`<div class="alert" role="alert">
          <p><strong>The request was not filed.</strong> Please correct:</p>
          <ul>
            ${names.map((name) => markup`<li><a href="#${anchor(name)}">${errors[name]}</a></li>`)}
          </ul>
        </div>`;
  const error = (name: string) => fieldError(errors, name);
  return markup`${summary}<form class="card" method="post" action="${req.baseUrl}/" novalidate>
    ${csrf}
<p>Rule 6 of the rate-limit contract: extended limits, or removal of limits, may be granted on request, with
approval, when you prove the size of your service. An operator reads every request.</p>
<label for="token">Authorization token</label>
<p class="hint">The value your client sends in <code>Authorization</code>. It is hashed at once and never stored or
shown; only its last 4 characters are kept, so that you can recognise it.${
    names.length > 0 ? ' For your safety it is not filled in again: enter it once more.' : ''
  }</p>${error('token').message}
<input type="password" id="token" name="token" autocomplete="off" spellcheck="false"${error('token').attrs}>
<fieldset id="ask"${error('ask').attrs}><legend>What you ask for</legend>${error('ask').message}
${radio(form, 'ask', 'multiplier', 'Every limit multiplied')}
${radio(form, 'ask', 'endpoints', 'Higher limits on some endpoints')}
${radio(form, 'ask', 'unlimited', 'Removal of limits')}
<div data-when-ask="multiplier">
  ${input(form, errors, 'multiplier', 'Multiplier', 'text', 'e.g. 10 for ten times every limit.')}
</div>
<div data-when-ask="endpoints"><p class="hint">The limit you want per window, for the endpoints you need; leave the
others empty.</p>${error('rows').message}<div class="rows">${rows.map(
    (row, i) =>
      markup`<label for="limit_${i}"
          >${row.method} ${row.path} <span class="hint">(now ${perWindow(row.limit, row.windowMs)})</span></label
        >
        <input
          type="number"
          id="limit_${i}"
          name="limit_${i}"
          min="1"
          step="1"
          inputmode="numeric"
          value="${form[`limit_${i}`] ?? ''}"
          ${error('rows').attrs}
        />`,
  )}</div></div>
</fieldset>
<fieldset id="kind"${error('kind').attrs}><legend>Proof of size</legend>${error('kind').message}
${radio(form, 'kind', 'bot', 'A bot')}
${radio(form, 'kind', 'server', 'A server')}
<div data-when-kind="bot">${input(form, errors, 'servers', 'Servers the bot is in', 'number')}
${input(form, errors, 'shards', 'Shard count', 'number')}</div>
<div data-when-kind="server">${input(form, errors, 'members', 'Member count', 'number')}</div>
${input(form, errors, 'link', 'Link to check it', 'url', 'A public page where the numbers can be seen.')}
</fieldset>
${input(form, errors, 'contact', 'Contact e-mail', 'email')}
<label for="reason">Why you need more</label>${error('reason').message}
<textarea id="reason" name="reason" maxlength="${LONGEST_REASON}"${error('reason').attrs}
>${form.reason ?? ''}</textarea>
<button type="submit">Send the request</button>
</form>
<p><a href="${req.baseUrl}/status">Check a request you filed</a></p>`;
}

function statusForm(req: Request, id: string, message?: Html): Html {
  return markup`${message ?? ''}
    <form class="card" method="post" action="${req.baseUrl}/status">
      <label for="id">Request id</label>
      <input type="text" id="id" name="id" value="${id}" autocomplete="off" spellcheck="false" />
      <label for="token">Authorization token</label>
      <p class="hint">The token the request was filed with: only its requester can see a request.</p>
      <input type="password" id="token" name="token" autocomplete="off" spellcheck="false" />
      <button type="submit">Check the status</button>
    </form>
    <p><a href="${req.baseUrl}/">File a new request</a></p>`;
}

function statusOf(r: GrantRequest): Html {
  const asked = markup`<p>
    Asked: ${grantText(r.ask)}, filed ${when(r.at)}, for the ${clientLabel(r.key, r.tokenEnd)}.
  </p>`;
  if (r.status === 'pending')
    return markup`<div class="notice" role="status">
      <p><strong>Pending.</strong> An operator has not decided yet.</p>
      ${asked}
    </div>`;
  if (r.status === 'approved')
    return markup`<div class="notice" role="status">
      <p><strong>Approved:</strong> ${grantText(r.granted ?? r.ask)}, until ${when(r.until, 'revoked')}.</p>
      ${asked}
    </div>`;
  return markup`<div class="alert" role="status">
    <p><strong>Declined.</strong> The operator's answer:</p>
    <p>${r.answer ?? ''}</p>
    ${asked}
  </div>`;
}

/**
 * The contact page of rule 6, as a router: `app.use('/limits/request', limitsRequestPage(limits))`, where a client
 * asks for extended limits and checks its request. Throws a `ListingLimitsError` for an option that cannot work.
 */
export function limitsRequestPage(middleware: ListingLimitsMiddleware, options?: RequestPageOptions): Router {
  const check: Checker = new Checker('limitsRequestPage');
  const link = checkMiddleware(check, middleware);
  const o = check.options(options, 'options', '{ store, submissions, checks }');
  check.unknownKeys(o, ['store', 'submissions', 'checks', 'secret'], (k) => `options.${k}`);
  const cookies = sessions(checkSecret(check, o.secret), 'contact');
  const submissions = checkRate(check, o.submissions, 'options.submissions', { limit: 5, windowMs: 3_600_000 });
  const checks = checkRate(check, o.checks, 'options.checks', { limit: 30, windowMs: 900_000 });
  const store = o.store === undefined ? link.store : checkStore(o.store, check);
  needGrantRequests(check, middleware);
  const rows = middleware.requests.endpoints;

  const router = pageRouter(link.records, 'limitsRequestPage', cookies);
  router.use(
    formLimiter(
      [
        { method: 'POST', path: '/', ...submissions },
        { method: 'POST', path: '/status', ...checks },
      ],
      'contact',
      store,
      link.ipOf,
    ),
  );
  const title = 'Ask for extended limits';
  const formPage = (req: Request, res: Response, status: number, form: Form = {}, errors: Errors = {}) =>
    sendPage(res, status, title, requestForm(req, rows, form, errors, cookies.csrf(req, res)), req);
  router.get('/', (req, res) => formPage(req, res, 200));
  router.post(
    '/',
    handle(async (req, res) => {
      if (!cookies.valid(req)) return refuseForgery(req, res);
      const form: Form = {};
      for (const name of FIELDS) form[name] = field(req.body, name);
      rows.forEach((_row, i) => (form[`limit_${i}`] = field(req.body, `limit_${i}`)));
      const { errors, input } = validate(form, field(req.body, 'token'), rows);
      if (!input) return formPage(req, res, 400, form, errors);
      let filed: GrantRequest;
      try {
        // An address that is none (a header a proxy passed on) is no network.
        filed = await middleware.requests.file(req.ip && ipaddr.isValid(req.ip) ? { ...input, ip: req.ip } : input);
      } catch (error) {
        if (!badInput(error)) throw error;
        if (error.code === 'ERR_TOO_MANY_PENDING') {
          const who = error.field === 'input.ip' ? 'Your network has' : 'Your token has';
          const kept = `${PENDING_KEPT_MS / DAY_MS} days`;
          const many = markup`<p class="alert" role="alert">${who} as many requests pending as it may. Wait for an
            operator’s decision (check it with the id you were given), or for a request to expire after ${kept}.</p>`;
          return sendPage(res, 429, title, many, req);
        }
        // E.g. a multiplier beyond what sliding windows keep.
        return formPage(req, res, 400, form, refusal(error));
      }
      res.redirect(303, `${req.baseUrl}/status?id=${encodeURIComponent(filed.id)}&filed=1`);
    }),
  );
  router.get('/status', (req, res) => {
    const id = typeof req.query.id === 'string' && /^[\w-]{1,64}$/.test(req.query.id) ? req.query.id : '';
    const filed =
      req.query.filed === '1' && id
        ? markup`<div class="notice" role="status">
            <p>
              <strong>Your request is filed.</strong> Its id is <code>${id}</code>: keep it, with your token, to check
              its status here.
            </p>
          </div>`
        : undefined;
    sendPage(res, 200, 'Your request', statusForm(req, id, filed), req);
  });
  router.post(
    '/status',
    handle(async (req: Request, res: Response) => {
      const id = field(req.body, 'id').trim();
      const found = await middleware.requests.status(id, field(req.body, 'token'));
      if (!found) {
        const message = markup`<p class="alert" role="alert">No request has this id for this token.</p>`;
        return sendPage(res, 404, 'Your request', statusForm(req, id, message), req);
      }
      sendPage(res, 200, 'Your request', markup`${statusOf(found)}${statusForm(req, id)}`, req);
    }),
  );
  router.use(
    unreachable(
      link.records,
      () => markup`<p class="alert" role="alert">Requests cannot be filed or checked right now: nothing was filed. The
        API itself keeps answering. Try again in a few minutes.</p>`,
    ),
  );
  return router;
}
