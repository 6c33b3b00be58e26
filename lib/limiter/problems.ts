// RFC 9457 problem details of a refusal (429, 403), for a client whose Accept prefers application/problem+json.
import type { Request } from 'express';

export const PROBLEM_JSON = 'application/problem+json';
const OFFERED = ['application/json', PROBLEM_JSON];

/** The problem type of draft-ietf-httpapi-ratelimit-headers for requests over a quota policy, registered with IANA. */
export const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

/** The package's own problem type for a client banned for circumventing the limits, documented in its README. */
export const BANNED = 'https://www.npmjs.com/package/listing-limits#problem-type-banned';

/**
 * Whether a refused request asks for problem details: its Accept prefers `application/problem+json` to
 * `application/json` (a tie goes to `application/json`, which every client of the original service reads). An Accept
 * that does not name the type is told apart without negotiating.
 */
export function wantsProblem(req: Request): boolean {
  const accept = req.headers.accept;
  return accept !== undefined && /problem\+json/i.test(accept) && req.accepts(OFFERED) === PROBLEM_JSON;
}

/** The problem of a request over the limit: the names of the policies it is over, as the RateLimit fields name them. */
export function quotaExceededBody(message: string, violated: readonly string[], retryAfter: number): string {
  return JSON.stringify({
    type: QUOTA_EXCEEDED,
    title: 'Request cannot be satisfied as assigned quota has been exceeded',
    status: 429,
    detail: message,
    'violated-policies': violated,
    retryAfter,
  });
}

/** The problem of a banned client: when the ban ends, and the seconds until then. */
export function bannedProblemBody(message: string, bannedUntil: string, retryAfter: number): string {
  return JSON.stringify({
    type: BANNED,
    title: 'Banned for circumventing the rate limits',
    status: 403,
    detail: message,
    bannedUntil,
    retryAfter,
  });
}
