// A call sent paced and read: its turn, its request, and what the answer asks (a retry, a backoff, a ban, an error).
import { isPlainObject } from '../shared/check.js';
import { ListingClientError } from './errors.js';
import { readRetryAfter, readServerLimits, type ServerLimit } from '../contract/read-headers.js';
import type { Endpoint, Endpoints } from './endpoints.js';
import { type Answer, delay, exchange, httpError, quoteAnswer, spentResetMs } from './exchange.js';
import type { ClientSettings } from './options.js';
import type { Ticket } from './pacing.js';

/** Each retry doubles it, less up to half. */
const BACKOFF_MS = 500;
/** The latest time a `Date` can hold. */
const MAX_DATE_MS = 8.64e15;

type Next = 'done' | 'again' | 'backoff';

export function retryAfterMs(headers: Headers, now: number): number | undefined {
  const read = readRetryAfter(headers, now);
  return read && 'ms' in read ? read.ms : undefined;
}

function bannedError(name: string, until: number | undefined, status?: number, body?: unknown): ListingClientError {
  const end = until === undefined ? 'the server gave no end' : `until ${new Date(until).toISOString()}`;
  const quote = status === undefined ? '' : quoteAnswer(status, body);
  return new ListingClientError('ERR_BANNED', name, `the token is banned, ${end}${quote}.`, {
    status,
    bannedUntil: until === undefined ? undefined : new Date(until),
    body,
  });
}

/** Sends the calls of one client, each in its endpoint's turn; a ban bans the whole client. */
export class Sender {
  #bannedUntil = 0;
  readonly #running = new Set<Promise<unknown>>();

  constructor(
    private readonly settings: ClientSettings,
    private readonly endpoints: Endpoints,
  ) {}

  /** `body` gives the JSON when the request goes, so that a report sends its latest. */
  call(
    endpoint: Endpoint,
    url: string,
    body: (() => string | undefined) | undefined,
    signal?: AbortSignal,
  ): Promise<unknown> {
    const promise = this.#attempts(endpoint, url, body, signal);
    this.#running.add(promise);
    const forget = () => this.#running.delete(promise);
    promise.then(forget, forget);
    return promise;
  }

  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
  }

  async #attempts(
    endpoint: Endpoint,
    url: string,
    body: (() => string | undefined) | undefined,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const { fetch, timeoutMs } = this.settings;
    for (let attempt = 0; ; attempt++) {
      const ticket = await this.#turn(endpoint, attempt > 0, signal);
      const init = this.#init(endpoint.method, body?.());
      let answer: Answer;
      try {
        answer = await exchange(fetch, url, init, signal, timeoutMs, endpoint.name);
      } catch (error) {
        // Counted as answered when it failed: the server may have counted it up to then.
        endpoint.pacer.answered(ticket, Date.now(), undefined, false);
        const again = error instanceof ListingClientError && error.code !== 'ERR_TOO_LARGE';
        if (!again || endpoint.method !== 'GET' || attempt >= this.settings.retries) throw error;
        await this.#backoff(endpoint, attempt, signal);
        continue;
      }
      const next = this.#read(endpoint, ticket, answer, attempt);
      if (next === 'done') return answer.body;
      if (next === 'backoff') await this.#backoff(endpoint, attempt, signal);
    }
  }

  async #turn(endpoint: Endpoint, retry: boolean, signal: AbortSignal | undefined): Promise<Ticket> {
    this.#refuseWhenBanned(endpoint.name);
    const ticket = await endpoint.pacer.take(signal, retry);
    if (this.#bannedUntil > Date.now() || signal?.aborted) {
      endpoint.pacer.cancel(ticket);
      this.#refuseWhenBanned(endpoint.name);
      throw signal?.reason;
    }
    return ticket;
  }

  #init(method: string, body: string | undefined): RequestInit {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (this.settings.token !== undefined) headers.Authorization = this.settings.token;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    return { method, headers, body };
  }

  #read(endpoint: Endpoint, ticket: Ticket, answer: Answer, attempt: number): Next {
    const at = Date.now();
    const { res, body } = answer;
    const told = readServerLimits(res.headers, at);
    endpoint.pacer.answered(ticket, at, told, res.ok);
    if (res.ok) return 'done';
    if (res.status === 403 && isPlainObject(body) && 'bannedUntil' in body) throw this.#ban(endpoint.name, answer, at);
    if (res.status === 429) return this.#refused(endpoint, answer, told, attempt, at);
    if (res.status >= 500 && endpoint.method === 'GET' && attempt < this.settings.retries) return 'backoff';
    throw httpError(endpoint.name, answer);
  }

  #refused(endpoint: Endpoint, answer: Answer, told: readonly ServerLimit[] | undefined, attempt: number, at: number) {
    const { pacer, name } = endpoint;
    const { res, body } = answer;
    const waitMs = retryAfterMs(res.headers, at) ?? spentResetMs(told) ?? pacer.windowMs;
    pacer.refused(waitMs, at);
    const quote = quoteAnswer(res.status, body);
    if (waitMs > this.settings.maxWaitMs) throw pacer.tooLong(waitMs, { status: res.status, body, quote });
    if (attempt >= this.settings.retries) {
      throw new ListingClientError('ERR_RATE_LIMITED', name, `refused after ${attempt + 1} attempts${quote}.`, {
        status: res.status,
        waitMs,
        body,
      });
    }
    this.settings.onWait({ endpoint: name, ms: waitMs, reason: 'retry-after' });
    return 'again' as const;
  }

  async #backoff(endpoint: Endpoint, attempt: number, signal: AbortSignal | undefined): Promise<void> {
    const ms = BACKOFF_MS * 2 ** attempt;
    const wait = Math.min(Math.round(ms / 2 + (Math.random() * ms) / 2), this.settings.maxWaitMs);
    this.settings.onWait({ endpoint: endpoint.name, ms: wait, reason: 'backoff' });
    await delay(wait, signal);
  }

  #refuseWhenBanned(name: string): void {
    if (this.#bannedUntil > Date.now()) throw bannedError(name, this.#bannedUntil);
  }

  /** Until `bannedUntil`, else `Retry-After`; every call in line rejects at once, and later calls without a request. */
  #ban(name: string, answer: Answer, at: number): ListingClientError {
    const body = answer.body as Record<string, unknown>;
    let until = typeof body.bannedUntil === 'string' ? Date.parse(body.bannedUntil) : Number.NaN;
    if (Number.isNaN(until)) until = at + (retryAfterMs(answer.res.headers, at) ?? Number.NaN);
    const end = Number.isNaN(until) ? undefined : Math.min(until, MAX_DATE_MS);
    if (end !== undefined && end > Math.max(this.#bannedUntil, at)) {
      this.#bannedUntil = end;
      for (const { name: other, pacer } of this.endpoints.values()) pacer.clear(bannedError(other, end));
    }
    return bannedError(name, end, answer.res.status, answer.body);
  }
}
