/**
 * Bounds the bytes of model request bodies being processed at once.
 *
 * A camera history is tens of MB, and while it is translated, converted and
 * recorded it costs a few times its size in memory. Without a bound, memory
 * grows with the number of episodes sending at the same moment; with it, a
 * request whose body would take the total past the bound waits, received, until
 * enough earlier ones have been answered (first come, first served). A body
 * larger than the bound on its own is admitted when nothing else is in flight,
 * so every request the body limit accepts is eventually processed.
 */
export type BodyAdmission = {
  /** Resolves once the body may be read; call the returned function when it is answered. */
  admit(bodyBytes: number): Promise<() => void>;
  readonly bytesInFlight: number;
  readonly waiting: number;
};

export function createBodyAdmission(maxBytesInFlight: number): BodyAdmission {
  let inFlight = 0;
  let requests = 0;
  const queue: { bytes: number; start: () => void }[] = [];

  const fits = (bytes: number) => requests === 0 || inFlight + bytes <= maxBytesInFlight;

  function start(bytes: number): () => void {
    inFlight += bytes;
    requests += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      inFlight -= bytes;
      requests -= 1;
      while (queue.length > 0 && fits(queue[0]?.bytes ?? 0)) queue.shift()?.start();
    };
  }

  return {
    admit(bytes) {
      if (queue.length === 0 && fits(bytes)) return Promise.resolve(start(bytes));
      return new Promise((resolve) => queue.push({ bytes, start: () => resolve(start(bytes)) }));
    },
    get bytesInFlight() {
      return inFlight;
    },
    get waiting() {
      return queue.length;
    },
  };
}
