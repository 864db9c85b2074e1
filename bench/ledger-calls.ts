/**
 * Ledger bench: what one tool call costs the delivered-call ledger as an episode
 * grows. One episode of 20,000 calls through the real EpisodeLedger, its journal
 * written as JSON lines through the records' append primitive (no fdatasync: its
 * cost is the same for every call and would hide the ledger's). Each call is a
 * robot turn: register a one-call batch, mark it delivered, admit the MCP callback
 * (every other one by call id, the rest by tool name + arguments, all the same tool
 * and arguments, as a robot repeating `observe {}`), submit, acknowledge, receipt.
 * The figure at N calls is the median of the five 200-call windows of the 1,000 calls
 * that end at N (a median, so one garbage collection does not decide it): the cost of
 * a call at that size; the ledger's total cost is linear when the ratio of
 * the largest size to the smallest stays near 1 (goal ≤ 1.5). A 1,000-call episode
 * runs first, unmeasured, so the smallest size does not time the JIT's warm-up.
 * `bun bench/ledger-calls.ts [path/to/episode-ledger.ts]` prints a table (the path
 * measures another tree's ledger, e.g. the one before a change); `runLedgerBench()`
 * returns the figures.
 */
import { rmSync } from "node:fs";
import { join, resolve } from "node:path";
import type { createEpisodeLedger as CreateEpisodeLedger } from "../src/ledger/episode-ledger.ts";
import { openAppendFile } from "../src/records/append-file.ts";
import { temporaryDirectory } from "../test/support/exit-cleanup.ts";

const sizes = [1_000, 5_000, 10_000, 20_000] as const;
/** Calls per timed window; the figure at N is the median of the windows in the 1,000 calls ending at N. */
const window = 200;
const span = 1_000;

type CreateLedger = typeof CreateEpisodeLedger;

/** One episode of `calls` calls; the µs per call of each `window` calls, by the call that ends it. */
async function runEpisode(createEpisodeLedger: CreateLedger, calls: number): Promise<Map<number, number>> {
  const dir = temporaryDirectory("ledger-bench-");
  const file = openAppendFile(join(dir, "ledger.jsonl"), { groupCommit: undefined });
  try {
    const ledger = createEpisodeLedger({
      journal: { append: (event) => void file.append(`${JSON.stringify(event)}\n`), sync: () => file.sync() },
      deliveryWaitMs: 10_000,
      previousAckWaitMs: 10_000,
      finishTool: "finish",
    });
    const usPerCall = new Map<number, number>();
    let windowStart = 0;
    for (let n = 1; n <= calls; n++) {
      if (n % window === 1) windowStart = performance.now();
      const id = `call_${n}`;
      const batchId = `ex_${String(n).padStart(6, "0")}`;
      ledger.register({
        batchId,
        calls: [{ id, modelName: "mcp__ura__observe", tool: "observe", args: {} }],
      });
      ledger.delivered(batchId);
      const admission = await ledger.admit({
        tool: "observe",
        args: {},
        ...(n % 2 === 0 ? { identity: { kind: "call_id" as const, value: id } } : {}),
      });
      if (admission.call.id !== id) throw new Error(`callback ${n} ran ${admission.call.id}, not ${id}`);
      admission.submitted();
      admission.acknowledged(`job_${n}`);
      admission.receipt({ ok: true });
      if (n % window === 0) usPerCall.set(n, ((performance.now() - windowStart) * 1000) / window);
    }
    return usPerCall;
  } finally {
    file.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runLedgerBench(
  log: (line: string) => void = () => {},
  ledgerModule = resolve(import.meta.dir, "../src/ledger/episode-ledger.ts"),
): Promise<Record<string, number>> {
  const { createEpisodeLedger } = (await import(ledgerModule)) as { createEpisodeLedger: CreateLedger };
  await runEpisode(createEpisodeLedger, span); // warm-up: the first window would otherwise time the JIT
  const last = sizes[sizes.length - 1] ?? 0;
  const usPerCall = await runEpisode(createEpisodeLedger, last);
  const at = (size: number) => {
    const windows = Array.from(
      { length: span / window },
      (_, w) => usPerCall.get(size - w * window) ?? Number.NaN,
    );
    return windows.sort((a, b) => a - b)[Math.floor(windows.length / 2)] ?? Number.NaN;
  };
  const first = at(sizes[0]);
  const largest = at(last);
  const figures: Record<string, number> = {};
  log(
    `| calls in the episode | µs per call (median of ${window}-call windows in the last ${span}) | vs ${sizes[0]} calls |`,
  );
  log("|---:|---:|---:|");
  for (const size of sizes) {
    const us = at(size);
    figures[`ledger_us_per_call_at_${size}`] = us;
    log(`| ${size} | ${us.toFixed(1)} | ${(us / first).toFixed(2)} |`);
  }
  figures[`ledger_per_call_ratio_${last}_vs_${sizes[0]}`] = largest / first;
  log(`per-call cost at ${last} calls ÷ at ${sizes[0]} calls: ${(largest / first).toFixed(2)} (goal ≤ 1.5)`);
  return figures;
}

if (import.meta.main)
  await runLedgerBench(console.log, process.argv[2] ? resolve(process.argv[2]) : undefined);
