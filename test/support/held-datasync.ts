/** An fdatasync (or fsync) the test completes by hand: which fds were synced, in order, and the pending completions. */
export function heldDatasync() {
  const pending: { fd: number; done: (error: NodeJS.ErrnoException | null) => void }[] = [];
  return {
    pending,
    fdatasync: (fd: number, done: (error: NodeJS.ErrnoException | null) => void) => {
      pending.push({ fd, done });
    },
    complete(error: NodeJS.ErrnoException | null = null) {
      const next = pending.shift();
      if (!next) throw new Error("no fdatasync in flight");
      next.done(error);
    },
  };
}

/** One turn of the event loop (the group commit starts an idle file's round on the next one). */
export const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
