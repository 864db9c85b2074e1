/**
 * The append-only files of one records directory, each opened on first use and
 * written in whole lines through append-file.ts, so a crash leaves a prefix of whole
 * lines (or a torn last one, which readers report). The first write that failed is
 * kept for the episode's status; every failure is also thrown to the writer, which
 * decides what it means (a live episode fails that exchange; a restored one keeps
 * going read-only).
 */
import { join } from "node:path";
import { type AppendFile, openAppendFile, RecordsWriteError } from "./append-file.ts";
import type { GroupCommit, SyncOptions } from "./group-commit.ts";

export type RecordFiles = {
  /**
   * Appends the lines to the named file, whole or not at all; throws RecordsWriteError.
   * With `durableFirst` (the blobs the lines refer to becoming durable), the file's
   * next fdatasync waits for it: a line is never durable before what it refers to.
   */
  append(name: string, lines: string[], durableFirst?: Promise<void>): void;
  /** Keeps the first failure and returns it as a RecordsWriteError (about this directory unless it names a file). */
  noteFailure(error: unknown): RecordsWriteError;
  /** Resolves once every line appended so far is on stable storage (when durability is on). */
  sync(options?: SyncOptions): Promise<void>;
  /** Syncs and closes every file; a later append opens it again. */
  closeAll(): void;
  readonly failure: string | undefined;
};

export function openRecordFiles(
  dir: string,
  options: { groupCommit?: GroupCommit; written?: (file: string, bytes: number) => void } = {},
): RecordFiles {
  const files = new Map<string, AppendFile>();
  /** Per file, what its next fdatasync waits for; dropped once it succeeded, kept once it failed. */
  const barriers = new Map<string, Promise<void>>();
  let failure: string | undefined;
  function waitBeforeSync(name: string, durableFirst: Promise<void>): void {
    const previous = barriers.get(name);
    const barrier = previous ? Promise.all([previous, durableFirst]).then(() => {}) : durableFirst;
    barriers.set(name, barrier);
    barrier.then(
      () => barriers.get(name) === barrier && barriers.delete(name),
      // Kept: a line that refers to a blob that could not be made durable is never confirmed durable.
      () => {},
    );
  }
  function noteFailure(error: unknown): RecordsWriteError {
    const wrapped = error instanceof RecordsWriteError ? error : new RecordsWriteError(dir, error);
    failure ??= wrapped.message;
    return wrapped;
  }
  return {
    append(name, lines, durableFirst) {
      let file = files.get(name);
      if (file === undefined) {
        file = openAppendFile(join(dir, name), { groupCommit: options.groupCommit });
        files.set(name, file);
      }
      try {
        // Appended first, then reported: an optional call would skip the append with its argument.
        const bytes = file.append(`${lines.join("\n")}\n`);
        options.written?.(name, bytes);
      } catch (error) {
        throw noteFailure(error);
      }
      if (durableFirst) waitBeforeSync(name, durableFirst);
    },
    noteFailure,
    async sync(syncOptions) {
      try {
        await Promise.all(
          Array.from(
            files,
            ([name, file]) =>
              barriers.get(name)?.then(() => file.sync(syncOptions)) ?? file.sync(syncOptions),
          ),
        );
      } catch (error) {
        throw noteFailure(error);
      }
    },
    closeAll() {
      for (const file of files.values()) {
        try {
          file.syncNow();
        } finally {
          file.close();
        }
      }
      files.clear();
    },
    get failure() {
      return failure;
    },
  };
}

/** The error a frozen records directory answers any append with. */
export function frozenRecordsError(dir: string, file: string): Error {
  return new Error(`records of ${dir} are frozen; refusing to append to ${file}`);
}
