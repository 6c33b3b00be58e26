// A call sent paced and read: its turn, its request, and what the answer asks (a retry, a backoff, a ban, an error).
import { isPlainObject } from '../shared/check.js';
import { ListingClientError } from './errors.js';
import { readServerLimits, retryAfterMs, type ServerLimit } from '../contract/read-headers.js';
import type { Endpoint, Endpoints } from './endpoints.js';
import { type Answer, delay, exchange, httpError, quoteAnswer, spentResetMs } from './exchange.js';
import type { ClientSettings } from './options.js';
import type { Ticket } from './pacing.js';

/** The first backoff of a GET after a network error, a timeout or a 5xx; each retry doubles it, less up to half. */
const BACKOFF_MS = 500;
/** The latest time a `Date` can hold. */
const MAX_DATE_MS = 8.64e15;

/** What an answer asks of its call: done, sent again in its turn, or sent again after a backoff. */
type Next = 'done' | 'again' | 'backoff';

/** The ERR_BANNED of a call: until `until`, or with no end told; `status` and `body` of the answer that said so. */
function bannedError(name: string, until: number | undefined, status?: number, body?: unknown): ListingClientError {
  const end = until === undefined ? 'the server gave no end' : `until ${new Date(until).toISOString()}`;
  const quote = status === undefined ? '' : quoteAnswer(status, body);
  return new ListingClientError('ERR_BANNED', name, `the token is banned, ${end}${quote}.`, {
    status,
    bannedUntil: until === undefined ? undefined : new Date(until),
    body,
  });
}

/**
 * Sends the calls of one client, each paced by its endpoint: retries 429s, and network errors, timeouts and 5xx of a
 * GET. A ban bans the whole client. Keeps every call under way, for close() to wait for.
 */
export class Sender {
  #bannedUntil = 0;
  readonly #running = new Set<Promise<unknown>>();

  constructor(
    private readonly settings: ClientSettings,
    private readonly endpoints: Endpoints,
  ) {}

  /** Sends one call and resolves with its answer's body. `body` gives the JSON to send when the request goes. */
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

  /** Resolves when every call made so far is done, those they lead to included. */
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

  /** Waits for the call's turn; a call in line when the client is banned or the call aborted gives its turn back. */
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

  /** Tells the endpoint's pacer what the answer said, and what the call does next; throws when it ends in an error. */
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

  /** A 429: the endpoint waits what it asks, and the call goes again in its turn, unless it would wait too long. */
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

  /**
   * A 403 that says the token is banned: the whole client is, until `bannedUntil` (or, unreadable, its
   * `Retry-After`); every call waiting for its turn rejects at once, and later calls without a request.
   */
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
