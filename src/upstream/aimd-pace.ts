/**
 * The shared pace as a fraction of the configured budget, adjusted the way TCP
 * adjusts its congestion window (AIMD): a throttle answer halves it, and answers
 * bring it back by one more request in flight per round of answers (a round being
 * as many answers as requests in flight at the current pace: with `c` =
 * max_concurrent and `w` = max(1, pace·c) in flight, each answer adds 1/(c·w)).
 * Growing by a fixed step per answer instead recovers slowest exactly when the pace
 * is lowest, since answers then come one at a time. A floor keeps the budget
 * moving (at least one request in flight, at least `floor` of the configured rates).
 *
 * One throttle episode halves the pace once: the requests in flight when the
 * provider starts refusing all come back 429 together, and counting each would
 * drop the pace to the floor for what is one signal. So a throttle only
 * decreases the pace if its request was admitted at the current pace (after the
 * last decrease); older ones were sent too fast already and are accounted for.
 * Pure: the budget keeps the value and applies it.
 */

export type PaceSettings = {
  /** Multiplier on a throttle (0 < decrease < 1). */
  decrease: number;
  /** Lowest pace (0 < floor ≤ 1). */
  floor: number;
};

export const defaultPaceSettings: PaceSettings = { decrease: 0.5, floor: 0.1 };

export type Pace = {
  /** Fraction of the configured budget in effect, floor ≤ value ≤ 1. */
  value: number;
  /** Bumped on each decrease; a permit remembers the epoch it was admitted in. */
  epoch: number;
};

export function initialPace(): Pace {
  return { value: 1, epoch: 0 };
}

/** The pace after an attempt admitted in `admittedEpoch` ended with `outcome`; `maxConcurrent` ≥ 1. */
export function nextPace(
  pace: Pace,
  outcome: "answered" | "throttled" | "failed",
  admittedEpoch: number,
  maxConcurrent: number,
  settings: PaceSettings,
): Pace {
  if (outcome === "answered") {
    if (pace.value >= 1) return pace;
    const inFlight = Math.max(1, pace.value * maxConcurrent);
    return { ...pace, value: Math.min(1, pace.value + 1 / (maxConcurrent * inFlight)) };
  }
  if (outcome === "throttled" && admittedEpoch === pace.epoch)
    return { value: Math.max(settings.floor, pace.value * settings.decrease), epoch: pace.epoch + 1 };
  return pace;
}
