/**
 * A fake clock with timers, for code that takes `{ now, setTimeout }` (the
 * upstream budget): time moves only when the test advances it, so waits of
 * minutes run in microseconds and every run is the same.
 */
export type FakeTimers = {
  now: () => number;
  setTimeout: (run: () => void, ms: number) => () => void;
  /** Moves time forward by `ms`, running every timer that falls due on the way, in order. */
  advance: (ms: number) => Promise<void>;
  /** Moves time to the next pending timer and runs it; false when none is pending. */
  next: () => Promise<boolean>;
  pending: () => number;
};

/** Lets promise callbacks that are already queued run (admissions resolve through promises). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

export function createFakeTimers(start = 0): FakeTimers {
  let time = start;
  let seq = 0;
  const timers = new Map<number, { at: number; run: () => void }>();
  const due = (until: number) => {
    let best: [number, { at: number; run: () => void }] | undefined;
    for (const entry of timers) if (entry[1].at <= until && (!best || entry[1].at < best[1].at)) best = entry;
    return best;
  };
  return {
    now: () => time,
    setTimeout(run, ms) {
      const id = seq++;
      timers.set(id, { at: time + Math.max(0, ms), run });
      return () => timers.delete(id);
    },
    async advance(ms) {
      const until = time + ms;
      for (let entry = due(until); entry; entry = due(until)) {
        timers.delete(entry[0]);
        time = Math.max(time, entry[1].at);
        entry[1].run();
        await settle();
      }
      time = until;
      await settle();
    },
    async next() {
      const entry = due(Number.POSITIVE_INFINITY);
      if (!entry) return false;
      timers.delete(entry[0]);
      time = Math.max(time, entry[1].at);
      entry[1].run();
      await settle();
      return true;
    },
    pending: () => timers.size,
  };
}
