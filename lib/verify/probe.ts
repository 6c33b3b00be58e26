// One endpoint's probe: the checks of docs/verify.md, in its order, as steps a runner carries out against a server.
import type { Limit, WindowKind } from '../contract/limit.js';
import { readFields } from '../contract/read-headers.js';
import { marginMs } from './counted.js';
import { type ProbeAnswer, checkFields, checkRetryAfter, type Expectation, isRefusal, FieldsSeen } from './fields.js';
import { Findings, requestsText, shown, tenths } from './findings.js';
import { kindSeen } from './kind.js';
import type { Run, Target } from './options.js';
import {
  Banned,
  type Burst,
  ClientCounts,
  type FirstWindow,
  type Probing,
  type Reply,
  RequestFailed,
  type Row,
  type SharedByProbes,
  type ProbeStep,
  UNKNOWN,
} from './steps.js';
import type { VerifyWaitReason, WindowSeen } from './types.js';

export class Probe {
  private readonly found = new Findings();
  private readonly seen = new FieldsSeen(this.found);
  /** None: the fields were never seen, rather than not sent. */
  private answers = 0;
  private readonly rows: readonly Row[];
  private readonly own: ClientCounts;
  /** Paths per token answered neither 403 nor 429: a 403 there later is a ban. */
  private readonly served = new Set<string>();
  private requests = 0;
  private boundaryRequests = 0;
  private waitMs = 0;
  private windowSeen: WindowSeen;

  constructor(
    private readonly run: Run,
    private readonly target: Target,
    private readonly shared: SharedByProbes,
  ) {
    const several = target.limits.length > 1;
    this.rows = target.limits.map(({ limit, windowMs }, index) => ({
      index,
      limit,
      windowMs,
      seconds: windowMs / 1000,
      margin: marginMs(windowMs, run.graceMs),
      label: several ? `${limit} per ${windowMs / 1000} s: ` : '',
    }));
    this.own = new ClientCounts(target.limits, run.graceMs);
    this.windowSeen = !several && (target.limits[0] as Limit).limit === 1 ? 'either' : 'not probed';
  }

  *report(): Probing {
    try {
      yield* this.probe();
    } catch (error) {
      if (error instanceof RequestFailed) this.found.find('request', `request failed: ${error.message}`);
      else if (error instanceof Banned) this.found.find('banned', error.message);
      else throw error;
    }
    if (this.answers > 0) this.seen.noteMissing();
    const { name, method, path, limits, paths } = this.target;
    const first = limits[0] as Limit;
    return {
      endpoint: name,
      method,
      path,
      limit: first.limit,
      windowMs: first.windowMs,
      limits,
      paths,
      requests: this.requests,
      waitMs: this.waitMs,
      boundaryRequests: this.boundaryRequests,
      boundaryWaitMs: 0,
      ...this.found.verdicts(this.run.strictHeaders, this.seen.sent, this.answers > 0),
      windowSeen: this.windowSeen,
    };
  }

  private *send(path: string, authorization: string | undefined): Generator<ProbeStep, ProbeAnswer, Reply> {
    this.requests++;
    const sent = this.run.now();
    const reply = yield { kind: 'send', path, authorization };
    if (reply === undefined) throw new TypeError('A request was answered with nothing.');
    if ('failed' in reply) throw new RequestFailed(reply.failed);
    const { status, headers, at } = reply;
    const answer: ProbeAnswer = { status, headers, fields: readFields(headers, at), sent, at };
    this.answers++;
    const other = authorization !== undefined && authorization === this.run.otherToken;
    const key = `${other ? 'other' : 'own'} ${path}`;
    const retryAfter = answer.headers.get('retry-after');
    // A route may answer 403 to every request; a ban comes where requests were served, or says when it ends.
    if (answer.status === 403 && (retryAfter !== null || this.served.has(key) || this.shared.banned)) {
      this.shared.banned = true;
      throw new Banned(
        `banned by the server: 403 on request ${this.requests}${other ? ', with the other token' : ''}` +
          `${retryAfter === null ? '' : ` (Retry-After: ${shown(retryAfter)})`}; not probed further`,
      );
    }
    if (answer.status !== 403 && !isRefusal(answer.status)) this.served.add(key);
    this.seen.record(answer);
    if (answer.status >= 400 && !isRefusal(answer.status)) {
      this.found.note(`${this.target.method} ${path} answered ${answer.status}`);
    }
    return answer;
  }

  private *wait(ms: number, reason: VerifyWaitReason): Generator<ProbeStep, void, Reply> {
    const wait = Math.ceil(ms);
    if (wait <= 0) return;
    this.waitMs += wait;
    yield { kind: 'wait', ms: wait, reason };
  }

  private checkFields(answer: ProbeAnswer, expected: Expectation): void {
    checkFields(answer, this.target.limits, expected, this.found);
  }

  private checkRetryAfter(answer: ProbeAnswer, row: Row): number | undefined {
    return checkRetryAfter(answer, row.windowMs, this.found, this.seen, row.label);
  }

  private *burst(
    client: ClientCounts,
    paths: readonly string[],
    max: number,
    authorization: string | undefined,
  ): Generator<ProbeStep, Burst, Reply> {
    const answers: ProbeAnswer[] = [];
    for (let n = 0; n < max; n++) {
      const answer = yield* this.send(paths[n % paths.length] as string, authorization);
      answers.push(answer);
      client.record(answer);
      this.checkFields(answer, client.expect(this.run.window, answer));
      if (isRefusal(answer.status)) return { passed: n, answers, refused: answer };
    }
    return { passed: max, answers };
  }

  // More than `limit` passed, but over longer than a window: nothing can be told of the limit.
  private tooSlow(row: Row, passed: number, start: number): boolean {
    const took = this.run.now() - start;
    if (passed <= row.limit || took < row.windowMs) return false;
    this.found.find(
      `limit ${row.index}`,
      `${row.label}inconclusive: ${requestsText(passed)} took ${Number((took / 1000).toFixed(1))} s, ` +
        `longer than the contract's window of ${row.seconds} s`,
    );
    return true;
  }

  private *probe(): Generator<ProbeStep, void, Reply> {
    const first = yield* this.firstWindow();
    if (!first || !(yield* this.acrossTheEnd(first))) return;
    yield* this.otherClient();
    if (this.found.any) return;
    const kind = this.windowSeen === 'fixed' || this.windowSeen === 'sliding' ? this.windowSeen : this.run.window;
    for (const row of this.rows.slice(1)) if (!(yield* this.fill(row, kind))) return;
  }

  // One request opens the first row's window, the rest of the limit follows from its middle, then one more, refused.
  private *firstWindow(): Generator<ProbeStep, FirstWindow | undefined, Reply> {
    const { run, target } = this;
    const row = this.rows[0] as Row;
    const { limit, windowMs, margin, label } = row;
    const [first] = target.paths as [string];
    let start = this.run.now();
    let opening = yield* this.send(first, run.token);
    if (opening.status === 429) {
      // A whole window: a sliding one frees a request when Retry-After says, but is empty only a window later.
      const wait = Math.max(...this.rows.map((r) => r.windowMs)) + run.graceMs;
      this.found.note(`the counter was in use: waited ${Math.ceil(wait / 1000)} s for a fresh window`);
      yield* this.wait(wait, 'busy');
      start = this.run.now();
      opening = yield* this.send(first, run.token);
    }
    this.own.record(opening);
    this.checkFields(opening, this.own.expect(run.window, opening));
    if (isRefusal(opening.status)) {
      this.found.refusedEarly(
        opening.status,
        'limit 0',
        `${label}allowed 0 requests, contract says ${limit}`,
        `on the first request of a window, within the contract's limit of ${limit}`,
        label,
      );
      this.checkRetryAfter(opening, row);
      return undefined;
    }

    if (limit > 1) yield* this.wait(start + windowMs / 2 - this.run.now(), 'boundary');
    const beforeStart = this.run.now();
    const rest = yield* this.burst(this.own, [first], limit, run.token);
    const passed = 1 + rest.passed;
    if (this.tooSlow(row, passed, start)) return undefined;
    if (passed > limit) {
      this.found.find('limit 0', `${label}allowed ${requestsText(passed)}, contract says ${limit}`);
      return undefined;
    }
    const refused = rest.refused as ProbeAnswer;
    if (passed < limit) {
      this.found.refusedEarly(
        refused.status,
        'limit 0',
        `${label}allowed ${requestsText(passed)}, contract says ${limit}`,
        `on request ${passed + 1} of a window, within the contract's limit of ${limit}`,
        label,
      );
      this.checkRetryAfter(refused, row);
      return undefined;
    }
    this.found.refusedAs(refused.status);
    const retryAfter = this.checkRetryAfter(refused, row);
    const beforeEnd = limit > 1 ? (rest.answers[limit - 2] as ProbeAnswer).at : beforeStart;
    const fixed = this.own.counted.fixed;
    // A fixed window lets as many pass after its end as the other limits leave; one at least, to see it open again.
    const fits = Math.max(Math.min(limit, ...this.rows.slice(1).map((r) => fixed.least(r.index, this.run.now()))), 1);
    let kindProbe = limit > 1 && fits > 1;
    if (this.rows.length > 1 && limit === 1) {
      this.found.note('window kind not probed: its shortest limit is 1 request, which both kinds count alike');
    } else if (limit > 1 && !kindProbe) {
      this.found.note(
        `window kind not probed: the endpoint's other limits leave ${requestsText(fits)} after the end of its ` +
          `${row.seconds} s window`,
      );
    }
    if (kindProbe && (beforeEnd - start > windowMs - margin || beforeEnd - start >= windowMs)) {
      this.windowSeen = 'unclear';
      this.found.note(
        `${label}window kind inconclusive: ${requestsText(limit - 1)} sent from the middle of a window took ` +
          `${tenths(beforeEnd - beforeStart)} s, too close to its end`,
      );
      kindProbe = false;
    }
    return {
      start,
      opening,
      refused,
      retryAfter,
      beforeStart,
      beforeEnd,
      fits,
      kindProbe,
    };
  }

  // A Retry-After that ends well within the window is checked first: a client that obeys it must be served.
  private *acrossTheEnd(opened: FirstWindow): Generator<ProbeStep, boolean, Reply> {
    const { run } = this;
    const row = this.rows[0] as Row;
    const { limit, windowMs, margin, label } = row;
    const [first] = this.target.paths as [string];
    const { start, opening, refused, retryAfter } = opened;
    const retryEnd = retryAfter === undefined ? Infinity : refused.at + retryAfter * 1000;
    if (retryEnd + run.graceMs < start + windowMs - margin) {
      yield* this.wait(retryEnd + run.graceMs - this.run.now(), 'window');
      const again = yield* this.send(first, run.token);
      this.own.record(again);
      if (!isRefusal(again.status)) {
        this.found.find(
          'window 0',
          `${label}allowed ${requestsText(limit + 1)} within ${tenths(again.at - start)} s once Retry-After had ` +
            `passed (${retryAfter} s), contract says ${limit} per ${row.seconds} s`,
        );
        return false;
      }
      // The window holds, as the contract says: Retry-After told the client to come back too soon.
      this.checkFields(again, this.own.expect(run.window, again));
      this.found.refusedAs(again.status);
      if (again.status === 429) {
        this.found.findField(
          'retry-after-passed',
          `${label}still refused when Retry-After had passed (${retryAfter} s)`,
        );
      }
    }

    yield* this.wait(opening.at + windowMs + margin - this.run.now(), 'window');
    const { fits, kindProbe } = opened;
    const after: ProbeAnswer[] = [];
    const expected: Record<WindowKind, Expectation>[] = [];
    while (after.length < fits && !isRefusal(after.at(-1)?.status ?? 200)) {
      if (after.length > 0) this.boundaryRequests++;
      const answer = yield* this.send(first, run.token);
      this.own.record(answer);
      expected.push({ fixed: this.own.expect('fixed', answer), sliding: this.own.expect('sliding', answer) });
      after.push(answer);
    }
    const last = after.at(-1) as ProbeAnswer;
    if (last === after[0] && isRefusal(last.status)) {
      this.checkFields(last, UNKNOWN);
      this.found.refusedEarly(
        last.status,
        'window 0',
        `${label}window longer than the contract's: still refused when its ${row.seconds} s had passed`,
        `when the window's ${row.seconds} s had passed, within the contract's limit of ${limit}`,
        label,
      );
      this.checkRetryAfter(last, row);
      return false;
    }
    if (kindProbe) {
      const retryAfterOf = (answer: ProbeAnswer) => this.checkRetryAfter(answer, row);
      this.windowSeen = kindSeen(this.run.window, row, opened, after, this.found, retryAfterOf);
    }
    const seen = this.windowSeen;
    const kind = seen === 'either' ? 'fixed' : seen === 'fixed' || seen === 'sliding' ? seen : undefined;
    after.forEach((answer, i) => {
      this.checkFields(answer, kind ? (expected[i] as Record<WindowKind, Expectation>)[kind] : UNKNOWN);
    });
    return true;
  }

  // With path parameters, another token's `limit + 1` requests alternate between the paths: both count on one counter.
  private *otherClient(): Generator<ProbeStep, void, Reply> {
    const { run, target } = this;
    const row = this.rows[0] as Row;
    const [first, second] = target.paths as [string, string?];
    const start = this.run.now();
    const client = new ClientCounts(target.limits, run.graceMs);
    const paths = second === undefined ? [first] : [second, first];
    const burst = yield* this.burst(client, paths, second === undefined ? 1 : row.limit + 1, run.otherToken);
    const opening = burst.answers[0] as ProbeAnswer;
    if (isRefusal(opening.status)) {
      this.found.refusedEarly(
        opening.status,
        'token',
        'a different token shares the counter',
        "to another token's first request",
      );
      return;
    }
    if (second === undefined || this.tooSlow(row, burst.passed, start)) return;
    const { refused } = burst;
    if (burst.passed > row.limit) this.found.find('params', 'path parameters counted separately');
    else if (burst.passed < row.limit) {
      this.found.refusedEarly(
        (refused as ProbeAnswer).status,
        'limit other',
        `${row.label}allowed ${requestsText(burst.passed)} with another token, contract says ${row.limit}`,
        `on another token's request ${burst.passed + 1}, within the contract's limit of ${row.limit}`,
        row.label,
      );
    } else if (refused) this.found.refusedAs(refused.status);
    if (refused) this.checkRetryAfter(refused, row);
  }

  // Each request is sent when the other rows surely let it pass, until this row refuses one.
  private *fill(row: Row, kind: WindowKind): Generator<ProbeStep, boolean, Reply> {
    const { run } = this;
    const counted = this.own.counted[kind];
    const [path] = this.target.paths as [string];
    const { index, limit, seconds, label } = row;
    const began = this.run.now();
    let refused: ProbeAnswer | undefined;
    while (!refused) {
      const ready = counted.readyAt(this.run.now(), index);
      if (ready - began > 2 * row.windowMs + 2 * row.margin) {
        this.found.note(
          `${label}not checked: the endpoint's shorter limits, with the margins kept around their windows' ends, ` +
            `do not let ${requestsText(limit)} into ${seconds} s`,
        );
        return true;
      }
      yield* this.wait(ready - this.run.now(), 'limit');
      const time = this.run.now();
      const count = counted.count(index, { sent: time, at: time }) ?? 0;
      const answer = yield* this.send(path, run.token);
      this.own.record(answer);
      this.checkFields(answer, this.own.expect(kind, answer));
      if (count >= limit && !isRefusal(answer.status)) {
        this.found.find(`limit ${index}`, `${label}allowed ${requestsText(count + 1)}, contract says ${limit}`);
        return false;
      }
      if (count < limit && isRefusal(answer.status)) {
        this.found.refusedEarly(
          answer.status,
          `limit ${index}`,
          `${label}allowed ${requestsText(count)}, contract says ${limit}`,
          `on request ${count + 1}, within the contract's limit`,
          label,
        );
        this.checkRetryAfter(answer, row);
        return false;
      }
      if (isRefusal(answer.status)) refused = answer;
    }
    this.found.refusedAs(refused.status);
    this.checkRetryAfter(refused, row);

    const ready = counted.readyAt(this.run.now());
    yield* this.wait(ready - this.run.now(), 'window');
    const answer = yield* this.send(path, run.token);
    this.own.record(answer);
    this.checkFields(answer, this.own.expect(kind, answer));
    if (isRefusal(answer.status)) {
      this.found.refusedEarly(
        answer.status,
        `window ${index}`,
        `${label}window longer than the contract's: still refused when its ${seconds} s had passed`,
        `when the window's ${seconds} s had passed, within the contract's limit`,
        label,
      );
      this.checkRetryAfter(answer, row);
      return false;
    }
    return true;
  }
}
