// One counted request on its way through the steps of the middleware, and the answers a step can give it.
import type { NextFunction, Request, Response } from 'express';
import type { Count } from '../stores/store.js';
import type { CompiledEndpoint } from './endpoint.js';
import { retryAfterSeconds } from '../contract/headers.js';
import type { Client } from './identify.js';
import type { Outcome } from './observe/metrics.js';
import { bannedProblemBody, PROBLEM_JSON, quotaExceededBody, wantsProblem } from './problems.js';
import type { Deadline } from '../stores/waiting.js';
import type { RecordCache } from '../records/cache.js';

/** Where a request stands: still going through the steps, let through, or answered by a step. */
export const GOING = 0;
export const PASSED = 1;
export const ANSWERED = 2;

export interface Context {
  readonly req: Request;
  readonly res: Response;
  readonly next: NextFunction;
  /** The endpoint the request counts on: the table's row, or a granted variant of it. */
  endpoint: CompiledEndpoint;
  client: Client;
  /** The endpoint counter's state after this request; of an endpoint of several limits, the most restrictive. */
  count: Count;
  /** Each limit's state after this request, for an endpoint of several limits; else undefined. */
  counts: readonly Count[] | undefined;
  /** The limit `count` is measured against: of an endpoint of several limits, the most restrictive one's. */
  limit: number;
  /** Whether the request is over a limit of its endpoint. */
  refused: boolean;
  /** The request's one deadline for a store with a failure policy; made at its first store call. */
  deadline: Deadline | undefined;
  state: typeof GOING | typeof PASSED | typeof ANSWERED;
  /** What happened to the request, for the metrics; undefined for one that is not counted (skipped, 401). */
  outcome: Outcome | undefined;
}

/** A step of the request path: it reads and sets the context, and answers or lets the request through (`state`). */
export type Step = (ctx: Context) => void | Promise<void>;

const MESSAGE = 'You are sending too many requests, please slow down';
const BANNED_MESSAGE = 'You are banned from this API for circumventing its rate limits';

/** The 429 body of the original service, which its clients parse, with the seconds to wait. */
function limitedBody(retryAfter: number): string {
  return `{"success":false,"code":429,"message":"${MESSAGE}","retryAfter":${retryAfter}}`;
}

export const UNAUTHORIZED_BODY = '{"success":false,"code":401,"message":"The Authorization token is not valid"}';

/** The 503 of a store that fails closed, in the shape of the 429 body. */
export const UNAVAILABLE_BODY =
  '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}';

/** The 403 of a banned client: when the ban ends, and the seconds until then. */
function bannedBody(until: number, retryAfter: number): string {
  const end = new Date(until).toISOString();
  return `{"success":false,"code":403,"message":"${BANNED_MESSAGE}","bannedUntil":"${end}","retryAfter":${retryAfter}}`;
}

export function sendJson(
  ctx: Context,
  status: number,
  body: string,
  retryAfter?: number,
  type = 'application/json; charset=utf-8',
): void {
  const { res } = ctx;
  ctx.state = ANSWERED;
  res.statusCode = status;
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  res.setHeader('Content-Type', type);
  res.end(body);
}

/** The names of the policies a refused request is over, as the RateLimit fields name them. */
function violatedPolicies({ endpoint, counts }: Context): string[] {
  if (!counts) return [endpoint.headers.bucket];
  return endpoint.limits.filter((limit, i) => (counts[i] as Count).count > limit.limit).map((l) => l.headers.bucket);
}

/**
 * Adds `Accept` to the response's `Vary` field, keeping what another middleware put there (`Vary: Origin` becomes
 * `Vary: Origin, Accept`): the refusals' bodies depend on `Accept`, so that a cache must not give one client's body
 * to another.
 */
function varyOnAccept(res: Response): void {
  const vary = res.getHeader('Vary');
  if (vary === undefined) res.setHeader('Vary', 'Accept');
  else if (!/(?:^|,)\s*(?:accept|\*)\s*(?:,|$)/i.test(String(vary))) res.setHeader('Vary', `${String(vary)}, Accept`);
}

/** Answers 429 to a request over the limit: the body of the original service, or problem details when asked for. */
export function answerLimited(ctx: Context, retryAfter: number): void {
  varyOnAccept(ctx.res);
  if (wantsProblem(ctx.req)) {
    const body = quotaExceededBody(MESSAGE, violatedPolicies(ctx), retryAfter);
    sendJson(ctx, 429, body, retryAfter, PROBLEM_JSON);
  } else sendJson(ctx, 429, limitedBody(retryAfter), retryAfter);
}

/** Refuses a client banned (or whose address is), as far as the records' cache knows: 403. Whether it was. */
export function refuseBanned(cache: RecordCache, ctx: Context): boolean {
  const until = cache.bannedUntil(ctx.client, Date.now());
  if (until === undefined) return false;
  answerBanned(ctx, until);
  return true;
}

/** Answers 403 to a client banned until `until` (epoch ms): problem details when the request asks for them. */
function answerBanned(ctx: Context, until: number): void {
  const retryAfter = retryAfterSeconds(until - Date.now());
  ctx.outcome = 'banned';
  varyOnAccept(ctx.res);
  if (wantsProblem(ctx.req)) {
    const body = bannedProblemBody(BANNED_MESSAGE, new Date(until).toISOString(), retryAfter);
    sendJson(ctx, 403, body, retryAfter, PROBLEM_JSON);
  } else sendJson(ctx, 403, bannedBody(until, retryAfter), retryAfter);
}
