// One exchange with the server: the request sent, the answer read whole and bounded, waits that abort.
import { isPlainObject, MAX_TIMER_MS } from '../shared/check.js';
import { ListingClientError } from './errors.js';
import { type ServerLimit } from '../contract/read-headers.js';

/** The largest answer body read: a server that sends more is cut off (`ERR_TOO_LARGE`). */
const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** How much of a server's message an error repeats. */
const MESSAGE_CHARS = 200;

/** A server's answer, read whole. */
export interface Answer {
  readonly res: Response;
  readonly body: unknown;
}

/** An answer's body, at most MAX_BODY_BYTES: JSON when it says so, else text; `undefined` when empty. */
async function bodyOf(res: Response, name: string): Promise<unknown> {
  let text = '';
  if (res.body) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let size = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_BODY_BYTES) {
        reader.cancel().catch(() => {});
        throw new ListingClientError('ERR_TOO_LARGE', name, `answered a body over ${MAX_BODY_BYTES} bytes.`, {
          status: res.status,
        });
      }
      text += decoder.decode(value, { stream: true });
    }
    text += decoder.decode();
  }
  if (text === '') return undefined;
  if (!/\bjson\b/i.test(res.headers.get('Content-Type') ?? '')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** What the server said in an answer's body (its `message`, else its text), cut short, on one line. */
function serverMessage(body: unknown): string | undefined {
  const text = isPlainObject(body) && typeof body.message === 'string' ? body.message : body;
  if (typeof text !== 'string') return undefined;
  const line = text.replace(/\p{Cc}+/gu, ' ').trim();
  if (line === '') return undefined;
  return line.length > MESSAGE_CHARS ? `${line.slice(0, MESSAGE_CHARS)}…` : line;
}

/** ` (answered 429: <the server's message>)`, for the errors of an answer. */
export function quoteAnswer(status: number, body: unknown): string {
  const message = serverMessage(body);
  return message === undefined ? ` (answered ${status})` : ` (answered ${status}: ${message})`;
}

/** The ERR_HTTP of an answer that ends its call: its status, and the server's message. */
export function httpError(name: string, { res, body }: Answer): ListingClientError {
  const message = serverMessage(body);
  const text = message === undefined ? `answered ${res.status}.` : `answered ${res.status}: ${message}`;
  return new ListingClientError('ERR_HTTP', name, /[.!?]$/.test(text) ? text : `${text}.`, {
    status: res.status,
    body,
  });
}

/** Resolves after `ms`; the timer keeps the process alive, as the call that waits on it does. */
export function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((done, fail) => {
    if (signal?.aborted) return fail(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      fail(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener('abort', onAbort);
        done();
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settles with `promise`, or rejects with the signal's reason as soon as it aborts. */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((done, fail) => {
    const onAbort = () => fail(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(done, fail).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * Sends one request and reads its answer whole, within `timeoutMs`: the request is aborted then, and the call
 * settles even if `send` ignores its signal. Rejects with the caller's signal's reason, or a ListingClientError.
 */
export async function exchange(
  send: typeof fetch,
  url: string,
  init: RequestInit,
  signal: AbortSignal | undefined,
  timeoutMs: number,
  name: string,
): Promise<Answer> {
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const timeout = new ListingClientError('ERR_TIMEOUT', name, `had no whole answer within ${timeoutMs} ms.`);
  const timer = setTimeout(() => controller.abort(timeout), timeoutMs);
  try {
    const res = await abortable(
      Promise.resolve().then(() => send(url, { ...init, signal: controller.signal })),
      controller.signal,
    );
    return { res, body: await abortable(bodyOf(res, name), controller.signal) };
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (controller.signal.aborted) throw timeout;
    if (error instanceof ListingClientError) throw error;
    throw new ListingClientError('ERR_NETWORK', name, `the request failed: ${String(error)}`, { cause: error });
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  }
}

/** The longest reset among the limits an answer says are spent: what a 429 without `Retry-After` asks. */
export function spentResetMs(limits: readonly ServerLimit[] | undefined): number | undefined {
  const resets = (limits ?? []).filter((limit) => limit.remaining === 0).map((limit) => limit.resetMs);
  return resets.length === 0 ? undefined : Math.max(...resets);
}
