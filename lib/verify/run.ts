// Runs the probes: against the server, several endpoints at a time; or against a simulated server, for the plan.
import { Counted } from './counted.js';
import { resolveRun, type Run, type Target } from './options.js';
import { Probe } from './probe.js';
import type { Probing, ProbeStep, Reply, SharedByProbes } from './steps.js';
import type { EndpointPlan, EndpointReport, VerifyOptions, VerifyPlan, VerifyReport } from './types.js';

/** The deadline of a request, passed: what it fails with. */
class DeadlinePassed extends Error {}

/**
 * Sends one request of a probe; a request that gets no response is told by why. It settles within `timeoutMs`,
 * whatever the server or `fetch` do: the request is aborted then, and not awaited further. The deadline's timer
 * keeps the process alive, as the request it waits for must: a fetch on a socket the server closed holds nothing
 * that does, and a process whose loop is empty would end as if every check had passed.
 */
async function request(run: Run, target: Target, step: ProbeStep & { kind: 'send' }): Promise<Reply> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_done, fail) => {
    timer = setTimeout(() => {
      const error = new DeadlinePassed();
      controller.abort(error);
      fail(error);
    }, run.timeoutMs);
  });
  let response: Response;
  try {
    const sent = Promise.resolve().then(() =>
      run.fetch(`${run.origin}${step.path}`, {
        method: target.method,
        headers: step.authorization === undefined ? {} : { authorization: step.authorization },
        redirect: 'manual',
        signal: controller.signal,
      }),
    );
    sent.catch(() => {});
    response = await Promise.race([sent, deadline]);
  } catch (error) {
    if (error instanceof DeadlinePassed || controller.signal.aborted) {
      return { failed: `no response within ${run.timeoutMs / 1000} s` };
    }
    const { message, cause } = (error ?? {}) as { message?: unknown; cause?: unknown };
    const { code, message: causeMessage } = (cause ?? {}) as { code?: unknown; message?: unknown };
    return { failed: String(code ?? causeMessage ?? message ?? error) };
  } finally {
    clearTimeout(timer);
    deadline.catch(() => {});
  }
  // The body is not needed: drop it so that the connection is freed, without waiting for it.
  response.body?.cancel().catch(() => {});
  return { status: response.status, headers: response.headers, at: run.now() };
}

/** Raised in a probe when another one failed: the run stops at its next step. */
class Stopped extends Error {}

/** Carries out a probe's steps against the server: requests with fetch, waits with sleep. */
async function drive(probing: Probing, run: Run, target: Target, stopped: () => boolean): Promise<EndpointReport> {
  let reply: Reply;
  for (;;) {
    if (stopped()) {
      probing.return(undefined as never);
      throw new Stopped();
    }
    const step = probing.next(reply);
    if (step.done) return step.value;
    if (step.value.kind === 'send') {
      reply = await request(run, target, step.value);
    } else {
      run.onProgress({ type: 'wait', endpoint: target.name, ms: step.value.ms, reason: step.value.reason });
      await run.sleep(step.value.ms);
      reply = undefined;
    }
  }
}

/**
 * Runs `task` on each item, at most `concurrency` at a time, in their order, and resolves to the results in that
 * order. Once a task fails, no other starts and those under way stop at their next step; the first failure is
 * thrown when they have.
 */
async function pool<T, R>(
  items: readonly T[],
  concurrency: number,
  task: (item: T, index: number, stopped: () => boolean) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  let failure: { error: unknown } | undefined;
  const stopped = () => failure !== undefined;
  const worker = async () => {
    while (next < items.length && !failure) {
      const i = next++;
      try {
        results[i] = await task(items[i] as T, i, stopped);
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  if (failure) throw failure.error;
  return results;
}

/**
 * Probes a running API and checks that it enforces the table, every endpoint at once unless `concurrency` says
 * fewer (they count on counters of their own): on each, exactly `limit` requests pass and the next gets a 429 with
 * a Retry-After; the rate-limit fields agree with the table; the window opens again when it should, and requests on
 * either side of its end show the kind of window the server counts (`window`); another token has its own counter,
 * on which different path parameters share one count; each further row of an endpoint of several limits holds too.
 * A server that honours the contract never gets more than `limit + 1` requests on a counter in one of its windows:
 * a fixed window from its first request, any `windowMs` of a sliding one. Across the end of a fixed window,
 * `2 × limit - 1` pass within less than `windowMs`, in two windows: that is what tells the kinds apart.
 * Rejects with a `ListingLimitsError` naming the option when the options cannot work; a server that cannot be
 * reached, or that bans this client, is a finding, not an error.
 */
export async function verifyContract(options: VerifyOptions): Promise<VerifyReport> {
  const run = resolveRun(options);
  const shared: SharedByProbes = { banned: false };
  const total = run.targets.length;
  const endpoints = await pool(run.targets, run.concurrency, async (target, i, stopped) => {
    run.onProgress({ type: 'endpoint', endpoint: target.name, index: i + 1, total });
    const result = await drive(new Probe(run, target, run.now, shared).report(), run, target, stopped);
    run.onProgress({ type: 'done', result });
    return result;
  });
  const { baseUrl, window, strictHeaders } = run;
  return { baseUrl, window, strictHeaders, ok: endpoints.every((e) => e.ok), endpoints };
}

/**
 * What a probe sends and waits against a server that honours the table, each request answered at once: the probe
 * runs against that server, on a clock of its own, so the plan is what a run does.
 */
function simulate(run: Run, target: Target): EndpointPlan {
  let clock = 0;
  const counters = new Map<string | undefined, Counted>();
  const probing = new Probe(run, target, () => clock, { banned: false }).report();
  let reply: Reply;
  for (;;) {
    const step = probing.next(reply);
    if (step.done) {
      const { ok: _ok, findings: _findings, notes: _notes, headers: _headers, windowSeen: _seen, ...plan } = step.value;
      return plan;
    }
    if (step.value.kind === 'wait') {
      clock += step.value.ms;
      reply = undefined;
      continue;
    }
    const { authorization } = step.value;
    let counter = counters.get(authorization);
    if (!counter) counters.set(authorization, (counter = new Counted(target.limits, run.window, 0)));
    const answer = counter.answer(clock);
    const headers = new Headers(answer.passed ? {} : { 'retry-after': String(answer.retryAfter) });
    reply = { status: answer.passed ? 200 : 429, headers, at: clock };
  }
}

/** How long probes of these durations last, `concurrency` at a time, each starting as soon as one has ended. */
function makespan(durations: readonly number[], concurrency: number): number {
  const lanes: number[] = Array.from({ length: Math.min(concurrency, durations.length) }, () => 0);
  for (const ms of durations) {
    const lane = lanes.indexOf(Math.min(...lanes));
    lanes[lane] = (lanes[lane] as number) + ms;
  }
  return Math.max(0, ...lanes);
}

/**
 * What {@link verifyContract} would do with these options, without sending anything: the endpoints, their paths,
 * and the requests and waits of a run against a server that honours the contract.
 * Throws a `ListingLimitsError` naming the option when the options cannot work.
 */
export function planVerification(options: VerifyOptions): VerifyPlan {
  const run = resolveRun(options);
  const endpoints = run.targets.map((target) => simulate(run, target));
  return {
    baseUrl: run.baseUrl,
    window: run.window,
    concurrency: run.concurrency,
    endpoints,
    requests: endpoints.reduce((sum, e) => sum + e.requests, 0),
    waitMs: makespan(
      endpoints.map((e) => e.waitMs),
      run.concurrency,
    ),
  };
}
