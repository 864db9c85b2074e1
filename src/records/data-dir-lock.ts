/**
 * One sidecar per data directory: an exclusive, non-blocking flock(2) on
 * `<data_dir>/lock`, held for the life of the process. The kernel releases it
 * when the process ends however it ends (kill -9 included), so there is no stale
 * lock to clean up; a second instance on the same directory is refused at
 * start-up with the holder's pid, before it reads or writes any episode (it
 * would otherwise mark live episodes `interrupted` and write beside the owner).
 * flock comes from libc through bun:ffi: Node's fs has no advisory lock.
 */
import { dlopen, FFIType } from "bun:ffi";
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";

const LOCK_EX = 2;
const LOCK_NB = 4;

type Flock = (fd: number, operation: number) => number;

function loadFlock(): Flock {
  let lastError: unknown;
  for (const name of ["libc.so.6", "libc.so", "libc.musl-x86_64.so.1", "libc.musl-aarch64.so.1"]) {
    try {
      const lib = dlopen(name, { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 } });
      return (fd, operation) => lib.symbols.flock(fd, operation);
    } catch (error) {
      lastError = error;
    }
  }
  throw new Error(`cannot load flock from libc: ${(lastError as Error)?.message ?? lastError}`);
}

export class DataDirLockedError extends Error {}

export type DataDirLock = { readonly path: string; release(): void };

/** Takes the data directory's lock or throws DataDirLockedError naming the holder. */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, "lock");
  const fd = openSync(path, "a+");
  if (loadFlock()(fd, LOCK_EX | LOCK_NB) !== 0) {
    closeSync(fd);
    const holder = readFileSync(path, "utf8").trim();
    throw new DataDirLockedError(
      `the data directory ${dataDir} is in use by another ura-sidecar${holder ? ` (${holder})` : ""}; one sidecar per data directory — stop it or choose another --data-dir`,
    );
  }
  ftruncateSync(fd, 0);
  writeSync(fd, `pid ${process.pid}, since ${new Date().toISOString()}\n`);
  return {
    path,
    release: () => closeSync(fd),
  };
}
