// One exchange with the server: the request sent, the answer read whole and bounded, waits that abort.
import { clip, isPlainObject, MAX_TIMER_MS } from '../shared/check.js';
import { ListingClientError } from './errors.js';
import { type ServerLimit } from '../contract/read-headers.js';

const MAX_BODY_BYTES = 16 * 1024 * 1024;
const MESSAGE_CHARS = 200;

export interface Answer {
  readonly res: Response;
  readonly body: unknown;
}

/** JSON when the answer says so, else text; `undefined` when empty. */
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

/** `answered 429: <the body's message, else its text>`, cut short, on one line. */
function answered(status: number, body: unknown): string {
  const text = isPlainObject(body) && typeof body.message === 'string' ? body.message : body;
  const line = typeof text === 'string' ? text.replace(/\p{Cc}+/gu, ' ').trim() : '';
  if (line === '') return `answered ${status}`;
  return `answered ${status}: ${clip(line, MESSAGE_CHARS)}`;
}

export function quoteAnswer(status: number, body: unknown): string {
  return ` (${answered(status, body)})`;
}

export function httpError(name: string, { res, body }: Answer): ListingClientError {
  const text = answered(res.status, body);
  return new ListingClientError('ERR_HTTP', name, /[.!?]$/.test(text) ? text : `${text}.`, {
    status: res.status,
    body,
  });
}

/** The timer keeps the process alive, as the call that waits on it does. */
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

export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((done, fail) => {
    const onAbort = () => fail(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(done, fail).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Reads the answer whole within `timeoutMs`, and settles then even if `send` ignores its signal. */
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

/** What a 429 without `Retry-After` asks: the longest reset among the spent limits. */
export function spentResetMs(limits: readonly ServerLimit[] | undefined): number | undefined {
  const resets = (limits ?? []).filter((limit) => limit.remaining === 0).map((limit) => limit.resetMs);
  return resets.length === 0 ? undefined : Math.max(...resets);
}
