/**
 * A small filesystem for full-disk tests (tests only): a tmpfs of a few MiB
 * mounted on a temporary directory (root, as in CI), and a filler that takes
 * the free space in page-sized files so a test can leave exactly as much room
 * as it wants. `mountSmallDisk` answers why not when mounting is impossible, so
 * a test can skip with that reason.
 */
import { mkdirSync, mkdtempSync, rmSync, statfsSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export type SmallDisk = {
  dir: string;
  /** Fills the disk until the kernel refuses; then frees `leaveBytes` (rounded up to pages). */
  fill(leaveBytes?: number): void;
  /** Frees everything the filler took. */
  drain(): void;
  freeBytes(): number;
  unmount(): void;
};

export function mountSmallDisk(sizeKib: number): SmallDisk | string {
  const dir = mkdtempSync(join(tmpdir(), "ura-small-disk-"));
  const mounted = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", `size=${sizeKib}k`, "tmpfs", dir]);
  if (mounted.exitCode !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs (${mounted.stderr.toString().trim() || `exit ${mounted.exitCode}`})`;
  }
  const fillerDir = join(dir, "filler");
  mkdirSync(fillerDir);
  let pieces: string[] = [];
  const page = 4096;
  const freeBytes = () => {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  };
  return {
    dir,
    freeBytes,
    fill(leaveBytes = 0) {
      const chunk = Buffer.alloc(page, 0x61);
      for (;;) {
        const path = join(fillerDir, `p${pieces.length}`);
        try {
          writeFileSync(path, chunk);
          pieces.push(path);
        } catch {
          rmSync(path, { force: true });
          break;
        }
      }
      for (let freed = 0; freed < leaveBytes && pieces.length > 0; freed += page) {
        unlinkSync(pieces.pop() as string);
      }
    },
    drain() {
      for (const path of pieces) rmSync(path, { force: true });
      pieces = [];
    },
    unmount() {
      Bun.spawnSync(["umount", "-l", dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
