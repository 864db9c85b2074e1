/**
 * What a bench or a test process must not leave behind however it ends: the child
 * processes it started (sidecars, upstreams, proxies) and the temporary directories it
 * made. Its own code stops and removes them as it goes; whatever is still listed here
 * when the process exits (normally, or on an uncaught error) or is told to stop by
 * SIGINT or SIGTERM is killed and removed then. Without it a bench stopped by Ctrl-C
 * or by `kill` left its sidecars running and its data directories (hundreds of MB for
 * a camera history) under /tmp: a signal ends a process without running its `finally`
 * blocks or its `exit` listeners.
 *
 * On a signal the children are killed first and waited for (bounded), so none is still
 * writing into a directory being removed; then the process exits as the signal would
 * have ended it (128 + its number). A second signal of the same kind is not caught. The
 * directories stay when URA_KEEP_TEST_TMP=1 (a post-mortem, run-temp-root.ts).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";

/** A child process as Bun.spawn returns it: what is needed to end it and see it gone. */
export type ChildToEnd = { kill(signal?: number | NodeJS.Signals): void; readonly exited: Promise<number> };

/** Each child still running, with the signal that ends it (SIGKILL unless it cleans up after itself). */
const children = new Map<ChildToEnd, NodeJS.Signals>();
const directories = new Set<string>();
const handledSignals = ["SIGINT", "SIGTERM"] as const;
/** How long a signalled process waits for its killed children before removing directories. */
const childrenExitWaitMs = 5_000;
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  process.once("exit", () => {
    killChildren();
    removeDirectories();
  });
  for (const signal of handledSignals) process.once(signal, () => void endOnSignal(signal));
}

function killChildren(): void {
  for (const [child, signal] of children) child.kill(signal);
}

function removeDirectories(): void {
  if (process.env.URA_KEEP_TEST_TMP === "1") return;
  for (const dir of directories) rmSync(dir, { recursive: true, force: true });
  directories.clear();
}

async function endOnSignal(signal: (typeof handledSignals)[number]): Promise<void> {
  // The work in flight fails as the children die (a request to a killed sidecar): that is the
  // end asked for, not a failure to stop at before the directories are removed.
  process.on("uncaughtException", () => {});
  process.on("unhandledRejection", () => {});
  const exits = [...children.keys()].map((child) => child.exited);
  killChildren();
  await Promise.race([Promise.allSettled(exits), Bun.sleep(childrenExitWaitMs)]);
  removeDirectories();
  process.exit(128 + constants.signals[signal]);
}

/**
 * Kills `child` if it is still running when this process ends; forgotten once it exits.
 * `signal`: SIGKILL, or SIGTERM for a child that ends its own children first (a test run).
 */
export function killAtExit(child: ChildToEnd, signal: NodeJS.Signals = "SIGKILL"): void {
  install();
  children.set(child, signal);
  void child.exited.then(() => children.delete(child));
}

/** Removes `dir` (recursively) if it has not been removed (`removeDirectoryNow`) when this process ends. */
export function removeAtExit(dir: string): void {
  install();
  directories.add(dir);
}

/** Removes `dir` (recursively) now, and forgets it. */
export function removeDirectoryNow(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  directories.delete(dir);
}

/**
 * A new temporary directory under `root` (the system's by default), named `<prefix>XXXXXX`,
 * removed when this process ends if its maker has not removed it by then.
 */
export function temporaryDirectory(prefix: string, root: string = tmpdir()): string {
  const dir = mkdtempSync(join(root, prefix));
  removeAtExit(dir);
  return dir;
}
