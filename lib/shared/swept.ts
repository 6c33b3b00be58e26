// A map of entries that end at `endsAt` (epoch ms), kept bounded without a timer: ended ones are swept a few at a time.

/** Two per added key: a pass outruns the map's growth, so an ended entry goes within about its size of additions. */
const SWEEP_STEP = 2;

export class SweptMap<E> extends Map<string, E> {
  #sweeper: Iterator<string> | undefined;

  constructor(private readonly endsAt: (entry: E) => number) {
    super();
  }

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
