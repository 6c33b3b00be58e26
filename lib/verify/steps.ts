// What a probe asks its runner and gets back, and what it keeps as it goes: its clients, rows and windows.
import type { Limit, WindowKind } from '../contract/limit.js';
import { Counted, type Span } from './counted.js';
import { type ProbeAnswer, type Expectation } from './fields.js';
import type { EndpointReport, VerifyWaitReason } from './types.js';

export type ProbeStep =
  | { readonly kind: 'send'; readonly path: string; readonly authorization: string | undefined }
  | { readonly kind: 'wait'; readonly ms: number; readonly reason: VerifyWaitReason };

/** The response to a request, or why none came; nothing after a wait. */
export type Reply =
  { readonly status: number; readonly headers: Headers; readonly at: number } | { readonly failed: string } | undefined;

export type Probing = Generator<ProbeStep, EndpointReport, Reply>;

export interface SharedByProbes {
  /** Once a probe has seen the server ban this client, every 403 is that ban. */
  banned: boolean;
}

export class RequestFailed extends Error {}

export class Banned extends Error {}

export interface Row extends Limit {
  readonly index: number;
  readonly seconds: number;
  readonly margin: number;
  /** Opens the row's findings: `3 per 10 s: `, or nothing for an endpoint of one row. */
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

  expect(kind: WindowKind, answer: Span): Expectation {
    const counted = this.counted[kind];
    return { counts: counted.limits.map((_limit, i) => counted.count(i, answer)), shown: counted.shown(answer) };
  }
}

export const UNKNOWN: Expectation = { counts: [], shown: undefined };

/** The first row's first window, as the probe across its end needs it. */
export interface FirstWindow {
  readonly start: number;
  readonly opening: ProbeAnswer;
  readonly refused: ProbeAnswer;
  readonly retryAfter: number | undefined;
  /** When the rest of the limit began to be sent from the window's middle, and when the last of it was answered. */
  readonly beforeStart: number;
  readonly beforeEnd: number;
  /** The requests to send after the window's end: as many as a fixed window lets pass. */
  readonly fits: number;
  readonly kindProbe: boolean;
}

export interface Burst {
  readonly passed: number;
  readonly answers: readonly ProbeAnswer[];
  readonly refused?: ProbeAnswer;
}
