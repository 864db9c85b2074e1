/**
 * Gives the memory of large requests back soon after they end.
 *
 * A long camera episode's request is tens of MB of base64 text, and each exchange
 * makes a few transient copies of it (the body, its parse, the converted images,
 * the record lines). The engine counts such strings as memory outside its heap and
 * collects them late: over a 100-turn episode RSS climbed past 1.2 GB, although a
 * full collection brought it back to ~170 MB (docs/long-sessions.md, "Memory").
 *
 * So once a request over the threshold has been answered, a collection runs. A full
 * synchronous one returns the most memory but stops the event loop for 15–250 ms
 * (measured on 2 loaded cores), so it runs only when no other request is in flight;
 * otherwise a concurrent one is asked for (`Bun.gc(false)` returns at once), which
 * frees less but stalls no one. Requests ending close together share one collection.
 */
export type MemoryReclaimer = {
  requestStarted(): void;
  /** Called when a request has been answered, with its body's size in bytes. */
  requestEnded(bodyBytes: number): void;
  /** Large memory was let go outside any request (an ended episode's cached frames). */
  released(): void;
};

export type MemoryReclaimerOptions = {
  /** Requests with a body at least this large trigger a collection. */
  thresholdBytes: number;
  /** How long after the request the collection runs (the answer's stream finishes first). */
  delayMs?: number;
  /** Runs a collection: synchronous and full when nothing else is in flight. */
  collect?: (full: boolean) => void;
};

export function createMemoryReclaimer(options: MemoryReclaimerOptions): MemoryReclaimer {
  const { thresholdBytes, delayMs = 20, collect = (full: boolean) => Bun.gc(full) } = options;
  let pending: ReturnType<typeof setTimeout> | undefined;
  let inFlight = 0;
  return {
    requestStarted() {
      inFlight += 1;
    },
    requestEnded(bodyBytes) {
      inFlight = Math.max(0, inFlight - 1);
      if (bodyBytes >= thresholdBytes) schedule();
    },
    released: schedule,
  };
  function schedule(): void {
    if (pending !== undefined) return;
    pending = setTimeout(() => {
      pending = undefined;
      collect(inFlight === 0);
    }, delayMs);
    pending.unref?.();
  }
}
