/**
 * One full garbage collection once the server has been idle for a while after
 * handling requests: the heap a burst of exchanges grew (request bodies, record
 * lines, rendered answers) is otherwise kept long after the burst, and the idle
 * sidecar sat at 1.5–3× its start-up RSS. A request that arrives during the
 * collection waits for it, so it runs only after `idleMs` without any request
 * starting or finishing, and never twice without a request in between.
 */
export type IdleCollector = {
  /** Wraps one request's handling (until its handler returned a response). */
  track<T>(handle: () => T | Promise<T>): Promise<T>;
  stop(): void;
};

export function createIdleCollector(idleMs: number, collect: () => void = () => Bun.gc(true)): IdleCollector {
  let inFlight = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      if (inFlight === 0) collect();
    }, idleMs);
    timer.unref();
  };
  return {
    async track(handle) {
      inFlight += 1;
      clearTimeout(timer);
      try {
        return await handle();
      } finally {
        inFlight -= 1;
        if (inFlight === 0) arm();
      }
    },
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
