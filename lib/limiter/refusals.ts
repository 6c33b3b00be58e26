// The answers of refused requests (401, 403, 429, 503): the original service's JSON, or RFC 9457 problem details for a
// client whose Accept prefers application/problem+json.
import type { Request, Response } from 'express';
import { retryAfterSeconds } from '../contract/headers.js';
import { ANSWERED, type Context, type Visit } from './context.js';
import type { Count } from '../stores/store.js';
import type { RecordCache } from '../records/cache.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_JSON = 'application/problem+json';
const OFFERED = ['application/json', PROBLEM_JSON];

/** The problem type of draft-ietf-httpapi-ratelimit-headers for requests over a quota policy, registered with IANA. */
export const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

/** The package's own problem type for a client banned for circumventing the limits, documented in its README. */
export const BANNED = 'https://www.npmjs.com/package/listing-limits#problem-type-banned';

const MESSAGE = 'You are sending too many requests, please slow down';
const BANNED_MESSAGE = 'You are banned from this API for circumventing its rate limits';

export const UNAUTHORIZED_BODY = '{"success":false,"code":401,"message":"The Authorization token is not valid"}';

export const UNAVAILABLE_BODY =
  '{"success":false,"code":503,"message":"The service is temporarily unavailable, please try again later"}';

export function sendJson(ctx: Visit, status: number, body: string, retryAfter?: number, type = JSON_TYPE): void {
  const { res } = ctx;
  ctx.state = ANSWERED;
  res.statusCode = status;
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  res.setHeader('Content-Type', type);
  res.end(body);
}

/**
 * Whether a refused request asks for problem details: its Accept prefers them to `application/json` (a tie goes to
 * `application/json`, which every client of the original service reads). An Accept that does not name them is not
 * negotiated.
 */
function wantsProblem(req: Request): boolean {
  const accept = req.headers.accept;
  return accept !== undefined && /problem\+json/i.test(accept) && req.accepts(OFFERED) === PROBLEM_JSON;
}

/** Adds `Accept` to `Vary`, keeping what is there: a cache must not give one client's refusal body to another. */
function varyOnAccept(res: Response): void {
  const vary = res.getHeader('Vary');
  if (vary === undefined) res.setHeader('Vary', 'Accept');
  else if (!/(?:^|,)\s*(?:accept|\*)\s*(?:,|$)/i.test(String(vary))) res.setHeader('Vary', `${String(vary)}, Accept`);
}

/** The names of the policies a refused request is over, as the RateLimit fields name them. */
function violatedPolicies({ endpoint, counts }: Context): string[] {
  if (!counts) return [endpoint.headers.bucket];
  return endpoint.limits.filter((limit, i) => (counts[i] as Count).count > limit.limit).map((l) => l.headers.bucket);
}

/** Answers 429 to a request over the limit. */
export function answerLimited(ctx: Context, retryAfter: number): void {
  varyOnAccept(ctx.res);
  if (wantsProblem(ctx.req)) {
    const problem = {
      type: QUOTA_EXCEEDED,
      title: 'Request cannot be satisfied as assigned quota has been exceeded',
      status: 429,
      detail: MESSAGE,
      'violated-policies': violatedPolicies(ctx),
      retryAfter,
    };
    sendJson(ctx, 429, JSON.stringify(problem), retryAfter, PROBLEM_JSON);
  } else
    sendJson(ctx, 429, `{"success":false,"code":429,"message":"${MESSAGE}","retryAfter":${retryAfter}}`, retryAfter);
}

/** Refuses with 403 a client banned (or whose address is), as far as the records' cache knows. Whether it was. */
export function refuseBanned(cache: RecordCache, ctx: Visit): boolean {
  const until = cache.bannedUntil(ctx.client, Date.now());
  if (until === undefined) return false;
  const retryAfter = retryAfterSeconds(until - Date.now());
  const bannedUntil = new Date(until).toISOString();
  ctx.outcome = 'banned';
  varyOnAccept(ctx.res);
  if (wantsProblem(ctx.req)) {
    const problem = {
      type: BANNED,
      title: 'Banned for circumventing the rate limits',
      status: 403,
      detail: BANNED_MESSAGE,
      bannedUntil,
      retryAfter,
    };
    sendJson(ctx, 403, JSON.stringify(problem), retryAfter, PROBLEM_JSON);
  } else {
    const body = `{"success":false,"code":403,"message":"${BANNED_MESSAGE}","bannedUntil":"${bannedUntil}"`;
    sendJson(ctx, 403, `${body},"retryAfter":${retryAfter}}`, retryAfter);
  }
  return true;
}
