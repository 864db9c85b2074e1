/**
 * One AbortSignal that aborts when any of the given signals does, or after an
 * optional timeout — what AbortSignal.any/timeout do, at a fraction of their cost
 * in Bun (measured: ~80 µs of CPU per exchange for the pair). Call `dispose` when
 * the work is done so listeners and the timer do not outlive it.
 */
export type LinkedSignal = { signal: AbortSignal; timedOut: () => boolean; dispose: () => void };

export function linkSignals(signals: readonly AbortSignal[], timeoutMs?: number): LinkedSignal {
  const controller = new AbortController();
  let timedOut = false;
  const listeners: [AbortSignal, () => void][] = [];
  for (const signal of signals) {
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    const onAbort = () => controller.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    listeners.push([signal, onAbort]);
  }
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          controller.abort(new DOMException(`timed out after ${timeoutMs} ms`, "TimeoutError"));
        }, timeoutMs);
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    dispose() {
      if (timer !== undefined) clearTimeout(timer);
      for (const [signal, onAbort] of listeners) signal.removeEventListener("abort", onAbort);
      listeners.length = 0;
    },
  };
}
