// Runs the probes: against the server, several endpoints at a time; or against a simulated server, for the plan.
import { Counted } from './counted.js';
import { resolveRun, type Run, type Target } from './options.js';
import { Probe } from './probe.js';
import type { Probing, ProbeStep, Reply, SharedByProbes } from './steps.js';
import type { EndpointPlan, EndpointReport, VerifyOptions, VerifyPlan, VerifyReport } from './types.js';

// Settles within `timeoutMs` whatever fetch does. The deadline's timer keeps the process alive: a fetch on a socket
// the server closed holds nothing that does, and an empty loop would end the process as if every check had passed.
async function request(run: Run, target: Target, step: ProbeStep & { kind: 'send' }): Promise<Reply> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_done, fail) => {
    timer = setTimeout(() => {
      controller.abort();
      fail(controller.signal.reason);
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
    if (controller.signal.aborted) {
      return { failed: `no response within ${run.timeoutMs / 1000} s` };
    }
    const { message, cause } = (error ?? {}) as { message?: unknown; cause?: unknown };
    const { code, message: causeMessage } = (cause ?? {}) as { code?: unknown; message?: unknown };
    return { failed: String(code ?? causeMessage ?? message ?? error) };
  } finally {
    clearTimeout(timer);
    deadline.catch(() => {});
  }
  // Frees the connection without waiting for the body.
  response.body?.cancel().catch(() => {});
  return { status: response.status, headers: response.headers, at: run.now() };
}

class Stopped extends Error {}

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

// Once a task fails, no other starts and those under way stop at their next step; then the first failure is thrown.
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
 * Probes a running API and checks that it enforces the table: limits, 429s, windows and their kind, counters per
 * token; see docs/verify.md. Rejects with a `ListingLimitsError` when the options cannot work; a server that cannot
 * be reached, or bans this client, is a finding.
 */
export async function verifyContract(options: VerifyOptions): Promise<VerifyReport> {
  const run = resolveRun(options);
  const shared: SharedByProbes = { banned: false };
  const total = run.targets.length;
  const endpoints = await pool(run.targets, run.concurrency, async (target, i, stopped) => {
    run.onProgress({ type: 'endpoint', endpoint: target.name, index: i + 1, total });
    const result = await drive(new Probe(run, target, shared).report(), run, target, stopped);
    run.onProgress({ type: 'done', result });
    return result;
  });
  const { baseUrl, window, strictHeaders } = run;
  return { baseUrl, window, strictHeaders, ok: endpoints.every((e) => e.ok), endpoints };
}

// The probe runs against a simulated server that honours the table, on a clock of its own: the plan is what a run does.
function simulate(run: Run, target: Target): EndpointPlan {
  let clock = 0;
  const counters = new Map<string | undefined, Counted>();
  const probing = new Probe({ ...run, now: () => clock }, target, { banned: false }).report();
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

function makespan(durations: readonly number[], concurrency: number): number {
  const lanes: number[] = Array.from({ length: Math.min(concurrency, durations.length) }, () => 0);
  for (const ms of durations) {
    const lane = lanes.indexOf(Math.min(...lanes));
    lanes[lane] = (lanes[lane] as number) + ms;
  }
  return Math.max(0, ...lanes);
}

/**
 * The requests and waits of {@link verifyContract} against a server that honours the contract, sending nothing.
 * Throws a `ListingLimitsError` when the options cannot work.
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
