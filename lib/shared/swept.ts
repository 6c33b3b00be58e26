// A map of entries that end, kept bounded without a timer or a scan: ended entries are swept a few at a time.

/**
 * Entries the sweep examines each time a key is added. Two per added key means a pass over the map outruns its
 * growth, so an entry that has ended is gone within about as many additions as the map holds.
 */
const SWEEP_STEP = 2;

/**
 * A Map whose entries end at a time of their own (`endsAt`, epoch ms; `Infinity` for never). An ended entry is
 * removed when its key is next read, or by a sweep that examines a couple of entries each time a key is added, so
 * memory stays bounded and a steady set of keys costs nothing.
 */
export class SweptMap<E> extends Map<string, E> {
  /** Where the sweep goes on from; a new pass starts at the oldest entry once it is done. */
  #sweeper: Iterator<string> | undefined;

  constructor(private readonly endsAt: (entry: E) => number) {
    super();
  }

  /** Adds a new key, and sweeps a few entries. */
  add(key: string, entry: E, now: number): E {
    this.set(key, entry);
    for (let i = 0; i < SWEEP_STEP; i++) {
      let next = this.#sweeper?.next();
      if (next === undefined || next.done === true) {
        this.#sweeper = this.keys();
        next = this.#sweeper.next();
        if (next.done === true) break;
      }
      const swept = this.get(next.value);
      if (swept !== undefined && this.endsAt(swept) <= now) this.delete(next.value);
    }
    return entry;
  }
}
