// A client's counters read and cleared without a request: `limits.usage(client)` and `limits.reset(client)`.
import { Checker } from '../../shared/check.js';
import type { CompiledEndpoint } from '../endpoint.js';
import type { CompiledGrants } from '../grants.js';
import type { Client } from '../identify.js';
import { byOption } from '../../records/kinds.js';
import type { Records } from '../../records/records.js';
import type { EndpointUsage } from '../types.js';
import { peekWithin, resetWithin, Resilient } from '../../stores/resilient.js';

/** Reads and clears a client's counters; a counter that cannot peek or reset is refused (`ERR_UNSUPPORTED_STORE`). */
export class Usage {
  constructor(
    private readonly endpoints: readonly CompiledEndpoint[],
    private readonly grants: CompiledGrants,
    private readonly records: Records,
  ) {}

  /** The client as a request of it would be identified, but for its address, which no method call has. */
  #client(check: Checker, client: unknown): Client {
    const { key, kind } = this.records.keyOf(check, client);
    const token = kind === 'token' ? (client as { token?: string }).token : undefined;
    return { key, kind, ip: kind === 'ip' ? key : '', token, tokenKey: kind === 'token' ? key : undefined };
  }

  #readable(check: Checker, endpoints: readonly CompiledEndpoint[], what: string): void {
    const refused = endpoints.find((endpoint) => !endpoint.counter.reads);
    if (refused) {
      const one = refused.window === 'fixed' && refused.limits.length === 1;
      check.fail(
        'ERR_UNSUPPORTED_STORE',
        'options.store',
        `cannot ${what} of ${refused.name}: its counter has no ${one ? '`get` and `delete`' : '`peek` and `reset`'}. ` +
          'Use memoryStore() or redisStore(), or give the store these methods.',
      );
    }
  }

  /** The client's usage of each limit of each endpoint, in table order, on the counter it counts on now. */
  async of(client: unknown): Promise<EndpointUsage[]> {
    const check = new Checker('limits.usage');
    const c = this.#client(check, client);
    const grant = this.grants.known(c);
    const counted = this.endpoints.map((endpoint) =>
      grant === undefined || grant === 'unlimited' ? endpoint : this.grants.variant(endpoint, grant),
    );
    const unlimited = grant === 'unlimited';
    if (!unlimited) this.#readable(check, counted, "read a client's counters");
    const rows = await this.records.calls.bounded('limits.usage', (bound) =>
      Promise.all(
        counted.map(async (counter, i): Promise<EndpointUsage[]> => {
          const endpoint = (this.endpoints[i] as CompiledEndpoint).name;
          // An unlimited client is counted on no counter.
          const counts = unlimited ? [] : await peekWithin(counter.counter, c.key, bound);
          return counter.limits.map(({ limit, windowMs }, at) => {
            const count = counts[at];
            const max = unlimited ? Infinity : limit;
            const used = Math.min(count?.count ?? 0, max);
            return {
              endpoint,
              counter: unlimited ? undefined : counter.name,
              limit: max,
              windowMs,
              used,
              remaining: max - used,
              resetTime: used > 0 && count ? new Date(count.resetAt) : undefined,
            };
          });
        }),
      ),
    );
    return rows.flat();
  }

  /** Clears the client's counters, grants' variants included, on every endpoint or on `endpoint`. */
  async reset(client: unknown, endpoint: unknown, options: unknown): Promise<boolean> {
    const check = new Checker('limits.reset');
    const { key, kind } = this.#client(check, client);
    const name =
      endpoint === undefined
        ? undefined
        : check.oneOf(
            endpoint,
            this.endpoints.map((e) => e.name),
            'endpoint',
          );
    const chosen = name === undefined ? this.endpoints : this.endpoints.filter((e) => e.name === name);
    const operator = byOption(check, options);
    const counters = chosen.flatMap((e) => this.grants.countersOf(e));
    this.#readable(check, counters, "clear a client's counters");
    return this.records.calls.bounded('limits.reset', async (bound) => {
      const cleared = await Promise.all(counters.map((e) => resetWithin(e.counter, key, bound)));
      // Every instance forgets the refusals it remembers of the client, which would refuse it until its window ended.
      const longest = Math.max(...counters.flatMap((e) => e.limits.map((l) => l.windowMs)));
      await this.records.resetClient({ key, kind }, longest, bound, { endpoint: name, operator });
      return cleared.some(Boolean);
    });
  }

  /** Forgets the refusals remembered of `key` on every counter of this instance. */
  forget(key: string): void {
    for (const endpoint of this.endpoints) {
      for (const { counter } of this.grants.countersOf(endpoint)) if (counter instanceof Resilient) counter.forget(key);
    }
  }
}
