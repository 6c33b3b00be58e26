// What a probe asks its runner and gets back, and what it keeps as it goes: its clients, rows and windows.
import type { Limit, WindowKind } from '../contract/limit.js';
import { Counted, type Span } from './counted.js';
import { type ProbeAnswer, type Expectation } from './fields.js';
import type { EndpointReport, VerifyWaitReason } from './types.js';

/** What a probe asks its runner to do next. */
export type ProbeStep =
  | { readonly kind: 'send'; readonly path: string; readonly authorization: string | undefined }
  | { readonly kind: 'wait'; readonly ms: number; readonly reason: VerifyWaitReason };

/** What the runner gives back: the response to a request, or why none came; nothing after a wait. */
export type Reply =
  { readonly status: number; readonly headers: Headers; readonly at: number } | { readonly failed: string } | undefined;

/** A probe under way: it yields steps, is given their replies, and returns the endpoint's report. */
export type Probing = Generator<ProbeStep, EndpointReport, Reply>;

/** What the probes of one run share. */
export interface SharedByProbes {
  /** Whether a probe has seen the server ban this client: from then on, every 403 is that ban. */
  banned: boolean;
}

/** A request that got no response: the endpoint cannot be probed further. */
export class RequestFailed extends Error {}

/** A 403 of a server that banned this client: the endpoint is not probed further. */
export class Banned extends Error {}

/** One row of the endpoint, with what the probe derives from it. */
export interface Row {
  readonly index: number;
  readonly limit: number;
  readonly windowMs: number;
  readonly seconds: number;
  /** How far from the window's end requests are kept. */
  readonly margin: number;
  /** What opens the findings of this row: nothing for an endpoint of one row, else `3 per 10 s: `. */
  readonly label: string;
}

/** A client's counter as both kinds of window count it: they differ only once a window has ended. */
export class ClientCounts {
  readonly counted: Record<WindowKind, Counted>;

  constructor(limits: readonly Limit[], graceMs: number) {
    this.counted = { fixed: new Counted(limits, 'fixed', graceMs), sliding: new Counted(limits, 'sliding', graceMs) };
  }

  record(answer: ProbeAnswer): void {
    const passed = answer.status !== 429;
    this.counted.fixed.record(answer, passed);
    this.counted.sliding.record(answer, passed);
  }

  /** What a server counting windows of `kind` tells in the fields of `answer` (recorded already). */
  expect(kind: WindowKind, answer: Span): Expectation {
    const counted = this.counted[kind];
    return { counts: counted.limits.map((_limit, i) => counted.count(i, answer)), shown: counted.shown(answer) };
  }
}

/** Fields checked without a count: the policy, windows and formats only. */
export const UNKNOWN: Expectation = { counts: [], shown: undefined };

/** The first row's first window, as the probe across its end needs it. */
export interface FirstWindow {
  /** When its opening request was sent, and that request. */
  readonly start: number;
  readonly opening: ProbeAnswer;
  /** The request over the limit, and its Retry-After when usable. */
  readonly refused: ProbeAnswer;
  readonly retryAfter: number | undefined;
  /** When the rest of the limit began to be sent from the window's middle, and when the last of it was answered. */
  readonly beforeStart: number;
  readonly beforeEnd: number;
  /** How many requests to send after the window's end: as many as a fixed window lets pass. */
  readonly fits: number;
  /** Whether the requests across the window's end can tell its kind. */
  readonly kindProbe: boolean;
}

/** The requests of a burst: how many passed before the first 429, which ends it. */
export interface Burst {
  readonly passed: number;
  readonly answers: readonly ProbeAnswer[];
  readonly refused?: ProbeAnswer;
}
