// The rows and cards of the operator's pages: requests, grants, bans, lost records, foreign entries, changes, pages.
import type { Request } from 'express';
import type { ActiveBan, ActiveGrant, ChangeEvent, ForeignEntry, GrantRequest, LostRecord } from '../records/types.js';
import { clientLabel, grantText, when } from './describe.js';
import { type Html, markup } from './html.js';

export const EXPIRIES: readonly (readonly [string, string])[] = [
  ['7', '7 days'],
  ['30', '30 days'],
  ['90', '90 days'],
  ['365', '1 year'],
  ['never', 'until revoked'],
];
export const BAN_DURATIONS: readonly (readonly [string, string])[] = [
  ['3600', '1 hour'],
  ['86400', '1 day'],
  ['604800', '7 days'],
  ['2592000', '30 days'],
  ['31536000', '1 year'],
];
/** Fixed words, never text from the request. */
export const DONE: Readonly<Record<string, string>> = {
  approved: 'The request is approved and the grant given.',
  declined: 'The request is declined.',
  revoked: 'The grant is revoked.',
  expiry: 'The grant has its new expiry.',
  lifted: 'The ban is lifted.',
  banned: 'The client is banned.',
  none: 'Nothing changed: it was already gone.',
  restored: 'The lost record is in force again.',
  removed: 'The entry is removed.',
  reset: 'The client’s counters are cleared.',
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
  return markup`${size}; <a href="${p.link}" rel="noopener noreferrer nofollow" target="_blank">${clip(p.link)}</a>`;
}

/** Rows and characters of a text a page shows at the most, so that it stays small whatever the store holds. */
export const PER_PAGE = 50;
const SHOWN = 200;

/** What every row of a page needs. */
export interface View {
  readonly req: Request;
  readonly csrf: Html;
  readonly base: string;
  /** The key of the client whose page this is: its forms lead back to it. */
  readonly client?: string;
  /** A token's last characters, by key. */
  readonly labels?: ReadonlyMap<string, string>;
}

/** So that a client reads the same on every row of a page, as its grant request shows it. */
export function labelsOf(...lists: readonly (readonly { key: string; tokenEnd: string }[])[]): Map<string, string> {
  const labels = new Map<string, string>();
  for (const list of lists)
    for (const { key, tokenEnd } of list) if (tokenEnd && !labels.has(key)) labels.set(key, tokenEnd);
  return labels;
}

function clip(text: string): string {
  return text.length > SHOWN ? `${text.slice(0, SHOWN)}…` : text;
}

export function clientPath(base: string, key: string): string {
  return `${base}/client?key=${encodeURIComponent(key)}`;
}

export function keyText(v: View, key: string): Html {
  const end = v.labels?.get(key);
  // A key in letters of code; a label in words.
  const kind = end && key.startsWith('t:') ? 'client' : 'key';
  return markup`<a class="${kind}" href="${clientPath(v.base, key)}" title="${key}">${clientLabel(key, end)}</a>`;
}

export function hidden(v: View): Html {
  const back = v.client === undefined ? '' : markup`<input type="hidden" name="back" value="${v.client}" />`;
  return markup`${v.csrf}${back}`;
}

export function pager(v: View, param: string, page: number, total: number): Html | '' {
  const pages = lastPage(total);
  if (pages === 1) return '';
  const link = (n: number, label: string) => markup` · <a href="${v.base}/?${param}=${n}#${param}">${label}</a>`;
  const previous = page > 1 ? link(page - 1, '← Previous') : '';
  const next = page < pages ? link(page + 1, 'Next →') : '';
  return markup`<p class="pager">Page ${page} of ${pages} (${total} in all)${previous}${next}</p>`;
}

export function lastPage(total: number): number {
  return Math.max(Math.ceil(total / PER_PAGE), 1);
}

export function requestCard(v: View, r: GrantRequest): Html {
  return markup`<article class="card" aria-labelledby="request-${r.id}">
    <h3 id="request-${r.id}">Request <code>${r.id}</code></h3>
    <table>
      <tbody>
        <tr>
          <th scope="row">Client</th>
          <td>${keyText(v, r.key)}</td>
        </tr>
        <tr>
          <th scope="row">From</th>
          <td>${r.network === undefined ? 'no address given' : keyText(v, r.network)}</td>
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
          <td>${clip(r.contact)}</td>
        </tr>
        <tr>
          <th scope="row">Reason</th>
          <td>${clip(r.reason)}</td>
        </tr>
        <tr>
          <th scope="row">Filed</th>
          <td>${when(r.at)}</td>
        </tr>
      </tbody>
    </table>
    <form method="post" action="${v.base}/requests/approve" class="inline">
      ${hidden(v)}
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
      ${hidden(v)}
      <input type="hidden" name="id" value="${r.id}" />
      <label for="answer-${r.id}">Reason for declining (the requester sees it)</label>
      <textarea id="answer-${r.id}" name="reason" maxlength="2000" required></textarea>
      <button type="submit" class="danger">Decline</button>
    </form>
  </article>`;
}

function decidedRow(v: View, r: GrantRequest): Html {
  const outcome =
    r.status === 'approved'
      ? `approved: ${grantText(r.granted ?? r.ask)}, until ${when(r.until, 'revoked')}`
      : `declined: ${r.answer ?? ''}`;
  return markup`<tr>
    <td><code>${r.id}</code></td>
    <td>${keyText(v, r.key)}</td>
    <td>${grantText(r.ask)}</td>
    <td>${outcome}</td>
    <td>${when(r.decidedAt)}</td>
  </tr>`;
}

function grantRow(v: View, g: ActiveGrant): Html {
  return markup`<tr>
    <td>${keyText(v, g.key)}</td>
    <td>${grantText(g.grant)}</td>
    <td>${when(g.since)}</td>
    <td>${when(g.until, 'revoked')}</td>
    <td>${clip(g.note ?? '')}</td>
    <td>
      <form method="post" action="${v.base}/grants/expiry" class="inline">
        ${hidden(v)}<input type="hidden" name="key" value="${g.key}" /> <label for="expiry-${g.key}">New expiry</label
        ><select id="expiry-${g.key}" name="expiry">
          ${options(EXPIRIES, '30')}
        </select>
        <button type="submit" class="plain">Change</button>
      </form>
      <form method="post" action="${v.base}/grants/revoke" data-confirm="Revoke this grant?">
        ${hidden(v)}<input type="hidden" name="key" value="${g.key}" />
        <button type="submit" class="danger">Revoke</button>
      </form>
    </td>
  </tr>`;
}

export function banFields(): Html {
  return markup`<label for="ban-reason">Reason</label>
        <input type="text" id="ban-reason" name="reason" maxlength="500" />
        <label for="ban-duration">For</label>
        <select id="ban-duration" name="duration">
          ${options(BAN_DURATIONS, '86400')}
        </select>
        <button type="submit" class="danger">Ban</button>`;
}

function banRow(v: View, b: ActiveBan): Html {
  return markup`<tr>
    <td>${keyText(v, b.key)}</td>
    <td>${b.kind}</td>
    <td>${clip(b.reason)}</td>
    <td>${b.by}</td>
    <td>${when(b.since)}</td>
    <td>${when(b.until)}</td>
    <td>
      <form method="post" action="${v.base}/bans/lift">
        ${hidden(v)}<input type="hidden" name="key" value="${b.key}" />
        <button type="submit" class="plain">Lift</button>
      </form>
    </td>
  </tr>`;
}

function lostRow(v: View, l: LostRecord): Html {
  const what = l.ban
    ? `ban (${clip(l.ban.reason)}) until ${when(l.ban.until)}`
    : `grant: ${l.grant ? grantText(l.grant.grant) : ''}, until ${when(l.grant?.until, 'revoked')}`;
  return markup`<tr>
    <td>${keyText(v, l.key)}</td>
    <td>${what}</td>
    <td>${when(l.lostAt)}</td>
    <td>
      <form method="post" action="${v.base}/lost/restore" class="inline" data-confirm="Apply this record again?">
        ${hidden(v)}<input type="hidden" name="id" value="${l.id}" />
        <button type="submit" class="plain">Restore</button>
      </form>
      <form method="post" action="${v.base}/lost/dismiss" class="inline">
        ${hidden(v)}<input type="hidden" name="id" value="${l.id}" />
        <button type="submit" class="plain">Dismiss</button>
      </form>
    </td>
  </tr>`;
}

function foreignRow(v: View, f: ForeignEntry): Html {
  return markup`<tr>
    <td>${f.field === undefined ? 'history' : markup`<code>${f.field}</code>`}</td>
    <td><code>${f.text}</code></td>
    <td>${f.problem}</td>
    <td>
      <form method="post" action="${v.base}/foreign/remove" data-confirm="Remove this entry from the store?">
        ${hidden(v)}<input type="hidden" name="id" value="${f.id}" />
        <button type="submit" class="danger">Remove</button>
      </form>
    </td>
  </tr>`;
}

export function attention(v: View, lost: readonly LostRecord[], foreign: readonly ForeignEntry[]): Html | '' {
  if (lost.length === 0 && foreign.length === 0) return '';
  const cut = lost.length > PER_PAGE || foreign.length > PER_PAGE;
  return markup`<section id="state" aria-labelledby="state-h">
    <h2 id="state-h">The store's state: lost records (${lost.length}) and foreign entries (${foreign.length})</h2>
    <p class="hint">
      Lost records are operators' bans and grants the store lost (a restart, a flush, a failover): none applies until
      restored. Foreign entries were written by something else and are skipped by every instance.
    </p>
    ${cut ? markup`<p class="hint">The first ${PER_PAGE} of each are shown.</p>` : ''}
    ${table(
      ['Client', 'Record', 'Lost', ''],
      lost.slice(0, PER_PAGE).map((l) => lostRow(v, l)),
      'No record was lost.',
    )}
    ${table(
      ['Entry', 'As stored', 'Problem', ''],
      foreign.slice(0, PER_PAGE).map((f) => foreignRow(v, f)),
      'No foreign entry.',
    )}
  </section>`;
}

function eventRow(v: View, e: ChangeEvent): Html {
  const detail = [
    e.reason ? `reason: ${clip(e.reason)}` : '',
    e.grant ? grantText(e.grant) : '',
    e.until ? `until ${when(e.until)}` : '',
    e.note ? `note: ${clip(e.note)}` : '',
  ]
    .filter(Boolean)
    .join('; ');
  return markup`<tr>
    <td>${when(e.at)}</td>
    <td>${e.action}</td>
    <td>${keyText(v, e.key)}</td>
    <td>${e.by}</td>
    <td>${detail}</td>
  </tr>`;
}

export function table(head: readonly string[], rows: Html[], empty: string): Html {
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

export function decidedTable(v: View, requests: readonly GrantRequest[], empty: string): Html {
  return table(
    ['Id', 'Client', 'Asked', 'Decision', 'Decided'],
    requests.map((r) => decidedRow(v, r)),
    empty,
  );
}

export function grantTable(v: View, grants: readonly ActiveGrant[], empty: string): Html {
  return table(
    ['Client', 'Grant', 'Since', 'Until', 'Note', 'Change'],
    grants.map((g) => grantRow(v, g)),
    empty,
  );
}

export function banTable(v: View, bans: readonly ActiveBan[], empty: string): Html {
  return table(
    ['Client', 'Kind', 'Reason', 'By', 'Since', 'Until', ''],
    bans.map((b) => banRow(v, b)),
    empty,
  );
}

export function eventTable(v: View, events: readonly ChangeEvent[], empty: string): Html {
  return table(
    ['When', 'Action', 'Client', 'By', 'Details'],
    events.map((e) => eventRow(v, e)),
    empty,
  );
}
