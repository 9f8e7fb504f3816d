/**
 * One request's BM25 sums by skill slot (a small number the index gives each skill), in the order
 * skills were first scored. Typed arrays reused from request to request, rather than a Map keyed by
 * skill name: a Map's get and set per posting were most of a query's time in a 10,000-skill library
 * (the request path). Not shared between requests in flight: scoring is synchronous.
 */
export class ScoreBoard {
  private sums = new Float64Array(0);
  /** `epoch` where the slot was scored this request: no clearing of the whole array per request */
  private stamps = new Uint32Array(0);
  private epoch = 0;
  /** The slots scored this request, first scored first (ties rank by it, as a Map's insertion order did). */
  readonly scored: number[] = [];

  /** Starts a request over slots 0 … `slots` - 1. */
  reset(slots: number): void {
    if (slots > this.sums.length) {
      const size = Math.max(slots, this.sums.length * 2);
      this.sums = new Float64Array(size);
      this.stamps = new Uint32Array(size);
      this.epoch = 0;
    }
    if (this.epoch === 0xffff_ffff) {
      this.stamps.fill(0);
      this.epoch = 0;
    }
    this.epoch++;
    this.scored.length = 0;
  }

  add(slot: number, value: number): void {
    if (this.stamps[slot] !== this.epoch) {
      this.stamps[slot] = this.epoch;
      this.sums[slot] = 0;
      this.scored.push(slot);
    }
    this.sums[slot]! += value;
  }

  /**
   * The `count` highest sums with their slots, best first (the first scored first among equals), in
   * one pass: a big library gives thousands of scored skills per query, and sorting them all cost
   * more than scoring them.
   */
  top(count: number): Array<[number, number]> {
    const top: Array<[number, number]> = [];
    for (const slot of this.scored) {
      const sum = this.sums[slot]!;
      if (top.length === count && sum <= top[count - 1]![1]) continue;
      let at = top.length;
      while (at > 0 && top[at - 1]![1] < sum) at--;
      top.splice(at, 0, [slot, sum]);
      if (top.length > count) top.pop();
    }
    return top;
  }
}
