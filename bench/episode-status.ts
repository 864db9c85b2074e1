/**
 * Episode status bench: what one rewrite of an episode's status (episode.json: the
 * description the control API also answers) costs as the episode's tool calls grow.
 * One in-process episode (records.fsync off: the claims' fdatasync is the same for every
 * call and is measured by bench/durability.ts) is driven through its real ledger: each call
 * registered, delivered, claimed, submitted, acknowledged and given its receipt, as a robot
 * turn does. At 200, 1,000 and 5,000 calls the status is rewritten 200 times
 * (`episode.persist()`: describe, serialise, redact, write, rename) and the median is the
 * figure, beside the median of describing and serialising alone (the CPU part; the write and
 * rename vary with the disk) and the size of the file written; the cost does not grow with the
 * episode when the ratio of the largest size to the smallest stays near 1.
 * `bun bench/episode-status.ts`; `runEpisodeStatusBench()` returns the figures.
 */
import { rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { createInProcessSidecar } from "../test/support/in-process-sidecar.ts";

const sizes = [200, 1_000, 5_000] as const;
const rewrites = 200;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;

export async function runEpisodeStatusBench(
  log: (line: string) => void = () => {},
): Promise<Record<string, number>> {
  const sidecar = await createInProcessSidecar({ config: { records: { fsync: false } } });
  const figures: Record<string, number> = {};
  try {
    const episode = sidecar.createEpisode();
    const statusFile = join(episode.describe().records_dir, "episode.json");
    log(
      "| calls in the episode | µs per status rewrite (median of 200) | of which describe + JSON.stringify | episode.json bytes | describe + stringify vs 200 calls |",
    );
    log("|---:|---:|---:|---:|---:|");
    let calls = 0;
    for (const size of sizes) {
      for (; calls < size; calls++) {
        const id = `call_${calls + 1}`;
        const batchId = `ex_${String(calls + 1).padStart(6, "0")}`;
        episode.ledger.register({
          batchId,
          calls: [{ id, modelName: "mcp__ura__observe", tool: "observe", args: {} }],
        });
        episode.ledger.delivered(batchId);
        const admission = await episode.ledger.admit({
          tool: "observe",
          args: {},
          identity: { kind: "call_id", value: id },
        });
        admission.submitted();
        admission.acknowledged(`job_${calls + 1}`);
        admission.receipt({ ok: true });
      }
      const times: number[] = [];
      const serialised: number[] = [];
      for (let i = 0; i < rewrites; i++) {
        let started = performance.now();
        JSON.stringify(episode.describe());
        serialised.push((performance.now() - started) * 1000);
        started = performance.now();
        episode.persist();
        times.push((performance.now() - started) * 1000);
      }
      const us = median(times);
      const cpuUs = median(serialised);
      figures[`episode_status_rewrite_us_at_${size}`] = us;
      figures[`episode_status_serialise_us_at_${size}`] = cpuUs;
      figures[`episode_status_bytes_at_${size}`] = statSync(statusFile).size;
      const first = figures[`episode_status_serialise_us_at_${sizes[0]}`] ?? cpuUs;
      log(
        `| ${size} | ${us.toFixed(1)} | ${cpuUs.toFixed(1)} | ${statSync(statusFile).size} | ${(cpuUs / first).toFixed(2)} |`,
      );
    }
    const last = sizes[sizes.length - 1];
    figures[`episode_status_serialise_ratio_${last}_vs_${sizes[0]}`] =
      (figures[`episode_status_serialise_us_at_${last}`] ?? 0) /
      (figures[`episode_status_serialise_us_at_${sizes[0]}`] ?? 1);
    return figures;
  } finally {
    sidecar.stop();
    rmSync(sidecar.dataDir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const figures = await runEpisodeStatusBench(console.log);
  for (const [k, v] of Object.entries(figures))
    console.log(`${k} = ${Number.isInteger(v) ? v : v.toFixed(3)}`);
  process.exit(0);
}
