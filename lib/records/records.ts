// The operators' records of one middleware, behind one interface: what the request path asks, what operators change.
import type { Request } from 'express';
import type { OnError } from '../shared/hooks.js';
import { type IpKey, ipKey } from '../contract/keys.js';
import type { EndpointRow } from '../contract/listings.js';
import type { CallBound } from '../stores/call-bound.js';
import { MemoryState } from '../stores/memory/state.js';
import type { RuntimeState } from '../stores/state.js';
import { Bans } from './bans.js';
import { RecordCache } from './cache.js';
import { StateCalls } from './calls.js';
import { clientKeyOf, type KeyOf } from './client-keys.js';
import { CacheFollower } from './follower.js';
import { ForeignEntries } from './foreign.js';
import { GrantRequestDesk } from './grant-requests.js';
import { RuntimeGrants } from './grants.js';
import { History } from './history.js';
import type { CheckGrant, ResetRecord } from './kinds.js';
import { Logins } from './logins.js';
import { LostRecords } from './lost.js';
import type { ChangeEvent } from './types.js';

/** What the records need of the middleware they serve: how it keys addresses and checks a grant, its hooks, bounds. */
interface RecordsContext {
  /** The table's rows, which a grant request for specific endpoints names. */
  readonly rows: readonly EndpointRow[];
  /** How client addresses are grouped (option `ipv6Subnet`): an operator's `{ ip }` is keyed as requests are. */
  readonly ipv6Subnet: number | false;
  readonly checkGrant: CheckGrant;
  readonly onChange: ((event: ChangeEvent, req: Request | undefined) => unknown) | undefined;
  readonly report: OnError;
  /** The longest the first read of the state holds requests up (the store's `timeoutMs`, else a second). */
  readonly firstReadMs: number;
  /** The longest an operator's call waits for the store in all; undefined for a store in this process. */
  readonly callTimeoutMs?: number;
  /** Told each time a read of the state was answered, with the route of the store's part that answered. */
  readonly answered?: (route: string) => void;
  /** Told the key of each reset of a client's counters this instance reads (its own included). */
  readonly onReset?: (key: string) => void;
}

/**
 * The bans, grants, lost and foreign records, history, logins, resets and grant requests of one middleware: the
 * store's runtime state holds them, one record each, and numbers every change; this instance keeps a cache of them
 * that follows those changes. The request path asks the cache, at once and without a store command, whether a client
 * is banned and what its grant is; the operators' calls (the middleware's methods, the pages) read and change them
 * through their parts, each call within one bound. With a store that keeps no runtime state (a custom store), the
 * records are this process's own, and only the rule's bans are kept.
 */
export class Records {
  readonly cache: RecordCache;
  /** The store's state as the operators' calls reach it: bounds, reads, changes. */
  readonly calls: StateCalls;
  readonly bans: Bans;
  readonly grants: RuntimeGrants;
  readonly logins: Logins;
  readonly lost: LostRecords;
  readonly history: History;
  readonly foreign: ForeignEntries;
  /** The grant requests of rule 6: `limits.requests`. */
  readonly requests: GrantRequestDesk;
  readonly checkGrant: CheckGrant;
  readonly #follower: CacheFollower;
  readonly #ipOf: IpKey;

  constructor(state: RuntimeState | undefined, context: RecordsContext) {
    const stored = state ?? new MemoryState();
    const { checkGrant, report } = context;
    this.checkGrant = checkGrant;
    const { ipv6Subnet } = context;
    // An operator's call keys its address apart from the requests' remembered keys, which 10,000 bans would fill.
    this.#ipOf = (ip) => ipKey(ip, ipv6Subnet);
    this.cache = new RecordCache({ checkGrant, report, onReset: context.onReset });
    this.#follower = new CacheFollower(stored, this.cache, {
      firstReadMs: context.firstReadMs,
      report,
      // Any answer of the store: the rules' bans it could not take are written now.
      answered: (route) => {
        context.answered?.(route);
        this.bans.storeAnswered();
      },
      write: (changes) => this.calls.write(changes, undefined),
    });
    this.calls = new StateCalls(stored, this.cache, this.#follower, {
      shared: state !== undefined,
      callTimeoutMs: context.callTimeoutMs,
      onChange: context.onChange,
      report,
    });
    this.bans = new Bans(this.cache, this.calls, this.keyOf, report);
    this.grants = new RuntimeGrants(this.cache, this.calls, this.keyOf, checkGrant);
    this.logins = new Logins(this.cache, this.calls);
    this.lost = new LostRecords(this.cache, this.calls);
    this.history = new History(this.cache, this.calls);
    this.foreign = new ForeignEntries(this.cache, this.calls, this.history);
    this.requests = new GrantRequestDesk(state?.requests, this, { rows: context.rows, ipv6Subnet });
  }

  /**
   * The key of a client named as an operator knows it (`{ token }`, `{ ip }` or `{ key }`; see clientKeyOf), and the
   * end of its token as its records keep it. Throws ListingLimitsError naming the field.
   */
  readonly keyOf: KeyOf = (check, client) =>
    clientKeyOf(check, client, this.#ipOf, (key) => this.cache.tokenEndOf(key));

  /** Starts following the state: once the middleware is made, so that a configuration that fails leaves nothing. */
  start(): void {
    this.#follower.start();
  }

  /** Reads what changed in the store now (a custom store's state is this process's: nothing to read). */
  sync(): Promise<void> {
    return this.calls.synced('limits.sync');
  }

  /**
   * Tells every instance that a client's counters were cleared, so that each forgets the refusals it remembers of
   * it; kept for `windowMs`, the longest window a remembered refusal can last.
   */
  async resetClient(key: string, windowMs: number, bound: CallBound): Promise<void> {
    const at = Date.now();
    const record: ResetRecord = { key, at, until: at + windowMs };
    const change = {
      field: `reset:${key}`,
      value: JSON.stringify(record),
      endsAt: record.until,
      when: 'always',
    } as const;
    await this.calls.write([{ ...change, event: undefined, now: at }], bound);
  }

  /** Stops following the state (the Redis store's reads), and writing again the rules' bans the store has not taken. */
  close(): void {
    this.#follower.stop();
    this.bans.close();
  }
}
