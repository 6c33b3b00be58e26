// GET calls: answers kept for the endpoint's cacheMs, and one request for every concurrent caller of a URL.
import type { Endpoint } from './endpoints.js';
import { abortable } from './exchange.js';
import type { Sender } from './sender.js';

/** GET answers kept at the most; the least recently used go first. */
const CACHE_ENTRIES = 500;

interface Shared {
  readonly promise: Promise<unknown>;
  readonly controller: AbortController;
  callers: number;
}

export class Gets {
  readonly #cache = new Map<string, { value: unknown; until: number }>();
  readonly #underWay = new Map<string, Shared>();

  constructor(private readonly sender: Sender) {}

  get(endpoint: Endpoint, url: string, signal: AbortSignal | undefined): Promise<unknown> {
    const kept = this.#cache.get(url);
    if (kept && kept.until > Date.now()) {
      this.#cache.delete(url);
      this.#cache.set(url, kept);
      return Promise.resolve(kept.value);
    }
    const shared = this.#underWay.get(url) ?? this.#start(endpoint, url);
    shared.callers++;
    if (!signal) return shared.promise;
    // Cancelled only when every caller has aborted.
    const leave = () => {
      if (--shared.callers === 0) shared.controller.abort(signal.reason);
    };
    if (signal.aborted) leave();
    else signal.addEventListener('abort', leave, { once: true });
    const off = () => signal.removeEventListener('abort', leave);
    shared.promise.then(off, off);
    return abortable(shared.promise, signal);
  }

  #start(endpoint: Endpoint, url: string): Shared {
    const controller = new AbortController();
    const promise = this.sender
      .call(endpoint, url, undefined, controller.signal)
      .finally(() => this.#underWay.delete(url));
    const shared: Shared = { promise, controller, callers: 0 };
    this.#underWay.set(url, shared);
    if (endpoint.cacheMs > 0)
      promise.then(
        (value) => this.#keep(url, value, endpoint.cacheMs),
        () => {},
      );
    return shared;
  }

  #keep(url: string, value: unknown, ms: number): void {
    this.#cache.delete(url);
    this.#cache.set(url, { value, until: Date.now() + ms });
    if (this.#cache.size > CACHE_ENTRIES) this.#cache.delete(this.#cache.keys().next().value as string);
  }
}
