/**
 * Opt-in local retention, run at start-up before the episodes are restored: the
 * records directory of an episode shipped more than `delete_local_after_ms` ago is
 * deleted when its records are as they were shipped. Restart files are the
 * exception: every later process that restores the episode appends its final
 * `stopped` marker to its own restart file after the last shipment, so they are
 * only required to have been shipped, not to be unchanged. Blobs are shared with
 * other episodes and are never deleted here.
 */
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "../lib/logger.ts";
import { restartFilePattern } from "../records/restart-records.ts";
import { fingerprintOf, listRecordFiles } from "./episode-objects.ts";
import type { UploadJournal } from "./upload-journal.ts";

type RecordFile = { name: string; size: number; mtimeMs: number };

/** Whether the files are as the shipped fingerprint says, restart files present but possibly grown. */
export function unchangedSinceShipping(files: RecordFile[], shippedFingerprint: string): boolean {
  const shipped = shippedFingerprint.split("|");
  const shippedNames = new Set(shipped.map((entry) => entry.slice(0, entry.indexOf(":"))));
  const isRestart = (name: string) => restartFilePattern.test(name);
  const current = fingerprintOf(files.filter((f) => !isRestart(f.name)));
  const atShipping = shipped.filter((entry) => !isRestart(entry.slice(0, entry.indexOf(":")))).join("|");
  return current === atShipping && files.every((f) => shippedNames.has(f.name));
}

export async function applyLocalRetention(options: {
  dataDir: string;
  journal: UploadJournal;
  deleteAfterMs: number;
  clock: () => number;
  logger: Logger;
}): Promise<string[]> {
  const root = join(options.dataDir, "episodes");
  const deleted: string[] = [];
  for (const id of await readdir(root).catch(() => [] as string[])) {
    const shipped = options.journal.shipped(id);
    if (!shipped || options.clock() - Date.parse(shipped.at) < options.deleteAfterMs) continue;
    const dir = join(root, id);
    if (!unchangedSinceShipping(await listRecordFiles(dir), shipped.fingerprint)) continue;
    await rm(dir, { recursive: true, force: true });
    deleted.push(id);
  }
  if (deleted.length > 0) {
    options.logger.info("shipping: local records of shipped episodes deleted (retention)", {
      episodes: deleted,
    });
  }
  return deleted;
}
