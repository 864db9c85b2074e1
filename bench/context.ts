/**
 * Context bench: sliding_window filtering time for histories of 100, 1,000,
 * 10,000 and 30,000 messages, with the policy forced through both phases (every
 * evictable tool image omitted, then old blocks removed). The work is linear, so
 * each tenfold history should take about ten times as long. Expect the 10,000/1,000
 * ratio to run above 10: a 1,000-message history (~2 MB of base64) stays in the
 * CPU caches and a 10,000-message one (~20 MB) does not; the 30,000/10,000 ratio
 * (linear ≈ 3), both out of cache, shows the algorithm itself.
 * `bun bench/context.ts` prints a table; `runContextBench()` returns the figures.
 */
import { applyContextPolicy } from "../src/context/apply-context.ts";
import { estimateTokens } from "../src/context/estimate.ts";
import { contextPolicySchema } from "../src/context/policy-schema.ts";
import type { HubMessage, HubRequest } from "../src/hub/schema.ts";

const sizes = [100, 1_000, 10_000, 30_000] as const;

/** About `items` messages: call/result blocks with one image each, a user note every tenth block. */
function buildRequest(items: number): HubRequest {
  const messages: HubMessage[] = [
    { role: "system", content: [{ type: "text", text: "You drive a robot arm." }] },
    { role: "user", content: [{ type: "text", text: "Stack the red blocks." }] },
  ];
  for (let b = 0; messages.length < items; b++) {
    const id = `call_${b}`;
    messages.push(
      {
        role: "assistant",
        text: null,
        toolCalls: [{ id, name: "capture_image", arguments: `{"camera":"wrist","step":${b}}` }],
      },
      {
        role: "tool",
        toolCallId: id,
        name: "capture_image",
        content: [
          { type: "text", text: `frame ${b}: gripper open, 3 blocks visible` },
          { type: "image", mediaType: "image/png", data: "iVBORw0KGgo".repeat(180) },
        ],
      },
    );
    if (b % 10 === 9) messages.push({ role: "user", content: [{ type: "text", text: `note ${b}` }] });
  }
  return { model: "qwen", messages, tools: [], temperature: 0.2, ignored: [] };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function timeFiltering(items: number): { ms: number; omitted: number; removed: number } {
  const request = buildRequest(items);
  const estimate = estimateTokens(request);
  const policy = contextPolicySchema.parse({
    policy: "sliding_window",
    max_input_tokens: Math.floor(estimate / 2),
    target_input_tokens: Math.floor(estimate / 10),
  });
  let last = applyContextPolicy(request, policy);
  for (let i = 0; i < 5; i++) applyContextPolicy(request, policy); // warm-up
  const runs: number[] = [];
  for (let i = 0; i < 15; i++) {
    const start = performance.now();
    last = applyContextPolicy(request, policy);
    runs.push(performance.now() - start);
  }
  return {
    ms: median(runs),
    omitted: last.decision.images_omitted.length,
    removed: last.decision.blocks_removed.length,
  };
}

export async function runContextBench(): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  timeFiltering(1_000); // let the JIT compile the hot paths before any size is timed
  for (const items of sizes) {
    const { ms, omitted, removed } = timeFiltering(items);
    figures[`context_ms_${items}`] = Number(ms.toFixed(3));
    figures[`context_images_omitted_${items}`] = omitted;
    figures[`context_blocks_removed_${items}`] = removed;
  }
  const ms = (items: number) => figures[`context_ms_${items}`] ?? Number.NaN;
  figures.context_ratio_1000_vs_100 = Number((ms(1_000) / ms(100)).toFixed(2));
  figures.context_ratio_10000_vs_1000 = Number((ms(10_000) / ms(1_000)).toFixed(2));
  figures.context_ratio_30000_vs_10000 = Number((ms(30_000) / ms(10_000)).toFixed(2));
  return figures;
}

if (import.meta.main) {
  const figures = await runContextBench();
  console.log("sliding_window filtering (median of 15 runs, both phases forced)");
  console.log("items    ms        images omitted  blocks removed");
  for (const items of sizes) {
    console.log(
      `${String(items).padEnd(8)} ${String(figures[`context_ms_${items}`]).padEnd(9)} ` +
        `${String(figures[`context_images_omitted_${items}`]).padEnd(15)} ${figures[`context_blocks_removed_${items}`]}`,
    );
  }
  console.log(`ratio 1,000 / 100:    ${figures.context_ratio_1000_vs_100} (linear ≈ 10)`);
  console.log(
    `ratio 10,000 / 1,000: ${figures.context_ratio_10000_vs_1000} (linear ≈ 10; above it when out of cache)`,
  );
  console.log(`ratio 30,000 / 10,000: ${figures.context_ratio_30000_vs_10000} (linear ≈ 3)`);
}
