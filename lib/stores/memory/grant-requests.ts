// The memory store's grant requests, with the indexes that bound each call, as the Redis store keeps them.
import { ENDED_PER_CHANGE, stamped } from '../state.js';
import {
  type FileResult,
  type GrantRequestBounds,
  type GrantRequestMeta,
  type GrantRequestStore,
} from '../grant-request-store.js';

/** Ids sorted by a number (then by id), as a Redis sorted set keeps them: each step bisects a sorted array. */
class Sorted {
  readonly #scores = new Map<string, number>();
  readonly #rows: { score: number; id: string }[] = [];

  get size(): number {
    return this.#rows.length;
  }

  #at(score: number, id: string): number {
    let lo = 0;
    let hi = this.#rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const row = this.#rows[mid] as { score: number; id: string };
      if (row.score < score || (row.score === score && row.id < id)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  add(id: string, score: number): void {
    this.delete(id);
    this.#rows.splice(this.#at(score, id), 0, { score, id });
    this.#scores.set(id, score);
  }

  delete(id: string): void {
    const score = this.#scores.get(id);
    if (score === undefined) return;
    this.#rows.splice(this.#at(score, id), 1);
    this.#scores.delete(id);
  }

  score(id: string): number | undefined {
    return this.#scores.get(id);
  }

  /** How many have a score of at most `score`. */
  countTo(score: number): number {
    return this.#at(score, '\uffff');
  }

  /** Ids from rank `from` (lowest first), at most `n`. */
  slice(from: number, n: number): string[] {
    return this.#rows.slice(Math.max(from, 0), Math.max(from, 0) + Math.max(n, 0)).map((row) => row.id);
  }

  /** Ids from rank `from` counted from the highest, highest first, at most `n`. */
  sliceDown(from: number, n: number): string[] {
    const end = this.#rows.length - Math.max(from, 0);
    return this.#rows
      .slice(Math.max(end - Math.max(n, 0), 0), Math.max(end, 0))
      .map((row) => row.id)
      .reverse();
  }

  first(): string | undefined {
    return this.#rows[0]?.id;
  }
}

/** A request as the memory store keeps it: its text, its sequence number and how it is indexed. */
interface KeptRequest {
  readonly text: string;
  readonly seq: number;
  readonly meta: GrantRequestMeta;
}

const STAMPED_SEQ = /^\{"seq":(\d+),/;

/** The value of `key`, made and added when there is none. */
function entry<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = make()));
  return value;
}

/** The grant requests of the memory store, in this process, indexed as the Redis store indexes them. */
export class MemoryGrantRequests implements GrantRequestStore {
  readonly #records = new Map<string, KeptRequest>();
  #seq = 0;
  /** Each status's requests by sequence number, and by when they end. */
  readonly #by = {
    pending: { seq: new Sorted(), ends: new Sorted() },
    decided: { seq: new Sorted(), ends: new Sorted() },
  };
  /** `k\n<key>` and `n\n<network>` → the pending requests of each. */
  readonly #pendingOf = new Map<string, Set<string>>();
  /** `k\n<key>` and `n\n<network>` → every request of each, by sequence number. */
  readonly #of = new Map<string, Sorted>();
  /** Group → its requests, by sequence number. */
  readonly #groups = new Map<string, Sorted>();
  /** How many requests → the groups that have that many; and the most any group has. */
  readonly #bySize = new Map<number, Set<string>>();
  #most = 0;

  #resize(group: string, from: number, to: number): void {
    if (from > 0) {
      const sizes = this.#bySize.get(from) as Set<string>;
      sizes.delete(group);
      if (sizes.size === 0) this.#bySize.delete(from);
    }
    if (to > 0) entry(this.#bySize, to, () => new Set<string>()).add(group);
    // Sizes move by one: when the largest empties, the next largest is one less.
    if (to > this.#most) this.#most = to;
    else if (from === this.#most && !this.#bySize.has(from)) this.#most = from - 1;
  }

  #index(id: string, kept: KeptRequest): void {
    const { meta, seq } = kept;
    const names = [`k\n${meta.key}`, ...(meta.network ? [`n\n${meta.network}`] : [])];
    this.#by[meta.status].seq.add(id, seq);
    this.#by[meta.status].ends.add(id, meta.endsAt);
    for (const name of names) {
      if (meta.status === 'pending') entry(this.#pendingOf, name, () => new Set<string>()).add(id);
      entry(this.#of, name, () => new Sorted()).add(id, seq);
    }
    const group = entry(this.#groups, meta.group, () => new Sorted());
    group.add(id, seq);
    this.#resize(meta.group, group.size - 1, group.size);
    this.#records.set(id, kept);
  }

  #remove(id: string): void {
    const kept = this.#records.get(id);
    if (!kept) return;
    const { meta } = kept;
    for (const { seq, ends } of [this.#by.pending, this.#by.decided]) {
      seq.delete(id);
      ends.delete(id);
    }
    for (const name of [`k\n${meta.key}`, `n\n${meta.network}`]) {
      const pending = this.#pendingOf.get(name);
      if (pending?.delete(id) && pending.size === 0) this.#pendingOf.delete(name);
      const all = this.#of.get(name);
      all?.delete(id);
      if (all?.size === 0) this.#of.delete(name);
    }
    const group = this.#groups.get(meta.group) as Sorted;
    group.delete(id);
    this.#resize(meta.group, group.size + 1, group.size);
    if (group.size === 0) this.#groups.delete(meta.group);
    this.#records.delete(id);
  }

  #dropEnded(now: number, n: number): void {
    for (const { ends } of [this.#by.pending, this.#by.decided]) {
      for (let i = 0; i < n; i++) {
        const first = ends.first();
        if (first === undefined || (ends.score(first) as number) > now) break;
        this.#remove(first);
      }
    }
  }

  /** The pending requests of `name`, the ended ones dropped. */
  #pendingCount(name: string, now: number): number {
    const ids = this.#pendingOf.get(name);
    if (!ids) return 0;
    for (const id of [...ids]) if ((this.#by.pending.ends.score(id) ?? Infinity) <= now) this.#remove(id);
    return this.#pendingOf.get(name)?.size ?? 0;
  }

  /** Makes room for one: an ended request goes, else the oldest of the group with the most. */
  #dropOne(now: number): boolean {
    const before = this.#records.size;
    this.#dropEnded(now, 1);
    if (this.#records.size < before) return true;
    const largest = this.#bySize.get(this.#most);
    const group = largest?.values().next().value;
    const oldest = group === undefined ? undefined : this.#groups.get(group)?.first();
    if (oldest === undefined) return false;
    this.#remove(oldest);
    return true;
  }

  #stamp(value: string): { text: string; seq: number } {
    const seq = STAMPED_SEQ.exec(value)?.[1];
    if (seq !== undefined) return { text: value, seq: Number(seq) };
    const next = ++this.#seq;
    return { text: stamped(value, next), seq: next };
  }

  file(
    id: string,
    value: string,
    meta: GrantRequestMeta,
    bounds: GrantRequestBounds,
    now: number,
  ): Promise<FileResult> {
    this.#dropEnded(now, ENDED_PER_CHANGE);
    if (this.#records.has(id)) return Promise.resolve('conflict');
    if (this.#pendingCount(`k\n${meta.key}`, now) >= bounds.perKey) return Promise.resolve('key');
    if (meta.network && this.#pendingCount(`n\n${meta.network}`, now) >= bounds.perNetwork)
      return Promise.resolve('network');
    while (this.#records.size >= bounds.max && this.#dropOne(now));
    const { text, seq } = this.#stamp(value);
    this.#index(id, { text, seq, meta });
    return Promise.resolve('done');
  }

  put(id: string, value: string, expected: string, meta: GrantRequestMeta, now: number): Promise<string | undefined> {
    return Promise.resolve(this.putNow(id, value, expected, meta, now));
  }

  /** `put()`, at once: in one step with the changes of records that depend on it (see `StateChange`). */
  putNow(id: string, value: string, expected: string, meta: GrantRequestMeta, now: number): string | undefined {
    if (this.#records.get(id)?.text !== expected) return undefined;
    const { text, seq } = this.#stamp(value);
    this.#remove(id);
    this.#index(id, { text, seq, meta });
    this.#dropEnded(now, ENDED_PER_CHANGE);
    return text;
  }

  get(id: string): Promise<string | undefined> {
    return Promise.resolve(this.#records.get(id)?.text);
  }

  page(status: 'pending' | 'decided', offset: number, limit: number, now: number) {
    const { seq: sorted, ends } = this.#by[status];
    const ended = ends.countTo(now);
    const ids = status === 'pending' ? sorted.slice(ended + offset, limit) : sorted.sliceDown(offset, limit);
    const values = ids.map((id) => (this.#records.get(id) as KeptRequest).text);
    return Promise.resolve({ total: sorted.size - ended, values });
  }

  find(by: 'key' | 'network', value: string, limit: number): Promise<string[]> {
    const ids = this.#of.get(`${by === 'key' ? 'k' : 'n'}\n${value}`)?.sliceDown(0, limit) ?? [];
    return Promise.resolve(ids.map((id) => (this.#records.get(id) as KeptRequest).text));
  }
}
