/**
 * Durability bench: what making a claim survive a power cut costs. One ledger
 * line (~300 bytes, a `claimed` event) per claim, written through the records'
 * append primitive, on the data directory's filesystem (here: bench/.durability,
 * next to the repository; tmpfs would make fdatasync free and the figures
 * meaningless):
 *   - baseline: append only (survives kill -9, not a power cut)
 *   - fsync each: append + fdatasync per claim, one episode, in a row
 *   - group commit: 16 episodes claiming at once, each awaiting its claim's sync;
 *     the claims of one event-loop turn share one round of fdatasync calls
 * Ratios are against the baseline of the same run. `bun bench/durability.ts`
 * prints a table; `runDurabilityBench()` returns the figures.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { openAppendFile } from "../src/records/append-file.ts";
import { createGroupCommit } from "../src/records/group-commit.ts";
import { temporaryDirectory } from "../test/support/exit-cleanup.ts";

const claims = 400;
const episodes = 16;
const line = `${JSON.stringify({ at: Date.now(), type: "claimed", callId: "call_0123456789abcdef01234567", by: "call_id", pad: "x".repeat(200) })}\n`;

function perClaimUs(ms: number, n: number): number {
  return (ms * 1000) / n;
}

export async function runDurabilityBench(
  log: (line: string) => void = () => {},
): Promise<Record<string, number>> {
  const root = resolve(import.meta.dir, ".durability");
  mkdirSync(root, { recursive: true });
  const dir = temporaryDirectory("run-", root);
  try {
    // Baseline: append only.
    const plain = openAppendFile(join(dir, "plain.jsonl"), { groupCommit: undefined });
    let t = performance.now();
    for (let i = 0; i < claims; i++) plain.append(line);
    const baselineUs = perClaimUs(performance.now() - t, claims);
    plain.close();

    // fsync each, one episode in a row.
    const commit = createGroupCommit();
    const single = openAppendFile(join(dir, "single.jsonl"), { groupCommit: commit });
    t = performance.now();
    for (let i = 0; i < claims; i++) {
      single.append(line);
      await single.sync();
    }
    const fsyncUs = perClaimUs(performance.now() - t, claims);
    single.close();

    // Group commit: 16 episodes claim at once, claims/16 rounds each.
    const shared = createGroupCommit();
    const files = Array.from({ length: episodes }, (_, e) =>
      openAppendFile(join(dir, `episode-${e}.jsonl`), { groupCommit: shared }),
    );
    const rounds = Math.ceil(claims / episodes);
    t = performance.now();
    for (let r = 0; r < rounds; r++) {
      await Promise.all(
        files.map(async (file) => {
          file.append(line);
          await file.sync();
        }),
      );
    }
    const groupMs = performance.now() - t;
    const groupUs = perClaimUs(groupMs, rounds * episodes);
    for (const file of files) file.close();

    const figures = {
      durability_append_us_per_claim: baselineUs,
      durability_fsync_us_per_claim: fsyncUs,
      durability_group_commit_us_per_claim: groupUs,
      durability_fsync_vs_append_ratio: fsyncUs / baselineUs,
      durability_group_commit_vs_fsync_ratio: groupUs / fsyncUs,
      durability_group_commit_fdatasyncs: shared.syncs,
    };
    log("| claims (one ~300 B ledger line each) | µs per claim | vs append only |");
    log("|---|---:|---:|");
    log(`| append only (kill -9 safe) | ${baselineUs.toFixed(1)} | 1.0 |`);
    log(`| append + fdatasync, one episode | ${fsyncUs.toFixed(1)} | ${(fsyncUs / baselineUs).toFixed(1)} |`);
    log(
      `| group commit, ${episodes} episodes at once | ${groupUs.toFixed(1)} | ${(groupUs / baselineUs).toFixed(1)} (${(groupUs / fsyncUs).toFixed(2)} × fsync each) |`,
    );
    log(
      `(${shared.syncs} fdatasync calls for ${rounds * episodes} group-committed claims; machine shared, figures noisy)`,
    );
    return figures;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runDurabilityBench(console.log);
