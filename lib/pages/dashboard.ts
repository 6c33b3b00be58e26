// The operator's page: a page of each list (requests, grants, bans), the store's state, the last hour, the changes.
import { bansPage } from '../records/bans.js';
import { grantsPage } from '../records/grants.js';
import type { PagesLink } from '../records/pages-link.js';
import type { ListingLimitsMiddleware, TrafficSummary } from '../limiter/types.js';
import type { ActiveBan, ActiveGrant, ChangeEvent, GrantRequest } from '../records/types.js';
import { trafficChart } from './chart.js';
import { countText } from './describe.js';
import { type Html, markup } from './html.js';
import {
  attention,
  banFields,
  banColumns,
  decidedColumns,
  DONE,
  eventColumns,
  grantColumns,
  keyText,
  labelsOf,
  lastPage,
  pager,
  PER_PAGE,
  requestCard,
  table,
  type Column,
  type View,
} from './rows.js';

/** `?requests=2&grants=1&bans=3`, counted from 1. */
function pageOf(v: View, param: string): number {
  const value = v.req.query[param];
  const n = typeof value === 'string' && /^\d{1,6}$/.test(value) ? Number(value) : 1;
  return Math.max(n, 1);
}

export function doneNotice(v: View): Html | '' {
  const { done } = v.req.query;
  // `?done=constructor` names no action, whatever a plain object inherits.
  const notice = typeof done === 'string' && Object.hasOwn(DONE, done) ? DONE[done] : undefined;
  return notice ? markup`<p class="notice" role="status">${notice}</p>` : '';
}

export function searchForm(v: View): Html {
  return markup`<form method="post" action="${v.base}/search" class="inline" role="search">
    ${v.csrf}
    <label for="search-by">Find a client by</label>
    <select id="search-by" name="by">
      <option value="token">Authorization token</option>
      <option value="ip">IP address</option>
      <option value="key">Key</option>
    </select>
    <label for="search-value">Token, address or key</label>
    <input type="password" id="search-value" name="value" autocomplete="off" spellcheck="false" required />
    <button type="submit">Find</button>
  </form>`;
}

/** With `{ tokens }`, a choice of whose logins to end: every operator's, or one operator's. */
function whoseLogins(v: View): Html | '' {
  if (!v.operators) return '';
  const choice = (name: string) =>
    markup`<option value="${name}" ${name === v.operator ? markup` selected` : ''}>${name}</option>`;
  return markup`<label for="logout-whose">Whose logins</label>
    <select id="logout-whose" name="operator">
      <option value="">every operator's</option>
      ${v.operators.map(choice)}
    </select>`;
}

export function header(v: View, loginForm: boolean, links: Html): Html {
  const confirm = v.operators
    ? 'End the chosen logins, on every instance?'
    : 'End the login of every operator, on every instance?';
  const logout = markup`<form method="post" action="${v.base}/logout">
      ${v.csrf}<button type="submit" class="plain">Log out</button>
    </form>
    <form
      method="post"
      action="${v.base}/logout/everywhere"
      ${v.operators ? markup` class="inline"` : ''}
      data-confirm="${confirm}"
    >
      ${v.csrf}${whoseLogins(v)}<button type="submit" class="plain">Log out everywhere</button>
    </form>`;
  const who = v.operator === undefined ? '' : markup`<p class="who">Operator: <strong>${v.operator}</strong></p>`;
  return markup`<header class="bar">
      <nav aria-label="Page">${links}</nav>
      ${who || loginForm ? markup`<div class="account">${who}${loginForm ? logout : ''}</div>` : ''}
    </header>`;
}

const SECTIONS = markup`<a href="#requests">Requests</a> <a href="#grants">Grants</a> <a href="#bans">Bans</a>
  <a href="#traffic">Last hour</a> <a href="#audit">Audit trail</a>`;

function requestsSection(v: View, total: number, page: number, pending: GrantRequest[], decided: GrantRequest[]): Html {
  return markup`<section id="requests" aria-labelledby="requests-h">
      <h2 id="requests-h">Pending grant requests (${total})</h2>
      ${pending.length ? pending.map((r) => requestCard(v, r)) : markup`<p class="hint">No request is waiting.</p>`}
      ${pager(v, 'requests', page, total)}
      <h3>Recently decided</h3>
      ${table(v, decidedColumns, decided, 'None yet.')}
    </section>`;
}

function grantsSection(v: View, grants: { total: number; offset: number; grants: ActiveGrant[] }): Html {
  return markup`<section id="grants" aria-labelledby="grants-h">
      <h2 id="grants-h">Active grants (${grants.total})</h2>
      ${table(v, grantColumns, grants.grants, 'No grant is in force.')}
      ${pager(v, 'grants', grants.offset / PER_PAGE + 1, grants.total)}
    </section>`;
}

function bansSection(v: View, bans: { total: number; offset: number; bans: ActiveBan[] }): Html {
  return markup`<section id="bans" aria-labelledby="bans-h">
      <h2 id="bans-h">Active bans (${bans.total})</h2>
      ${table(v, banColumns, bans.bans, 'No ban is in force.')}
      ${pager(v, 'bans', bans.offset / PER_PAGE + 1, bans.total)}
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
        ${banFields()}
      </form>
    </section>`;
}

/** A chart of every endpoint, or of the one the table's link chose (`?traffic=<endpoint>`). */
function trafficSection(v: View, traffic: TrafficSummary): Html {
  const asked = v.req.query.traffic;
  const chosen = typeof asked === 'string' ? traffic.endpoints.find((e) => e.endpoint === asked) : undefined;
  const sum = (of: 'allowed' | 'refused') => traffic.endpoints.reduce((n, e) => n + e[of], 0);
  const all = { endpoint: undefined, allowed: sum('allowed'), refused: sum('refused') };
  const endpointColumns: readonly Column<{ endpoint?: string; allowed: number; refused: number }>[] = [
    [
      'Endpoint',
      ({ endpoint }) => {
        const query = endpoint === undefined ? '' : `?traffic=${encodeURIComponent(endpoint)}`;
        const current = endpoint === chosen?.endpoint ? markup` aria-current="true"` : '';
        return markup`<a href="${v.base}/${query}#traffic"${current}>${endpoint ?? 'All endpoints'}</a>`;
      },
    ],
    ['Allowed', (e) => countText(e.allowed)],
    ['Refused', (e) => countText(e.refused)],
  ];
  const refusedColumns: readonly Column<{ key: string; count: number }>[] = [
    ['Client', (r) => keyText(v, r.key)],
    ['Refusals', (r) => countText(r.count)],
  ];
  const subject = chosen?.endpoint ?? 'All endpoints';
  const { instances } = traffic;
  const scope =
    instances === undefined
      ? markup`<h2 id="traffic-h">The last hour in this process</h2>
          <p class="hint">These are this process's requests: other instances are not shown.</p>`
      : markup`<h2 id="traffic-h">The last hour on every instance</h2>
          <p class="hint">${countText(instances)} ${instances === 1 ? 'instance shares' : 'instances share'} the store.
            Each adds its counts every few seconds.</p>`;
  return markup`<section id="traffic" aria-labelledby="traffic-h">
      ${scope}
      <h3>Requests per minute: ${subject}</h3>
      <div class="chart">${trafficChart(subject, chosen?.minutes ?? traffic.minutes)}</div>
      <p class="hint">An endpoint's name shows its own minutes.</p>
      ${table(v, endpointColumns, [all, ...traffic.endpoints], 'No endpoint.')}
      <h3>Clients refused most often</h3>
      ${table(v, refusedColumns, traffic.refused, 'No client was refused in the last hour.')}
    </section>`;
}

function auditSection(v: View, history: ChangeEvent[]): Html {
  return markup`<section id="audit" aria-labelledby="audit-h">
      <h2 id="audit-h">Audit trail</h2>
      ${table(v, eventColumns, history, 'No change yet.')}
    </section>`;
}

/** Each list costs a page of reads, however many the store holds. */
export async function dashboard(
  v: View,
  middleware: ListingLimitsMiddleware,
  link: PagesLink,
  loginForm: boolean,
): Promise<Html> {
  const counts = await middleware.requests.counts();
  const requestsPage = Math.min(pageOf(v, 'requests'), lastPage(counts.pending));
  const [pending, decided, grants, bans, history, lost, foreign] = await Promise.all([
    middleware.requests.list({ status: 'pending', offset: (requestsPage - 1) * PER_PAGE, limit: PER_PAGE }),
    middleware.requests.list({ status: 'decided', limit: 10 }),
    grantsPage(link.records, (pageOf(v, 'grants') - 1) * PER_PAGE, PER_PAGE),
    bansPage(link.records, (pageOf(v, 'bans') - 1) * PER_PAGE, PER_PAGE),
    middleware.history({ limit: PER_PAGE }),
    middleware.lost(),
    middleware.foreign(),
  ]);
  const traffic = middleware.traffic();
  const records = lost.flatMap((l) => l.ban ?? l.grant ?? []);
  const view = { ...v, labels: labelsOf(pending, decided, grants.grants, bans.bans, records) };
  return markup`${header(view, loginForm, SECTIONS)}
    ${searchForm(view)}
    ${doneNotice(view)}
    ${requestsSection(view, counts.pending, requestsPage, pending, decided)}
    ${grantsSection(view, grants)}
    ${bansSection(view, bans)}
    ${attention(view, lost, foreign)}
    ${trafficSection(view, traffic)}
    ${auditSection(view, history)}`;
}
