// The operators' records of one middleware: its parts, and the middleware's operator methods made of them.
import { type ClientKind, type IpKey, ipKey } from '../contract/keys.js';
import type { EndpointRow } from '../contract/listings.js';
import type { CallBound } from '../stores/call-bound.js';
import { MemoryState } from '../stores/memory/state.js';
import type { RuntimeState } from '../stores/state.js';
import { banMethods, type ForgetBans, RuleBans } from './bans.js';
import { RecordCache } from './cache.js';
import { type CallsContext, type Parts, StateCalls } from './calls.js';
import { clientKeyOf, type KeyOf } from './client-keys.js';
import { GrantRequestDesk, type OnRequestFiled } from './grant-requests.js';
import { grantMethods } from './grants.js';
import { historyMethods } from './history.js';
import type { CheckGrant, ResetRecord } from './kinds.js';
import { logins } from './logins.js';
import { eventOf } from './views.js';
import { lostMethods } from './lost.js';
import type { ChangeEvent } from './types.js';

interface RecordsContext extends Omit<CallsContext, 'shared' | 'answered'> {
  readonly rows: readonly EndpointRow[];
  /** Option `ipv6Subnet`: an operator's `{ ip }` is keyed as requests are. */
  readonly ipv6Subnet: number | false;
  readonly checkGrant: CheckGrant;
  readonly answered?: (route: string) => void;
  /** Told of each reset of a client's counters read (this instance's own included). */
  readonly onReset?: (key: string) => void;
  readonly forget?: ForgetBans;
  readonly onRequestFiled?: OnRequestFiled;
}

// The store's runtime state holds the records and numbers every change; this instance's cache follows it, so that
// the request path asks it at once. With a custom store, the records are this process's own.
export class Records implements Parts {
  readonly cache: RecordCache;
  readonly calls: StateCalls;
  readonly ruleBans: RuleBans;
  readonly logins: ReturnType<typeof logins>;
  readonly requests: GrantRequestDesk;
  readonly checkGrant: CheckGrant;
  /** The key of a client as an operator names it, and the end of its token as its records keep it. */
  readonly keyOf: KeyOf;
  readonly methods: ReturnType<typeof operatorMethods>;

  constructor(state: RuntimeState | undefined, context: RecordsContext) {
    const { checkGrant, report, ipv6Subnet } = context;
    this.checkGrant = checkGrant;
    // Apart from the requests' remembered keys, which 10,000 bans would fill.
    const ipOf: IpKey = (ip) => ipKey(ip, ipv6Subnet);
    this.keyOf = (check, client) => clientKeyOf(check, client, ipOf, (key) => this.cache.tokenEndOf(key));
    this.cache = new RecordCache(checkGrant, report, context.onReset);
    this.calls = new StateCalls(state ?? new MemoryState(), this.cache, {
      ...context,
      shared: state !== undefined,
      // Any answer of the store: the rules' bans it could not take are written now.
      answered: (route) => {
        context.answered?.(route);
        this.ruleBans.answered();
      },
    });
    this.ruleBans = new RuleBans(this);
    this.logins = logins(this);
    this.requests = new GrantRequestDesk(
      state?.requests,
      this,
      { ipv6Subnet, onFiled: context.onRequestFiled },
      context.rows,
    );
    this.methods = operatorMethods(this, context.forget);
  }

  start(): void {
    this.calls.start();
  }

  sync(): Promise<void> {
    return this.calls.synced('limits.sync');
  }

  /**
   * Every instance forgets the refusals it remembers of the client, for `windowMs`, a remembered refusal's longest.
   * The history records the reset, of `endpoint` or of every one (undefined), and its operator.
   */
  async resetClient(
    { key, kind }: { key: string; kind: ClientKind },
    windowMs: number,
    bound: CallBound,
    more: Pick<ChangeEvent, 'endpoint' | 'operator'>,
  ): Promise<void> {
    const at = Date.now();
    const record: ResetRecord = { key, at, until: at + windowMs };
    const event = eventOf('reset', key, kind, at, more);
    await this.calls.change([{ field: `reset:${key}`, record, event }], bound);
  }

  close(): void {
    this.calls.stop();
    this.ruleBans.close();
  }
}

function operatorMethods(records: Records, forget: ForgetBans | undefined) {
  return {
    ...banMethods(records, records.ruleBans, forget),
    ...grantMethods(records),
    ...historyMethods(records),
    ...lostMethods(records),
    requests: records.requests,
  };
}
