/**
 * Group commit for record files: every `sync(fd)` asked for within one turn of
 * the event loop is served by one fdatasync per file, run off the event loop
 * (libuv's thread pool), and all callers waiting on the same file share it. So a
 * claim costs one fdatasync, and many episodes claiming at once cost one round
 * of fdatasync calls, not one each in a row. See the README's "Guarantees".
 */
import { fdatasync } from "node:fs";

export type GroupCommit = {
  /** Resolves once everything written to `fd` before the call is on stable storage. */
  sync(fd: number): Promise<void>;
  /** fdatasync calls made so far (for the benchmark and tests). */
  readonly syncs: number;
};

export function createGroupCommit(): GroupCommit {
  let waiting = new Map<number, { resolve: () => void; reject: (error: unknown) => void }[]>();
  let scheduled = false;
  let syncs = 0;

  function flush(): void {
    scheduled = false;
    const round = waiting;
    waiting = new Map();
    for (const [fd, waiters] of round) {
      syncs += 1;
      fdatasync(fd, (error) => {
        for (const waiter of waiters) error ? waiter.reject(error) : waiter.resolve();
      });
    }
  }

  return {
    sync(fd) {
      return new Promise<void>((resolve, reject) => {
        const list = waiting.get(fd) ?? [];
        list.push({ resolve, reject });
        waiting.set(fd, list);
        if (!scheduled) {
          scheduled = true;
          setImmediate(flush);
        }
      });
    },
    get syncs() {
      return syncs;
    },
  };
}
