/**
 * Group commit for record files: per file, at most one fdatasync in flight and
 * one round collecting. Every `sync(fd)` asked for while the file's fdatasync is
 * under way joins the next round (that fdatasync began before its write, so it
 * cannot cover it), which starts as soon as the one in flight completes; all its
 * callers share it. Calls run off the event loop (the runtime's thread pool), and
 * different files are synced side by side. So under load an episode costs one
 * fdatasync per disk round trip, however many exchanges and claims wait on it,
 * instead of a fresh fdatasync for every turn of the event loop queued behind
 * the others on the same file. See the README's "Guarantees".
 */
import { fdatasync } from "node:fs";

export type SyncOptions = {
  /**
   * Start an idle file's round at once rather than on the next turn: for a caller with
   * work left that does not need to wait (an answer being rendered while it is synced).
   */
  now?: boolean;
};

export type GroupCommit = {
  /** Resolves once everything written to `fd` before the call is on stable storage. */
  sync(fd: number, options?: SyncOptions): Promise<void>;
  /** fdatasync calls made so far (for the benchmark and tests). */
  readonly syncs: number;
};

export type Datasync = (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => void;
type Waiter = { resolve: () => void; reject: (error: unknown) => void };

export function createGroupCommit(options: { fdatasync?: Datasync } = {}): GroupCommit {
  const datasync = options.fdatasync ?? fdatasync;
  /** Per file: waiters of the next round, and whether its fdatasync is in flight. */
  const files = new Map<number, { collecting: Waiter[]; inFlight: boolean }>();
  let scheduled = false;
  let syncs = 0;

  function start(fd: number): void {
    const file = files.get(fd);
    if (file === undefined || file.inFlight || file.collecting.length === 0) return;
    const round = file.collecting;
    file.collecting = [];
    file.inFlight = true;
    syncs += 1;
    datasync(fd, (error) => {
      file.inFlight = false;
      for (const waiter of round) error ? waiter.reject(error) : waiter.resolve();
      if (file.collecting.length > 0) start(fd);
      else files.delete(fd);
    });
  }

  // The first round of an idle file starts on the next turn, so the writes of this turn share it.
  function flush(): void {
    scheduled = false;
    for (const fd of files.keys()) start(fd);
  }

  return {
    sync(fd, options = {}) {
      return new Promise<void>((resolve, reject) => {
        let file = files.get(fd);
        if (file === undefined) {
          file = { collecting: [], inFlight: false };
          files.set(fd, file);
        }
        file.collecting.push({ resolve, reject });
        if (file.inFlight) return;
        if (options.now) start(fd);
        else if (!scheduled) {
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
