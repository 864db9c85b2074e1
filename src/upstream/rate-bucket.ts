/**
 * A token bucket that paces a per-minute limit (requests or tokens) smoothly:
 * it refills continuously at the limit's rate and holds at most `capacity`, so
 * after a quiet spell only a small burst goes at once, never a minute's worth
 * (the provider enforces its per-minute limits per second too, RPM/60 and TPM/60).
 *
 * A cost larger than the capacity is taken once the bucket is full and leaves it
 * in debt: later costs wait until the debt is paid back. So a request bigger than
 * any burst (or than a whole minute's limit) still goes, alone, and the long-run
 * rate stays the configured one. Pure: time is passed in.
 *
 * Bound: over any window of length W, the costs taken add up to at most
 * max(capacity, largest cost) + rate × W.
 */

export interface RateBucket {
  /** Takes `cost` now if the bucket allows it; false leaves the bucket unchanged. */
  tryTake(cost: number, now: number): boolean;
  /** Milliseconds from `now` until `cost` could be taken (0 = now). */
  waitFor(cost: number, now: number): number;
  /** Changes the refill rate from `now` on (what was refilled so far is kept). */
  setRate(perMs: number, now: number): void;
}

export function createRateBucket(options: { perMs: number; capacity: number; now: number }): RateBucket {
  let rate = options.perMs;
  const capacity = options.capacity;
  let level = capacity;
  let at = options.now;

  const refill = (now: number) => {
    if (now > at) level = Math.min(capacity, level + (now - at) * rate);
    at = Math.max(at, now);
  };
  // A cost over the capacity waits for a full bucket; any other for its own amount.
  // The slack absorbs float rounding of the refill, so a timer set by waitFor finds the cost there.
  const needed = (cost: number) => Math.min(cost, capacity) - 1e-9;

  return {
    tryTake(cost, now) {
      refill(now);
      if (level < needed(cost)) return false;
      level -= cost;
      return true;
    },
    waitFor(cost, now) {
      refill(now);
      const missing = needed(cost) - level;
      return missing <= 0 ? 0 : Math.ceil(missing / rate);
    },
    setRate(perMs, now) {
      refill(now);
      rate = perMs;
    },
  };
}
