/**
 * The shared pace as a fraction of the configured budget, adjusted the way TCP
 * adjusts its congestion window (AIMD, with Reno's slow start back to a threshold,
 * and CUBIC's gentler decrease to 0.7 rather than Reno's half).
 * With `c` = max_concurrent and `w` = max(1, pace·c) requests in flight:
 *
 * - A throttle answer lowers the pace to `decrease` times itself, for everyone. When
 *   answers came since the last decrease (the provider took requests at that pace),
 *   the threshold becomes the lowered pace: its limit is somewhere below where we were.
 *   A throttle window (seconds of refusals whatever is sent) already empties the
 *   pipe, so a gentler cut loses less once it has passed.
 * - Below the threshold, each answer adds one request in flight (1/c): the pace
 *   doubles per round of answers (slow start). A throttle window of the provider
 *   (its per-minute quota, refused for seconds whatever we send) drives the pace
 *   down to the floor without telling us the limit moved, so once answers come
 *   back it climbs quickly to where the provider last held.
 * - From the threshold on, each answer adds 1/(c·w): one more request in flight
 *   per round of answers (congestion avoidance). A fixed step per answer instead
 *   recovers slowest exactly when the pace is lowest, since answers then come one
 *   at a time.
 * - A floor keeps the budget moving: at least one request in flight, at least
 *   `floor` of the configured rates.
 *
 * One throttle episode is one decrease per round trip, as TCP reduces once per
 * window: a throttle decreases the pace only if its request was admitted after
 * the last decrease (the requests in flight when the provider starts refusing all
 * come back 429 together; they were sent too fast already), and at least one
 * round trip (the smoothed time of answered attempts) after it (a refusal comes
 * back in a millisecond, so a quick retry would otherwise cut again before any
 * answer at the lowered pace could show whether it is enough).
 * Pure: the budget keeps the value, measures the round trip and applies it.
 */

export type PaceSettings = {
  /** Multiplier on a throttle (0 < decrease < 1). */
  decrease: number;
  /** Lowest pace (0 < floor ≤ 1). */
  floor: number;
};

export const defaultPaceSettings: PaceSettings = { decrease: 0.7, floor: 0.1 };

export type Pace = {
  /** Fraction of the configured budget in effect, floor ≤ value ≤ 1. */
  value: number;
  /** Below it answers grow the pace per answer (slow start); above it per round. */
  threshold: number;
  /** Bumped on each decrease; a permit remembers the epoch it was admitted in. */
  epoch: number;
  /** When the last decrease was (ms, the budget's clock). */
  decreasedAt: number;
  /** Whether an answer came since the last decrease. */
  answeredSince: boolean;
};

export function initialPace(): Pace {
  return { value: 1, threshold: 1, epoch: 0, decreasedAt: Number.NEGATIVE_INFINITY, answeredSince: true };
}

export type AttemptEnd = {
  outcome: "answered" | "throttled" | "failed";
  /** The epoch the attempt was admitted in. */
  admittedEpoch: number;
  now: number;
  /** The smoothed time of answered attempts (0 before the first). */
  roundTripMs: number;
};

/** The pace after an attempt ended; `maxConcurrent` ≥ 1. */
export function nextPace(pace: Pace, end: AttemptEnd, maxConcurrent: number, settings: PaceSettings): Pace {
  if (end.outcome === "answered") {
    if (pace.value >= 1) return pace.answeredSince ? pace : { ...pace, answeredSince: true };
    if (pace.value < pace.threshold)
      return {
        ...pace,
        value: Math.min(pace.threshold, pace.value + 1 / maxConcurrent),
        answeredSince: true,
      };
    const inFlight = Math.max(1, pace.value * maxConcurrent);
    return {
      ...pace,
      value: Math.min(1, pace.value + 1 / (maxConcurrent * inFlight)),
      answeredSince: true,
    };
  }
  const sameEvent = end.admittedEpoch !== pace.epoch || end.now - pace.decreasedAt < end.roundTripMs;
  if (end.outcome !== "throttled" || sameEvent) return pace;
  const value = Math.max(settings.floor, pace.value * settings.decrease);
  return {
    value,
    threshold: pace.answeredSince ? value : pace.threshold,
    epoch: pace.epoch + 1,
    decreasedAt: end.now,
    answeredSince: false,
  };
}
