// The verifier's public types: its options, the events it tells as it goes, its plan and its report.
import type { AnyListingName, EndpointRow } from '../contract/listings.js';
import type { Limit, WindowKind } from '../contract/limit.js';

/** Options of {@link verifyContract} and {@link planVerification}. */
export interface VerifyOptions {
  /** Where the API is served, e.g. `http://127.0.0.1:3000/api`; each endpoint's path is appended. Required. */
  baseUrl: string | URL;
  /** A listing (`'B'`, `'b'`, `'bots'`), or rows of your own, several per endpoint with a window each. Required. */
  listing: AnyListingName | readonly EndpointRow[];
  /** The `Authorization` value to send. Default: none (counted by client IP). */
  token?: string;
  /** The `Authorization` of another client. Default: `listing-limits-verify-` and random hex, new every run. */
  otherToken?: string;
  /** Names of the endpoints to check, as in the table: `['GET /v1/bots/:id']`. Default: every endpoint. */
  only?: readonly string[];
  /** Path parameters: `{ id: '123' }`, or `{ id: ['123', '456'] }` for the other path. Default: `'1'` (and `'2'`). */
  params?: Readonly<Record<string, string | readonly string[]>>;
  /** The windows the server should count, `'fixed'` or `'sliding'`. Default: `'fixed'`. */
  window?: WindowKind;
  /** How many endpoints are probed at the same time. Default: all of them. */
  concurrency?: number;
  /** Ms kept between the requests and each window's end (at most a quarter of the window). Default: `1000`. */
  graceMs?: number;
  /** Ms a request may take; then it fails, and its endpoint is not probed further. Default: `10000`. */
  timeoutMs?: number;
  /** Whether the header notes (fields absent, or in another draft) fail the endpoint too. Default: `false`. */
  strictHeaders?: boolean;
  /** The fetch used to send requests. Default: the global `fetch` of Node.js. */
  fetch?: typeof fetch;
  /** Waits `ms` milliseconds. Default: a timer. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock that `sleep` moves, in milliseconds since the epoch. Default: `Date.now`. */
  now?: () => number;
  /** Told of each endpoint's start, waits and end, e.g. to show progress. Default: none. */
  onProgress?: (event: VerifyEvent) => void;
}

/** Why a probe waits: for the window's middle, its end, a counter in use to reopen, or another of its limits. */
export type VerifyWaitReason = 'boundary' | 'window' | 'busy' | 'limit';

/** What {@link VerifyOptions.onProgress} is told. Endpoints probed together tell their events interleaved. */
export type VerifyEvent =
  /** `index` counts from 1, in the order the probes begin. */
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
  /** The limit of the endpoint's row of the shortest window. */
  readonly limit: number;
  /** The window of that row. */
  readonly windowMs: number;
  /** Every row of the endpoint, shortest window first. */
  readonly limits: readonly Limit[];
  /** The paths requested (`/api/v1/bots/1`): a second one where the path has parameters. */
  readonly paths: readonly string[];
  /** The requests sent when the server honours the contract. */
  readonly requests: number;
  /** The waits, in ms: about how long the endpoint's probe lasts. */
  readonly waitMs: number;
  /** Of `requests`, those after a window's end that only tell its kind. */
  readonly boundaryRequests: number;
  /** @deprecated Always 0: the probe across a window's end shares the endpoint's wait. */
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
  /** About how long the run takes, in ms, `concurrency` endpoints at a time. */
  readonly waitMs: number;
}

/** The windows the server was seen to count; `'either'` for a limit of 1; `'unclear'`, `'not probed'`: see notes. */
export type WindowSeen = WindowKind | 'either' | 'unclear' | 'not probed';

/** What the rate-limit header fields of an endpoint's answers said, judged apart from the contract. */
export interface HeadersReport {
  /** False when no answer came, and then nothing is said of the fields. */
  readonly probed: boolean;
  /** Seen: `'drafts 8-11'`, `'draft 7'`, `'draft 6'`, `'X-RateLimit'`, `'Retry-After'`, `'Retry-After (date)'`. */
  readonly sent: readonly string[];
  /** Fields that contradict the contract or cannot be read; with `strictHeaders`, the notes too. */
  readonly findings: readonly string[];
  /** Fields absent, or in another draft, e.g. `no Retry-After on 429`: they contradict nothing. */
  readonly notes: readonly string[];
}

/** What was found on one endpoint. */
export interface EndpointReport extends EndpointPlan {
  /** True when nothing contradicts the contract: `findings` and `headers.findings` are empty. */
  readonly ok: boolean;
  /** How the server contradicts the contract (`allowed 16 requests, contract says 15`), or why it was not checked. */
  readonly findings: readonly string[];
  /** What is worth knowing but contradicts nothing, e.g. `GET /v1/bots/2 answered 404`. */
  readonly notes: readonly string[];
  /** The rate-limit header fields and `Retry-After`, judged apart. */
  readonly headers: HeadersReport;
  /** The requests actually sent. */
  readonly requests: number;
  /** The windows the server was seen to count. */
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
