// A client's page on the operator's page: its counters now, its refusals, ban, grant, requests and changes.
import { bansOf } from '../records/bans.js';
import { grantInForce } from '../records/grants.js';
import type { PagesLink } from '../records/pages-link.js';
import type { EndpointUsage, ListingLimitsMiddleware } from '../limiter/types.js';
import { clientLabel, when } from './describe.js';
import { type Html, markup } from './html.js';
import { doneNotice, header, searchForm } from './dashboard.js';
import { badInput } from './common.js';
import {
  banFields,
  banColumns,
  button,
  type Column,
  decidedColumns,
  eventColumns,
  grantColumns,
  hidden,
  labelsOf,
  PER_PAGE,
  requestCard,
  table,
  type View,
} from './rows.js';

const usageColumns: readonly Column<EndpointUsage>[] = [
  ['Endpoint', (u) => u.endpoint],
  ['Counter', (u) => u.counter ?? ''],
  ['Window', (u) => `${u.windowMs / 1000} s`],
  ['Used', (u) => u.used],
  ['Left', (u) => (u.counter === undefined ? 'not counted (removal of limits)' : `${u.remaining} of ${u.limit}`)],
  ['Frees one at', (u) => (u.resetTime ? when(u.resetTime) : '')],
  ['', (u, v) => button(v, 'reset', ['endpoint', u.endpoint])],
];

/** Read without counting. */
async function counters(v: View, middleware: ListingLimitsMiddleware, key: string): Promise<Html> {
  let usage: EndpointUsage[];
  try {
    usage = await middleware.usage({ key });
  } catch (error) {
    if (!badInput(error)) throw error;
    return markup`<p class="hint">${error.message}</p>`;
  }
  return markup`${table(v, usageColumns, usage, 'No endpoint.')}${button(v, 'clear')}`;
}

/** Bounded whatever the store holds: a client has at most two bans and one grant, and the lists are cut. */
export async function clientPage(
  page: View,
  key: string,
  middleware: ListingLimitsMiddleware,
  link: PagesLink,
  loginForm: boolean,
): Promise<Html> {
  const { records, traffic } = link;
  const [usage, bans, grant, requests, history] = await Promise.all([
    counters(page, middleware, key),
    bansOf(records, key),
    grantInForce(records, key),
    middleware.requests.find({ key }, { limit: PER_PAGE }),
    middleware.history(),
  ]);
  const pending = requests.filter((r) => r.status === 'pending');
  const decided = requests.filter((r) => r.status !== 'pending');
  const changes = history.filter((e) => e.key === key).slice(0, PER_PAGE);
  const refusals = traffic.refusalsOf(key);
  const v = { ...page, labels: labelsOf(bans, grant ? [grant] : [], requests) };
  const back = markup`<a href="${v.base}/">← Every request, grant and ban</a>`;
  return markup`${header(v, loginForm, back)}
    ${searchForm(v)} ${doneNotice(v)}
    <section id="client" aria-labelledby="client-h">
      <h2 id="client-h">Client: ${clientLabel(key, v.labels.get(key))}</h2>
      <p>Key <code>${key}</code></p>
      <p>Refused ${refusals} time${refusals === 1 ? '' : 's'} in the last hour on this instance.</p>
      <h3>Counters now</h3>
      ${usage}
    </section>
    <section id="bans" aria-labelledby="bans-h">
      <h2 id="bans-h">Bans in force (${bans.length})</h2>
      ${table(v, banColumns, bans, 'No ban is in force.')}
      <h3>Ban this client</h3>
      <form method="post" action="${v.base}/bans/new" class="inline" data-confirm="Ban this client?">
        ${hidden(v)}<input type="hidden" name="by" value="key" /><input type="hidden" name="value" value="${key}" />
        ${banFields()}
      </form>
    </section>
    <section id="grants" aria-labelledby="grants-h">
      <h2 id="grants-h">Grant in force</h2>
      ${table(v, grantColumns, grant ? [grant] : [], 'No runtime grant is in force.')}
    </section>
    <section id="requests" aria-labelledby="requests-h">
      <h2 id="requests-h">Grant requests (${pending.length} pending)</h2>
      ${pending.map((r) => requestCard(v, r))}
      ${table(v, decidedColumns, decided, 'No decided request.')}
    </section>
    <section id="audit" aria-labelledby="audit-h">
      <h2 id="audit-h">Changes</h2>
      ${table(v, eventColumns, changes, 'No change of this client.')}
    </section>`;
}
