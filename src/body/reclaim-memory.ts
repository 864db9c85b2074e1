/**
 * When the sidecar gives memory back: the one place that asks the engine for a
 * garbage collection, on two triggers.
 *
 * After a large request. A long camera episode's request is tens of MB of base64
 * text, and each exchange makes transient copies of parts of it (the converted
 * images, the upstream body, the record lines). The engine counts such strings as
 * memory outside its heap and collects them late: over a 100-turn episode RSS climbed
 * past 1.2 GB, although a full collection brought it back to ~170 MB
 * (docs/long-sessions.md, "Memory"). So once a request over the threshold has been
 * answered, a collection runs. A full synchronous one returns the most memory but
 * stops the event loop for 15–250 ms (measured on 2 loaded cores), so it runs only
 * when no other request is in flight; otherwise a concurrent one is asked for
 * (`Bun.gc(false)` returns at once), which frees less but stalls no one. Requests
 * ending close together, and memory let go outside any request (an ended episode's
 * cached frames), share one collection.
 *
 * After a burst. The heap a burst of small exchanges grew (request bodies, record
 * lines, rendered answers) is otherwise kept long after it, and the idle sidecar sat
 * at 1.5–3× its start-up RSS. A request that arrives during a full collection waits
 * for it, so this one runs only after `idleMs` without any request starting or
 * finishing, and never twice without a request in between: never in the middle of a
 * busy (c=16) run.
 *
 * While a long body arrives. The chunks a request arrives in are hashed and then
 * garbage, but nothing collects them before the collection after the request, so
 * they pile up on top of everything else at the peak of a long episode. So every
 * `duringBodyBytes` of body received, a concurrent collection is asked for: it
 * returns at once and stalls no one.
 */
export type MemoryReclaimer = {
  /** Wraps one request's handling by the server (until its handler returned a response). */
  track<T>(handle: () => T | Promise<T>): Promise<T>;
  /** Called when a request has been answered, with its body's size in bytes. */
  requestEnded(bodyBytes: number): void;
  /**
   * Called when a request (tracked already) is about to receive a body of `bodyBytes`.
   * A client of a long episode sends its next history the moment it has the answer,
   * often before the collection after the last one ran, which then could only be
   * concurrent: the new body arrived on top of the old one's memory (+70-100 MB at turn
   * 100). So a large body that arrives while that collection is still owed, with no
   * other request in flight, has it run in full first. A chunked body's size is known
   * only once it has arrived: it is told then, before the route works on it.
   */
  bodyArriving(bodyBytes: number): void;
  /** Called as a body arrives, with the bytes of each piece received. */
  bodyReceived(bytes: number): void;
  /** Large memory was let go outside any request (an ended episode's cached frames). */
  released(): void;
  /** No collection runs after this (the server stopped). */
  stop(): void;
};

export type MemoryReclaimerOptions = {
  /** Requests with a body at least this large trigger a collection. */
  thresholdBytes: number;
  /** How long after the large request the collection runs (the answer's stream finishes first). */
  delayMs?: number;
  /** How long the server is idle before its one full collection. */
  idleMs?: number;
  /** Every this many body bytes received, a concurrent collection is asked for. */
  duringBodyBytes?: number;
  /** Runs a collection: synchronous and full, or concurrent. */
  collect?: (full: boolean) => void;
};

export function createMemoryReclaimer(options: MemoryReclaimerOptions): MemoryReclaimer {
  const {
    thresholdBytes,
    delayMs = 20,
    idleMs = 2_000,
    duringBodyBytes = 32 * 1024 * 1024,
    collect = (full: boolean) => Bun.gc(full),
  } = options;
  let inFlight = 0;
  let stopped = false;
  let afterLarge: ReturnType<typeof setTimeout> | undefined;
  let whenIdle: ReturnType<typeof setTimeout> | undefined;
  // Large memory was let go and no full collection has run since.
  let owed = false;
  // Body bytes received since the last collection.
  let receivedSince = 0;

  function collectNow(full: boolean): void {
    if (full) owed = false;
    receivedSince = 0;
    collect(full);
  }
  function collectSoon(): void {
    owed = true;
    if (afterLarge !== undefined || stopped) return;
    afterLarge = setTimeout(() => {
      afterLarge = undefined;
      collectNow(inFlight === 0);
    }, delayMs);
    afterLarge.unref?.();
  }
  function collectWhenIdle(): void {
    clearTimeout(whenIdle);
    if (stopped) return;
    whenIdle = setTimeout(() => {
      whenIdle = undefined;
      if (inFlight === 0) collectNow(true);
    }, idleMs);
    whenIdle.unref?.();
  }

  return {
    async track(handle) {
      inFlight += 1;
      clearTimeout(whenIdle);
      try {
        return await handle();
      } finally {
        inFlight -= 1;
        if (inFlight === 0) collectWhenIdle();
      }
    },
    requestEnded(bodyBytes) {
      if (bodyBytes >= thresholdBytes) collectSoon();
    },
    bodyArriving(bodyBytes) {
      if (stopped || !owed || bodyBytes < thresholdBytes || inFlight > 1) return;
      clearTimeout(afterLarge);
      afterLarge = undefined;
      collectNow(true);
    },
    bodyReceived(bytes) {
      receivedSince += bytes;
      if (stopped || receivedSince < duringBodyBytes) return;
      collectNow(false);
    },
    released: collectSoon,
    stop() {
      stopped = true;
      clearTimeout(afterLarge);
      clearTimeout(whenIdle);
    },
  };
}
