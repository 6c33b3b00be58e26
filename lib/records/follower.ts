// The cache kept up with the store's runtime state: its updates applied as they come, and a state that was replaced.
import { RuntimeStateError } from '../shared/errors.js';
import type { OnError } from '../shared/hooks.js';
import type { Follower, RecordChange, RuntimeState } from '../stores/state.js';
import type { RecordCache, Replacement } from './cache.js';

/**
 * Keeps the cache following the store's runtime state (at once with the memory store, every 250 ms with the Redis
 * store, reading only what changed), from `start()` to `stop()`. Until the state has been read once, or `firstReadMs`
 * has passed, the cache's `ready` is that first read.
 */
export class CacheFollower {
  #follower: Follower | undefined;

  constructor(
    private readonly state: RuntimeState,
    private readonly cache: RecordCache,
    private readonly context: {
      /** The longest the first read of the state holds requests up (the store's `timeoutMs`, else a second). */
      readonly firstReadMs: number;
      /** Told after each read of the state the store answered, with the route of the part that answered. */
      readonly answered: (route: string) => void;
      readonly report: OnError;
      /** Writes what a replaced state calls for: the lost records kept, the records lifted before removed again. */
      readonly write: (changes: readonly RecordChange[]) => Promise<unknown>;
    },
  ) {}

  /** Whether the cache follows the store: from `start()` to `stop()`. */
  get active(): boolean {
    return this.#follower !== undefined;
  }

  /** Starts following the state: once the middleware is made, so that a configuration that fails leaves nothing. */
  start(): void {
    if (this.#follower) return;
    this.#follower = this.state.follow((update) => {
      const replacement = this.cache.apply(update);
      if (replacement) this.#replaced(replacement).catch((error: unknown) => this.context.report(error, undefined));
    }, this.context.answered);
    if (this.cache.loaded) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.context.firstReadMs);
      timer.unref?.();
    });
    const first = this.#follower.sync().catch(() => {});
    this.cache.ready = Promise.race([first, bound]).then(() => {
      clearTimeout(timer);
      this.cache.ready = undefined;
    });
  }

  /** Resolves once the cache holds the state as it was at the call; rejects when the store failed. */
  sync(): Promise<void> {
    return this.#follower ? this.#follower.sync() : Promise.resolve();
  }

  stop(): void {
    this.#follower?.stop();
    this.#follower = undefined;
  }

  /** What the cache found of a replaced state: the changes it calls for written, then `onError` told. */
  async #replaced({ changes, message }: Replacement): Promise<void> {
    if (changes.length > 0) await this.context.write(changes);
    if (message !== undefined) this.context.report(new RuntimeStateError('ERR_STATE_LOST', message), undefined);
  }
}
