/**
 * The one way record lines reach disk: an append-only file written in whole
 * lines. Each append is one write(2) of the whole text, repeated until every
 * byte is written (a nearly full disk returns short counts); if the disk refuses
 * the rest (ENOSPC, EIO …) the file is cut back to where the append began, so
 * the file only ever holds whole lines and the failure is the caller's error,
 * never a line counted as written. `sync` makes what was appended so far
 * survive a power cut (fdatasync through the shared group commit, so concurrent
 * episodes share the wait); `syncNow` does it at once, synchronously.
 */
import { closeSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, writeSync } from "node:fs";
import type { GroupCommit, SyncOptions } from "./group-commit.ts";

export class RecordsWriteError extends Error {
  readonly code: string | undefined;
  constructor(path: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    super(`cannot write ${path}: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = "RecordsWriteError";
    this.code = code;
  }
}

export type AppendFile = {
  readonly path: string;
  /** Appends `text` whole and returns its bytes, or throws RecordsWriteError having left the file as it was. */
  append(text: string): number;
  /** Resolves once everything appended so far is on stable storage (no-op when durability is off). */
  sync(options?: SyncOptions): Promise<void>;
  /** The same, synchronously. */
  syncNow(): void;
  close(): void;
};

export type AppendFileOptions = {
  /** Shared fdatasync scheduler; undefined = no fsync (what survives kill -9, not a power cut). */
  groupCommit: GroupCommit | undefined;
  /** Replaces writeSync in tests (short writes, ENOSPC). */
  write?: (fd: number, bytes: Uint8Array, offset: number, length: number) => number;
};

const encoder = new TextEncoder();

export function openAppendFile(path: string, options: AppendFileOptions): AppendFile {
  const write = options.write ?? ((fd, bytes, offset, length) => writeSync(fd, bytes, offset, length));
  let fd: number | undefined;
  let size = 0;
  /** Bytes appended but not yet fdatasync'ed. */
  let dirty = false;
  let lastSync: Promise<void> | undefined;

  function descriptor(): number {
    if (fd === undefined) {
      try {
        fd = openSync(path, "a");
        size = fstatSync(fd).size;
      } catch (error) {
        throw new RecordsWriteError(path, error);
      }
    }
    return fd;
  }

  return {
    path,
    append(text) {
      const handle = descriptor();
      const bytes = encoder.encode(text);
      let done = 0;
      try {
        while (done < bytes.length) {
          const n = write(handle, bytes, done, bytes.length - done);
          if (n <= 0) throw new Error(`write returned ${n} with ${bytes.length - done} bytes left`);
          done += n;
        }
      } catch (error) {
        // Cut the partial line off: the next append must not continue a torn line mid-file.
        if (done > 0) {
          try {
            ftruncateSync(handle, size);
          } catch {
            // The cut failed too: the torn tail stays last and readers report it.
          }
        }
        throw new RecordsWriteError(path, error);
      }
      size += bytes.length;
      dirty = true;
      return bytes.length;
    },
    sync(syncOptions) {
      if (options.groupCommit === undefined || fd === undefined) return Promise.resolve();
      if (dirty) {
        dirty = false;
        lastSync = options.groupCommit.sync(fd, syncOptions).catch((error: unknown) => {
          dirty = true;
          throw new RecordsWriteError(path, error);
        });
      }
      // Not dirty: what was appended is covered by the round already under way (or done).
      return lastSync ?? Promise.resolve();
    },
    syncNow() {
      if (!dirty || options.groupCommit === undefined || fd === undefined) return;
      try {
        fdatasyncSync(fd);
        dirty = false;
      } catch (error) {
        throw new RecordsWriteError(path, error);
      }
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}
