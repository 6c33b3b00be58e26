// The fault suite's parts: app instances with their pages in processes of their own (fault-instance.js), every
// operator's call and every page with how long each took, and the checks that hold whatever the store does.
import { tokenKey } from '../../lib/contract/keys';
import {
  call,
  type ClientKind,
  type Instance,
  type InstanceOptions,
  settle,
  type Settled,
  startInstance,
} from './store-processes';

/** The limit of the one endpoint, per minute: a minute, so that a fault and its recovery fall in one window. */
export const LIMIT = 4;
export const PATH = '/v1/things';
/** A request's wait for Redis (the default), and an operator's call's in all. */
const TIMEOUT_MS = 200;
const CALL_TIMEOUT_MS = 1000;
/**
 * How much later than its bound a call, a page or a request may settle before the test fails: a bound for a hang,
 * generous enough for a loaded machine's late timers, never a speed the machine must keep.
 */
const SLACK_MS = 1500;
/** No request waits for Redis longer than 5 × timeoutMs, however busy the process. */
export const REQUEST_BOUND_MS = 5 * TIMEOUT_MS + SLACK_MS;
export const CALL_BOUND_MS = CALL_TIMEOUT_MS + SLACK_MS;

/** What the rule bans: the tenth refusal within a minute (bursts of a test refuse fewer). */
const BAN_AFTER = 10;

const faultOptions: InstanceOptions & { callTimeoutMs: number; ban: object } = {
  rows: [{ method: 'GET', path: PATH, limit: LIMIT, windowMs: 60_000 }],
  timeoutMs: TIMEOUT_MS,
  callTimeoutMs: CALL_TIMEOUT_MS,
  onFailure: 'memory',
  ban: { after: BAN_AFTER, within: 60_000, duration: 600_000 },
};

/** Three instances of one prefix over `target`, started at once. */
export function startFaultInstances(
  lib: string,
  kind: ClientKind,
  target: string,
  prefix: string,
): Promise<Instance[]> {
  return Promise.all([0, 1, 2].map(() => startInstance(lib, kind, target, prefix, faultOptions, 'fault-instance.js')));
}

/** A grant request's input, for `token`. */
const requestOf = (token: string) => ({
  token,
  ask: 'unlimited',
  proof: { kind: 'server', members: 90_000, link: 'https://example.com/server' },
  contact: 'ops@example.com',
  reason: 'A large server.',
});

/** What a scenario makes before its fault: a ban, a grant and two pending grant requests, through `instance`. */
export interface Seeded {
  readonly banned: string;
  readonly granted: string;
  /** Two pending requests: one an operator approves during the fault, one declines. */
  readonly requests: readonly { readonly id: string; readonly token: string }[];
}

export async function seed(instance: Instance, name: string): Promise<Seeded> {
  const banned = `Bot ${name}-banned`;
  const granted = `Bot ${name}-granted`;
  await call(instance, 'ban', { token: banned }, { duration: 600_000, reason: 'seeded' });
  await call(instance, 'grant', { token: granted }, { multiplier: 2 });
  const requests = [];
  for (const n of [1, 2]) {
    const token = `Bot ${name}-requester-${n}`;
    const filed = (await call(instance, 'requests.file', requestOf(token))) as { id: string };
    requests.push({ id: filed.id, token });
  }
  return { banned, granted, requests };
}

/** The changes an operator makes during a fault, by method: what each would change. */
export function changesOf(name: string, seeded: Seeded): [string, ...unknown[]][] {
  const [approved, declined] = seeded.requests as [Seeded['requests'][0], Seeded['requests'][0]];
  return [
    ['ban', { token: `Bot ${name}-fault-banned` }, { duration: 600_000, reason: 'during the fault' }],
    ['unban', { token: seeded.banned }],
    ['grant', { token: `Bot ${name}-fault-granted` }, 'unlimited'],
    ['revoke', { token: seeded.granted }],
    ['reset', { token: seeded.granted }],
    ['requests.file', requestOf(`Bot ${name}-requester-3`)],
    ['requests.approve', approved.id, 'unlimited'],
    ['requests.decline', declined.id, 'no'],
    ['restoreLost', `ban:${tokenKey('Bot nobody')}`],
    ['dismissLost', `ban:${tokenKey('Bot nobody')}`],
    ['removeForeign', 'record nothing'],
  ];
}

/** The reads an operator makes during a fault. */
export function readsOf(seeded: Seeded): [string, ...unknown[]][] {
  const [first] = seeded.requests as [Seeded['requests'][0]];
  return [
    ['bans'],
    ['grants'],
    ['history', { limit: 10 }],
    ['lost'],
    ['foreign'],
    ['usage', { token: seeded.granted }],
    ['requests.status', first.id, first.token],
    ['requests.get', first.id],
    ['requests.list'],
    ['requests.counts'],
    ['requests.find', { token: first.token }],
  ];
}

/** Every operator call at once on `instance`: how each settled. */
export function everyCall(instance: Instance, calls: readonly [string, ...unknown[]][]): Promise<Settled[]> {
  return Promise.all(calls.map(([method, ...args]) => settle(instance, method, ...args)));
}

/** A call as the checks show it: settled within the bound, and how (`ok`, or its error's code). */
export const outcome = (s: Settled) => ({
  method: s.method,
  withinBound: s.ms <= CALL_BOUND_MS,
  how: s.ok ? 'ok' : s.code,
});

/** A page's answer: its status, how long it took (ms), and its text. */
interface PageAnswer {
  readonly page: string;
  readonly status: number;
  readonly ms: number;
  readonly text: string;
}

/**
 * Every page that reads or writes the store: the operator's page, a client's page, and the contact page's status
 * check (a POST from its own origin); each answered within the bound, or the test fails.
 */
export async function loadPages(instance: Instance, seeded: Seeded): Promise<PageAnswer[]> {
  const [first] = seeded.requests as [Seeded['requests'][0]];
  const form = new URLSearchParams({ id: first.id, token: first.token }).toString();
  const pages: [string, RequestInit][] = [
    ['/admin/', {}],
    [`/admin/client?key=${encodeURIComponent(tokenKey(seeded.granted))}`, {}],
    [
      '/request/status',
      {
        method: 'POST',
        body: form,
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: instance.url },
      },
    ],
  ];
  return Promise.all(
    pages.map(async ([page, init]) => {
      const start = performance.now();
      const res = await fetch(`${instance.url}${page}`, { ...init, signal: AbortSignal.timeout(20_000) });
      const text = await res.text();
      return { page, status: res.status, ms: Math.round(performance.now() - start), text };
    }),
  );
}

/** `count` requests of `token` sent at once, over `instances` in turn: each status, and the longest answer's time. */
export async function requests(
  instances: readonly Instance[],
  count: number,
  token: string,
): Promise<{ statuses: Record<number, number>; longestMs: number }> {
  const answers = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const start = performance.now();
      const res = await fetch(`${(instances[i % instances.length] as Instance).url}${PATH}`, {
        headers: { authorization: token },
        signal: AbortSignal.timeout(20_000),
      });
      await res.arrayBuffer();
      return { status: res.status, ms: performance.now() - start };
    }),
  );
  const statuses: Record<number, number> = {};
  for (const { status } of answers) statuses[status] = (statuses[status] ?? 0) + 1;
  return { statuses, longestMs: Math.round(Math.max(...answers.map((a) => a.ms))) };
}

/** A client that the rule bans on `instance`: requests one after another until it is refused as banned. */
export async function ruleBanned(instance: Instance, token: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < LIMIT + BAN_AFTER + 1; i++) {
    const res = await fetch(`${instance.url}${PATH}`, {
      headers: { authorization: token },
      signal: AbortSignal.timeout(20_000),
    });
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}

/** The status of a request of `token` to `/outside`: 403 for a banned client, 200 else. */
export async function outside(instance: Instance, token: string): Promise<number> {
  const res = await fetch(`${instance.url}/outside`, {
    headers: { authorization: token },
    signal: AbortSignal.timeout(20_000),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Waits until `condition()` holds, asking every 50 ms, for up to `ms`; resolves how long it took, or throws. */
export async function until(ms: number, what: string, condition: () => Promise<boolean>): Promise<number> {
  const start = performance.now();
  let last: unknown;
  for (;;) {
    try {
      if (await condition()) return Math.round(performance.now() - start);
    } catch (error) {
      last = error;
    }
    if (performance.now() - start > ms)
      throw new Error(`not within ${ms} ms: ${what}${last ? ` (${String(last)})` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
