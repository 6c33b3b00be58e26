// An app with the contact page and the operator's page, and what a browser does with them, for the pages' HTTP tests.
import express5, { type Express } from 'express';
import request from 'supertest';
import {
  type EndpointRow,
  listingLimits,
  type ListingName,
  type ListingLimitsMiddleware,
  type ListingLimitsOptions,
  memoryStore,
  type Store,
} from '../../lib';
import { type AdminPageOptions, limitsAdmin, limitsRequestPage, type RequestPageOptions } from '../../lib/pages';
import type { ExpressFactory } from './app';

export const rows: readonly EndpointRow[] = [
  { method: 'GET', path: '/v1/things', limit: 2, windowMs: 60_000 },
  { method: 'POST', path: '/v1/things/:id', limit: 1, windowMs: 10_000 },
];
export const ADMIN = 'admin-token-0123456789';
export const TOKEN = 'Bot requester-token-9f3a';

/** A contact form that files. */
export const valid = {
  token: TOKEN,
  ask: 'multiplier',
  multiplier: '10',
  kind: 'bot',
  servers: '120000',
  shards: '120',
  link: 'https://example.com/bot',
  contact: 'ops@example.com',
  reason: 'We serve a great many servers.',
};

export interface PagesAppOptions {
  /** The limiter's table. Default: {@link rows}. */
  listing?: ListingName | readonly EndpointRow[];
  /** The store of the limiter, which the pages count in too. Default: a `memoryStore()` of its own. */
  store?: Store;
  express?: ExpressFactory;
  secret?: string;
  /** More options of the limiter (`window`, `ipv6Subnet`). */
  limits?: ListingLimitsOptions;
  /** More options of the operator's page. */
  admin?: Partial<AdminPageOptions>;
  /** More options of the contact page. */
  contact?: RequestPageOptions;
  /** Set-up before anything is mounted, e.g. `app.set('trust proxy', true)`. */
  setup?: (app: Express) => void;
}

/**
 * `pagesApp(authorize?, options?)` for the tests of one file: an app with the limiter, the operator's page at
 * `/admin/limits` (`authorize` as given, or the admin token's login, 3 logins a minute), the contact page at
 * `/limits/request`, and one API route; each limiter is closed after each test.
 */
export function pagesAppPerTest(): (
  authorize?: AdminPageOptions['authorize'],
  options?: PagesAppOptions,
) => { app: Express; limits: ListingLimitsMiddleware } {
  let made: ListingLimitsMiddleware[] = [];
  afterEach(() => {
    for (const l of made) l.close();
    made = [];
  });
  return (authorize, options = {}) => {
    const { listing = rows, store = memoryStore(), express = express5, secret, admin, contact, setup } = options;
    const limits = listingLimits(listing, { store, ...options.limits });
    made.push(limits);
    const app = express();
    setup?.(app);
    app.use(limits);
    app.use('/limits/request', limitsRequestPage(limits, { secret, ...contact }));
    app.use(
      '/admin/limits',
      limitsAdmin(limits, {
        authorize: authorize ?? { token: ADMIN },
        secret,
        logins: { limit: 3, windowMs: 60_000 },
        ...admin,
      }),
    );
    app.get('/v1/things', (_req, res) => {
      res.json({ ok: true });
    });
    app.get('/', (_req, res) => {
      res.send('home');
    });
    return { app, limits };
  };
}

/** The HTML with the white space between tags and before a tag's end dropped, every other run one space. */
export const flat = (text: string) =>
  text
    .replace(/>\s+</g, '><')
    .replace(/\s+(\/?>)/g, '$1')
    .replace(/\s+/g, ' ');

/** The CSRF token of the page's first form. */
export const csrfOf = (text: string) => /name="_csrf" value="([^"]+)"/.exec(text)?.[1] as string;

/** The cookies an answer sets, `name=value` each, by name. */
export function cookiesOf(res: request.Response): Record<string, string> {
  const set = (res.headers['set-cookie'] as unknown as string[] | undefined) ?? [];
  return Object.fromEntries(set.map((c) => c.split(';')[0] as string).map((c) => [c.split('=')[0] as string, c]));
}

/**
 * An agent logged in to the operator's page with the admin token (or `token`), the page it then gets, and the cookies
 * it was given on the way (`listing-limits.admin`, the login's, among them), `name=value` each, by name.
 */
export async function loggedIn(
  app: Express,
  token = ADMIN,
): Promise<{ agent: ReturnType<typeof request.agent>; page: request.Response; cookies: Record<string, string> }> {
  const agent = request.agent(app);
  const form = await agent.get('/admin/limits/login').expect(200);
  const login = await agent
    .post('/admin/limits/login')
    .type('form')
    .send({ token, _csrf: csrfOf(form.text) })
    .expect(303);
  const page = await agent.get('/admin/limits/').expect(200);
  return { agent, page, cookies: { ...cookiesOf(form), ...cookiesOf(login), ...cookiesOf(page) } };
}

/** The contact page's form as a browser gets it: `post(body)` sends `body` with the form's CSRF token. */
export async function contactForm(app: Express): Promise<(body: object) => request.Test> {
  const agent = request.agent(app);
  const _csrf = csrfOf((await agent.get('/limits/request').expect(200)).text);
  return (body) =>
    agent
      .post('/limits/request')
      .type('form')
      .send({ ...body, _csrf });
}
