/**
 * Retention: an upper bound on the data directory (config `records.max_bytes`), so
 * a long camera episode cannot fill the disk. The bytes already there are counted
 * at start-up, then every blob and record line written is added. Over the bound,
 * new model exchanges are refused with a final error naming the bound, in the
 * client's protocol (a small record of the refusal is still written); record lines
 * of work already under way (callbacks, deliveries, the ledger) are always written,
 * so the records of every episode stay complete. Nothing is deleted.
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { SidecarError } from "../lib/errors.ts";

/** Bytes of every file under a directory (0 when it does not exist). */
export function directoryBytes(dir: string): number {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += directoryBytes(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

export type DataDirBudget = {
  readonly maxBytes: number | undefined;
  readonly usedBytes: number;
  /** Counts bytes just written. */
  add(bytes: number): void;
  /** Throws the refusal of a new exchange when the data directory is over its bound. */
  checkNewExchange(): void;
};

export function createDataDirBudget(dataDir: string, maxBytes: number | undefined): DataDirBudget {
  let used = maxBytes === undefined ? 0 : directoryBytes(dataDir);
  return {
    maxBytes,
    get usedBytes() {
      return used;
    },
    add(bytes) {
      used += bytes;
    },
    checkNewExchange() {
      if (maxBytes === undefined || used < maxBytes) return;
      throw new SidecarError(
        "episode_closed",
        `the sidecar's data directory holds ${used} bytes of records, at its limit records.max_bytes = ${maxBytes}; ` +
          "no new model exchange is run until records are moved away or the limit is raised",
      );
    },
  };
}
