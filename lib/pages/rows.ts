// The rows and cards of the operator's pages: requests, grants, bans, lost records, foreign entries, changes, pages.
import type { Request } from 'express';
import { clip } from '../shared/check.js';
import type { ActiveBan, ActiveGrant, ChangeEvent, ForeignEntry, GrantRequest, LostRecord } from '../records/types.js';
import { clientLabel, grantText, when } from './describe.js';
import { type Html, markup, type Part } from './html.js';

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
  loggedout: 'The operator’s logins are ended, on every instance.',
};

interface Button {
  readonly path: string;
  readonly label: string;
  /** Of an action that removes something. */
  readonly danger?: true;
  readonly inline?: true;
  /** Asked before it is sent. */
  readonly confirm?: string;
}

/** The forms of one button; the page answers each with `?done=`. */
const BUTTONS = {
  revoke: { path: '/grants/revoke', label: 'Revoke', danger: true, confirm: 'Revoke this grant?' },
  lift: { path: '/bans/lift', label: 'Lift' },
  restore: { path: '/lost/restore', label: 'Restore', inline: true, confirm: 'Apply this record again?' },
  dismiss: { path: '/lost/dismiss', label: 'Dismiss', inline: true },
  remove: { path: '/foreign/remove', label: 'Remove', danger: true, confirm: 'Remove this entry from the store?' },
  reset: { path: '/client/reset', label: 'Reset', inline: true },
  clear: { path: '/client/reset', label: 'Reset every counter', confirm: 'Clear every counter of this client?' },
} as const satisfies Record<string, Button>;

function options(list: readonly (readonly [string, string])[], selected?: string): Html[] {
  return list.map(
    ([value, label]) =>
      markup`<option value="${value}" ${value === selected ? markup` selected` : ''}>${label}</option>`,
  );
}

function proofText(r: GrantRequest): Html {
  const p = r.proof;
  const size = p.kind === 'bot' ? `bot in ${p.servers} servers, ${p.shards} shards` : `server of ${p.members} members`;
  const link = clip(p.link, SHOWN);
  return markup`${size}; <a href="${p.link}" rel="noopener noreferrer nofollow" target="_blank">${link}</a>`;
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
  /** The name of the operator using the page, when it has one. */
  readonly operator?: string;
  /** The names of `{ tokens }`, whose logins can be ended one operator at a time. */
  readonly operators?: readonly string[];
}

/** So that a client reads the same on every row of a page, as its grant request shows it. */
export function labelsOf(...lists: readonly (readonly { key: string; tokenEnd: string }[])[]): Map<string, string> {
  const labels = new Map<string, string>();
  for (const list of lists)
    for (const { key, tokenEnd } of list) if (tokenEnd && !labels.has(key)) labels.set(key, tokenEnd);
  return labels;
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

/** A column of a table: its heading, and its cell for an item. */
export type Column<T> = readonly [head: string, cell: (item: T, v: View) => Part];

/** `items` as a table, one row each, or `empty` when there is none. */
export function table<T>(v: View, columns: readonly Column<T>[], items: readonly T[], empty: string): Html {
  if (items.length === 0) return markup`<p class="hint">${empty}</p>`;
  const row = (item: T) => markup`<tr>${columns.map(([, cell]) => markup`<td>${cell(item, v)}</td>`)}</tr>`;
  return markup`<div class="table">
    <table>
      <thead>
        <tr>
          ${columns.map(([head]) => markup`<th scope="col">${head}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${items.map(row)}
      </tbody>
    </table>
  </div>`;
}

/** A form of one button, on one record (`[field, value]`) or on the client of the page. */
export function button(v: View, name: keyof typeof BUTTONS, record?: readonly [string, string]): Html {
  const { path, label, danger, inline, confirm }: Button = BUTTONS[name];
  const field = record ? markup`<input type="hidden" name="${record[0]}" value="${record[1]}" />` : '';
  const asked = confirm ? markup` data-confirm="${confirm}"` : '';
  return markup`<form method="post" action="${v.base}${path}"${inline ? markup` class="inline"` : ''}${asked}>
    ${hidden(v)}${field}
    <button type="submit" class="${danger ? 'danger' : 'plain'}">${label}</button>
  </form>`;
}

export function requestCard(v: View, r: GrantRequest): Html {
  const facts: readonly [string, Part][] = [
    ['Client', keyText(v, r.key)],
    ['From', r.network === undefined ? 'no address given' : keyText(v, r.network)],
    ['Asks for', grantText(r.ask)],
    ['Proof', proofText(r)],
    ['Contact', clip(r.contact, SHOWN)],
    ['Reason', clip(r.reason, SHOWN)],
    ['Filed', when(r.at)],
  ];
  return markup`<article class="card" aria-labelledby="request-${r.id}">
    <h3 id="request-${r.id}">Request <code>${r.id}</code></h3>
    <table>
      <tbody>
        ${facts.map(([head, cell]) => markup`<tr><th scope="row">${head}</th><td>${cell}</td></tr>`)}
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

export const decidedColumns: readonly Column<GrantRequest>[] = [
  ['Id', (r) => markup`<code>${r.id}</code>`],
  ['Client', (r, v) => keyText(v, r.key)],
  ['Asked', (r) => grantText(r.ask)],
  [
    'Decision',
    (r) =>
      r.status === 'approved'
        ? `approved: ${grantText(r.granted ?? r.ask)}, until ${when(r.until, 'revoked')}`
        : `declined: ${r.answer ?? ''}`,
  ],
  ['Decided', (r) => when(r.decidedAt)],
  ['By', (r) => r.decidedBy ?? ''],
];

export const grantColumns: readonly Column<ActiveGrant>[] = [
  ['Client', (g, v) => keyText(v, g.key)],
  ['Grant', (g) => grantText(g.grant)],
  ['Since', (g) => when(g.since)],
  ['Until', (g) => when(g.until, 'revoked')],
  ['Note', (g) => clip(g.note ?? '', SHOWN)],
  [
    'Change',
    (g, v) => markup`<form method="post" action="${v.base}/grants/expiry" class="inline">
        ${hidden(v)}<input type="hidden" name="key" value="${g.key}" /> <label for="expiry-${g.key}">New expiry</label
        ><select id="expiry-${g.key}" name="expiry">
          ${options(EXPIRIES, '30')}
        </select>
        <button type="submit" class="plain">Change</button>
      </form>
      ${button(v, 'revoke', ['key', g.key])}`,
  ],
];

export function banFields(): Html {
  return markup`<label for="ban-reason">Reason</label>
        <input type="text" id="ban-reason" name="reason" maxlength="500" />
        <label for="ban-duration">For</label>
        <select id="ban-duration" name="duration">
          ${options(BAN_DURATIONS, '86400')}
        </select>
        <button type="submit" class="danger">Ban</button>`;
}

export const banColumns: readonly Column<ActiveBan>[] = [
  ['Client', (b, v) => keyText(v, b.key)],
  ['Kind', (b) => b.kind],
  ['Reason', (b) => clip(b.reason, SHOWN)],
  ['By', (b) => b.operator ?? b.by],
  ['Since', (b) => when(b.since)],
  ['Until', (b) => when(b.until)],
  ['', (b, v) => button(v, 'lift', ['key', b.key])],
];

const lostColumns: readonly Column<LostRecord>[] = [
  ['Client', (l, v) => keyText(v, l.key)],
  [
    'Record',
    (l) =>
      l.ban
        ? `ban (${clip(l.ban.reason, SHOWN)}) until ${when(l.ban.until)}`
        : `grant: ${l.grant ? grantText(l.grant.grant) : ''}, until ${when(l.grant?.until, 'revoked')}`,
  ],
  ['Lost', (l) => when(l.lostAt)],
  ['', (l, v) => markup`${button(v, 'restore', ['id', l.id])}${button(v, 'dismiss', ['id', l.id])}`],
];

const foreignColumns: readonly Column<ForeignEntry>[] = [
  ['Entry', (f) => (f.field === undefined ? 'history' : markup`<code>${f.field}</code>`)],
  ['As stored', (f) => markup`<code>${f.text}</code>`],
  ['Problem', (f) => f.problem],
  ['', (f, v) => button(v, 'remove', ['id', f.id])],
];

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
    ${table(v, lostColumns, lost.slice(0, PER_PAGE), 'No record was lost.')}
    ${table(v, foreignColumns, foreign.slice(0, PER_PAGE), 'No foreign entry.')}
  </section>`;
}

export const eventColumns: readonly Column<ChangeEvent>[] = [
  ['When', (e) => when(e.at)],
  ['Action', (e) => e.action],
  ['Client', (e, v) => keyText(v, e.key)],
  ['By', (e) => e.operator ?? e.by],
  [
    'Details',
    (e) =>
      [
        e.reason ? `reason: ${clip(e.reason, SHOWN)}` : '',
        e.grant ? grantText(e.grant) : '',
        e.until ? `until ${when(e.until)}` : '',
        e.note ? `note: ${clip(e.note, SHOWN)}` : '',
        e.action === 'reset'
          ? `counters of ${e.endpoint === undefined ? 'every endpoint' : clip(e.endpoint, SHOWN)}`
          : '',
      ]
        .filter(Boolean)
        .join('; '),
  ],
];
