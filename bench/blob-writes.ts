/**
 * Blob writes bench: what storing a new camera frame durably costs the event loop.
 * Each new frame is two blobs (the client's PNG, ~1.8 MB for a noisy 1280×720
 * frame, and its WebP, ~1.1 MB), on the data directory's filesystem (here
 * bench/.durability, next to the repository, as bench/durability.ts; tmpfs would
 * make fsync free). In interleaved rounds, per frame:
 *   - baseline: what the store did before, on the event loop: write a temporary
 *     file, fsync it, rename it (each blob in turn)
 *   - the blob store: `put` (write + rename, on the event loop) for both blobs,
 *     then `durable()` (fsync of both files and the directory, in the thread pool)
 * Figures: event-loop time per frame (what stalls every other episode), and the
 * time until both blobs are durable (what a record line referring to them waits
 * for, overlapping the upstream wait). `bun bench/blob-writes.ts [rounds]`.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { sha256Hex } from "../src/lib/sha256.ts";
import { createBlobStore } from "../src/records/blob-store.ts";
import { temporaryDirectory } from "../test/support/exit-cleanup.ts";

const framesPerRound = 10;
const pngBytes = 1_800_000;
const webpBytes = 1_100_000;

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN;
const p90 = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * 0.9))] ??
  Number.NaN;

/** Random bytes (incompressible, like sensor noise), different for every call. */
function frameBytes(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let at = 0; at < length; at += 65536) crypto.getRandomValues(bytes.subarray(at, at + 65536));
  return bytes;
}

/** The store's former write: temporary file, fsync, rename, all on the event loop. */
function writeSyncedOnLoop(path: string, bytes: Uint8Array): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w");
  let written = 0;
  while (written < bytes.length) written += writeSync(fd, bytes, written, bytes.length - written);
  fsyncSync(fd);
  closeSync(fd);
  renameSync(tmp, path);
}

export async function runBlobWritesBench(
  log: (line: string) => void = console.log,
  rounds = Number(process.env.URA_BENCH_BLOB_ROUNDS ?? 3),
): Promise<Record<string, number>> {
  const root = resolve(import.meta.dir, ".durability");
  mkdirSync(root, { recursive: true });
  const dir = temporaryDirectory("blobs-", root);
  const baselineLoop: number[] = [];
  const storeLoop: number[] = [];
  const storeDurable: number[] = [];
  try {
    const baselineDir = join(dir, "baseline");
    mkdirSync(baselineDir);
    const store = createBlobStore(join(dir, "store"));
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < framesPerRound; i++) {
        const [png, webp] = [frameBytes(pngBytes), frameBytes(webpBytes)];
        let t = performance.now();
        for (const [k, blob] of [png, webp].entries())
          writeSyncedOnLoop(join(baselineDir, `${round}-${i}-${k}`), blob);
        baselineLoop.push(performance.now() - t);

        // Hashed beforehand, as the records do (the digest of the base64 text, image-references.ts).
        const blobs = [frameBytes(pngBytes), frameBytes(webpBytes)].map((bytes) => ({
          bytes,
          digest: sha256Hex(bytes),
        }));
        t = performance.now();
        for (const blob of blobs) store.put(blob.bytes, blob.digest);
        storeLoop.push(performance.now() - t);
        await store.durable();
        storeDurable.push(performance.now() - t);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const figures = {
    blob_frame_loop_ms_baseline: median(baselineLoop),
    blob_frame_loop_ms: median(storeLoop),
    blob_frame_loop_vs_baseline_ratio: median(storeLoop) / median(baselineLoop),
    blob_frame_loop_p90_ms_baseline: p90(baselineLoop),
    blob_frame_loop_p90_ms: p90(storeLoop),
    blob_frame_durable_ms: median(storeDurable),
    blob_frame_durable_vs_baseline_ratio: median(storeDurable) / median(baselineLoop),
  };
  log(
    `${rounds * framesPerRound} new frames, each a ${(pngBytes / 1e6).toFixed(1)} MB PNG blob and a ${(webpBytes / 1e6).toFixed(1)} MB WebP blob; medians (p90)`,
  );
  log("| per new frame | baseline: fsync on the event loop | blob store | ratio |");
  log("|---|---|---|---|");
  log(
    `| event loop blocked | ${median(baselineLoop).toFixed(2)} ms (${p90(baselineLoop).toFixed(2)}) | ${median(storeLoop).toFixed(2)} ms (${p90(storeLoop).toFixed(2)}) | ${figures.blob_frame_loop_vs_baseline_ratio.toFixed(2)}× |`,
  );
  log(
    `| until both blobs are durable | ${median(baselineLoop).toFixed(2)} ms | ${median(storeDurable).toFixed(2)} ms (off the loop) | ${figures.blob_frame_durable_vs_baseline_ratio.toFixed(2)}× |`,
  );
  return figures;
}

if (import.meta.main) {
  const figures = await runBlobWritesBench(console.log, Number(process.argv[2] ?? 3));
  for (const [k, v] of Object.entries(figures)) console.log(`${k} = ${v.toFixed(3)}`);
  process.exit(0);
}
