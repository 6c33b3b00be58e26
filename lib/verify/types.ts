// The verifier's public types: its options, the events it tells as it goes, its plan and its report.
import type { AnyListingName, EndpointRow } from '../contract/listings.js';
import type { Limit, WindowKind } from '../contract/limit.js';

/** Options of {@link verifyContract} and {@link planVerification}. */
export interface VerifyOptions {
  /**
   * Where the API is served, e.g. `https://api.example.com` or `http://127.0.0.1:3000/api`: each endpoint's
   * path is appended to it. Required.
   */
  baseUrl: string | URL;
  /**
   * The table to check: a listing of the contract (`'B'`, `'b'` or `'bots'`), or rows of your own, where one method and
   * path may have several rows, each with its own window (`25 per minute` and `500 per hour`). Required.
   */
  listing: AnyListingName | readonly EndpointRow[];
  /** The `Authorization` value to send. Default: none, so the server counts the requests by client IP. */
  token?: string;
  /**
   * The `Authorization` value of the requests that check that another client has its own counter.
   * Default: `listing-limits-verify-` and 16 random hex digits, new for every run.
   */
  otherToken?: string;
  /** Names of the endpoints to check, as in the table: `['GET /v1/bots/:id']`. Default: every endpoint. */
  only?: readonly string[];
  /**
   * Values of path parameters, by name: `{ id: '123' }`, or `{ id: ['123', '456'] }` to choose the second
   * value too. The second value is the one requested to check that path parameters share the counter; when it
   * is not given, it is the first plus one when that is a whole number (`124`), else the first with `-2` appended.
   * Default: `'1'` (and so `'2'`) for every parameter.
   */
  params?: Readonly<Record<string, string | readonly string[]>>;
  /**
   * The windows the server should count: `'fixed'` (a client's window starts with its first request and lasts
   * `windowMs`, so `limit` at the end of one and `limit` at the start of the next all pass) or `'sliding'` (at most
   * `limit` in any `windowMs`). Requests on either side of a window's end tell which one the server counts.
   * Default: `'fixed'`.
   */
  window?: WindowKind;
  /**
   * How many endpoints are probed at the same time. The endpoints count on counters of their own, so probing them
   * together changes nothing they are told; a run lasts about as long as its longest window then.
   * Default: every endpoint checked, all at once.
   */
  concurrency?: number;
  /**
   * Milliseconds kept, up to a quarter of the window, between the requests and each window's end, on either side
   * of it, for latency and clocks. Default: `1000`.
   */
  graceMs?: number;
  /**
   * Milliseconds one request may take, from its send to its answer's head; then it counts as failed, and its
   * endpoint's probe stops with a finding. Default: `10000`.
   */
  timeoutMs?: number;
  /**
   * Whether the header notes fail the endpoint too: rate-limit fields or `Retry-After` that are absent, or written
   * in another draft or convention than drafts 8 to 11 of the IETF fields, Unix times in `X-RateLimit-Reset` and
   * seconds in `Retry-After`. Default: `false`, since the contract does not say which headers to send.
   */
  strictHeaders?: boolean;
  /** The fetch used to send requests. Default: the global `fetch` of Node.js. */
  fetch?: typeof fetch;
  /** Waits `ms` milliseconds. Tests pass one that moves a fake clock instead. Default: a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock that `sleep` moves, in milliseconds since the epoch. Default: `Date.now`. */
  now?: () => number;
  /** Told what is going on, e.g. to show progress during the long waits. Default: none. */
  onProgress?: (event: VerifyEvent) => void;
}

/**
 * Why a probe waits: for its window's middle, where it sends the rest of the limit (`boundary`); for its window to
 * end (`window`); for a counter already in use to open again (`busy`); or, on an endpoint of several limits, for
 * another of its limits to allow the next request (`limit`).
 */
export type VerifyWaitReason = 'boundary' | 'window' | 'busy' | 'limit';

/** What {@link VerifyOptions.onProgress} is told. Endpoints probed together tell their events interleaved. */
export type VerifyEvent =
  /** Probing of an endpoint begins; `index` counts from 1, in the order the probes begin. */
  | { readonly type: 'endpoint'; readonly endpoint: string; readonly index: number; readonly total: number }
  /** A wait of `ms` begins. */
  | { readonly type: 'wait'; readonly endpoint: string; readonly ms: number; readonly reason: VerifyWaitReason }
  /** Probing of an endpoint is over. */
  | { readonly type: 'done'; readonly result: EndpointReport };

/** What is planned for one endpoint. */
export interface EndpointPlan {
  /** `<METHOD> <path>`, as in the table. */
  readonly endpoint: string;
  readonly method: string;
  readonly path: string;
  /** The limit of the endpoint's first row (of several, the one of the shortest window). */
  readonly limit: number;
  /** The window of that row. */
  readonly windowMs: number;
  /** Every row of the endpoint, shortest window first: one, or several when the table gives it several limits. */
  readonly limits: readonly Limit[];
  /**
   * The paths requested, the base URL's path included (`/api/v1/bots/1`): one, or two (other path parameters)
   * for an endpoint with path parameters.
   */
  readonly paths: readonly string[];
  /** The requests sent when the server honours the contract (docs/verify.md tells how they are spent). */
  readonly requests: number;
  /** The waits, in milliseconds: about how long the endpoint's probe lasts. */
  readonly waitMs: number;
  /**
   * Of `requests`, those that only tell the kind of window, after its end: `limit - 1` for fixed windows, the 429
   * for sliding ones; none for a limit of 1.
   */
  readonly boundaryRequests: number;
  /**
   * Of `waitMs`, the waiting that only the probe across a window's end needs: none, since that probe shares the
   * endpoint's one wait for its window to end.
   * @deprecated Always 0; kept so that code reading it goes on compiling.
   */
  readonly boundaryWaitMs: number;
}

/** What {@link planVerification} plans: every request and wait of a run against a server that honours the contract. */
export interface VerifyPlan {
  /** The base URL, as requests are sent to it. */
  readonly baseUrl: string;
  /** The windows the server should count. */
  readonly window: WindowKind;
  /** How many endpoints are probed at the same time. */
  readonly concurrency: number;
  readonly endpoints: readonly EndpointPlan[];
  /** Requests over all endpoints. */
  readonly requests: number;
  /** About how long the run takes, in milliseconds: the endpoints' waits, `concurrency` endpoints at a time. */
  readonly waitMs: number;
}

/**
 * The windows the server was seen to count: `'either'` for a limit of 1, which fixed and sliding windows count
 * alike; `'unclear'` when the requests across a window's end could not tell (the findings say why); `'not probed'`
 * when the probe stopped before them (a finding), or the endpoint's other limits left too few (a note).
 */
export type WindowSeen = WindowKind | 'either' | 'unclear' | 'not probed';

/** What the rate-limit header fields of an endpoint's answers said, judged apart from the contract. */
export interface HeadersReport {
  /**
   * Whether any answer came to judge the fields of: false when every request of the endpoint failed (its contract
   * finding says why), and then nothing is said of its fields.
   */
  readonly probed: boolean;
  /**
   * What the answers carried, in the order first seen: `'drafts 8-11'` (the IETF `RateLimit` and `RateLimit-Policy`
   * lists), `'draft 7'`, `'draft 6'`, `'X-RateLimit'`, and `'Retry-After'` (or `'Retry-After (date)'`) on 429s.
   */
  readonly sent: readonly string[];
  /**
   * Each field present that contradicts the contract or the requests sent, or cannot be read, e.g.
   * `X-RateLimit-Limit says 3, contract says 2`; with `strictHeaders`, the notes too.
   */
  readonly findings: readonly string[];
  /** Fields absent, or in another draft or convention, e.g. `no Retry-After on 429`: they contradict nothing. */
  readonly notes: readonly string[];
}

/** What was found on one endpoint. */
export interface EndpointReport extends EndpointPlan {
  /** True when nothing contradicts the contract: `findings` and `headers.findings` are empty. */
  readonly ok: boolean;
  /**
   * Each way the server contradicts the contract (the counts per window, their keys, the 429), in words, e.g.
   * `allowed 16 requests, contract says 15`, or why it could not be checked (`request failed: ECONNREFUSED`); on an
   * endpoint of several limits, what concerns one of them opens with it (`3 per 10 s: allowed 4 requests, …`).
   */
  readonly findings: readonly string[];
  /** What is worth knowing but contradicts nothing, e.g. `GET /v1/bots/2 answered 404`. */
  readonly notes: readonly string[];
  /** The rate-limit header fields and `Retry-After`, judged in a section of their own. */
  readonly headers: HeadersReport;
  /** The requests actually sent. */
  readonly requests: number;
  /** The windows the server counts, as the requests across a window's end showed them. */
  readonly windowSeen: WindowSeen;
}

/** What {@link verifyContract} found. */
export interface VerifyReport {
  readonly baseUrl: string;
  /** The windows the server should count. */
  readonly window: WindowKind;
  /** Whether the header notes failed the endpoints too. */
  readonly strictHeaders: boolean;
  /** True when every endpoint is ok. */
  readonly ok: boolean;
  readonly endpoints: readonly EndpointReport[];
}
