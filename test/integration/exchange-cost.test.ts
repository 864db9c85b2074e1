/**
 * The price table through the compiled binary and its embedded scripted upstream, whose
 * context cache follows the provider's rules: an implicit-cache model and an explicit-cache
 * one (the sidecar marks its prompt), two turns each, the second served from the cache.
 * Each exchange's recorded cost, the episode's status and `ura_upstream_cost_total` are
 * the price arithmetic of the usage the upstream reported, done here independently.
 * Needs `make build`.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { costAmount, formatCost } from "../../src/pricing/exchange-cost.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { responsesRequest } from "../support/lifecycle-kit.ts";
import {
  controlPassword,
  type LaunchInfo,
  runBinary,
  type SidecarProcess,
  startSidecarProcess,
} from "../support/sidecar-process.ts";

/** Prices per million tokens, as the config gives them, in millionths (so costs come out in 10⁻¹² CNY). */
const prices = {
  "qwen3-vl-plus": { input: "1.6", output: "4" },
  "qwen3.5-plus": { input: "0.8", output: "4.8" },
};
const micro = {
  "qwen3-vl-plus": { input: 1_600_000n, output: 4_000_000n },
  "qwen3.5-plus": { input: 800_000n, output: 4_800_000n },
};
/** Over the explicit cache's 1,024-token minimum (~4 characters a token). */
const instruction = `Watch the bench and report what moves. ${"The arm rests at home; the tray holds three parts. ".repeat(120)}`;

let sidecar: SidecarProcess;
/** Each episode's status cost, to compare after a restart. */
const costs = new Map<string, unknown>();
beforeAll(async () => {
  sidecar = await startSidecarProcess({
    config: { upstream: { prices: { currency: "CNY", models: prices } } },
  });
});
afterAll(async () => {
  await sidecar?.stopCleanly();
});

/** Turn `n` of an episode: the instruction, then n observe calls with their results. */
async function turn(episode: LaunchInfo, n: number): Promise<void> {
  const input: unknown[] = [{ role: "user", content: instruction }];
  for (let i = 0; i < n; i++) {
    input.push({ type: "function_call", call_id: `call_${i}`, name: "ura_observe", arguments: "{}" });
    input.push({ type: "function_call_output", call_id: `call_${i}`, output: `frame ${i}: nothing moved` });
  }
  const res = await responsesRequest(episode, input);
  expect({ status: res.status, body: res.status === 200 ? "" : await res.text() }).toEqual({
    status: 200,
    body: "",
  });
  await res.text();
}

type Usage = {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
  cacheCreationInputTokens?: number;
};

/** The documented rates: an implicit hit at 20% of input, an explicit hit at 10%, a creation at 125%. */
function expectedCost(model: keyof typeof micro, usage: Usage, explicit: boolean): bigint {
  const { input, output } = micro[model];
  const hit = BigInt(usage.cachedInputTokens ?? 0);
  const creation = BigInt(usage.cacheCreationInputTokens ?? 0);
  const rest = BigInt(usage.inputTokens) - hit - creation;
  const hitRate = explicit ? input / 10n : input / 5n;
  return rest * input + hit * hitRate + creation * ((input * 5n) / 4n) + BigInt(usage.outputTokens) * output;
}
const cnyText = (pico: bigint) => {
  const digits = pico.toString().padStart(13, "0");
  return `${digits.slice(0, -12)}.${digits.slice(-12)}`.replace(/\.?0+$/, "");
};

for (const [model, explicit] of [
  ["qwen3-vl-plus", false],
  ["qwen3.5-plus", true],
] as const) {
  test(`${model} (${explicit ? "explicit" : "implicit"} cache): recorded, status and metric costs are the arithmetic of the reported usage`, async () => {
    const episode = await sidecar.createEpisode({ model });
    await turn(episode, 0);
    await turn(episode, 1);
    const lines = openRecords(sidecar.dataDir)
      .readEpisode(episode.id)
      .exchanges.map((exchange) => exchange.line("upstream_response"));
    expect(lines).toHaveLength(2);
    const usages = lines.map((line) => line?.attempts?.[0]?.usage as Usage);
    // The second turn is served from the cache (the explicit one from the entry the first created).
    expect(usages[1]?.cachedInputTokens).toBeGreaterThan(explicit ? 1023 : 255);
    if (explicit) expect(usages[0]?.cacheCreationInputTokens).toBeGreaterThan(1023);
    let sum = 0n;
    for (const [i, line] of lines.entries()) {
      const usage = usages[i] as Usage;
      expect(line?.validated?.usage).toEqual(usage);
      const cost = expectedCost(model, usage, explicit);
      sum += cost;
      expect(line?.cost).toMatchObject({
        model,
        currency: "CNY",
        cache: explicit ? "explicit" : "implicit",
        billed_attempts: 1,
        total: cnyText(cost),
      });
    }
    const status = await sidecar.episode(episode.id);
    costs.set(episode.id, status.cost);
    expect(status.cost).toMatchObject({ currency: "CNY", total: cnyText(sum), exchanges: 2 });
    const scrape = await fetch(`${sidecar.url}/metrics`, {
      headers: { authorization: `Bearer ${controlPassword}` },
    });
    const metrics = await scrape.text();
    const series = new RegExp(
      `^ura_upstream_cost_total\\{model="${model.replace(".", "\\.")}",currency="CNY"\\} (\\S+)$`,
      "m",
    ).exec(metrics);
    expect(Number(series?.[1])).toBe(Number(cnyText(sum)));
  });
}

test("an episode restored after a restart keeps its cost", async () => {
  expect(costs.size).toBe(2);
  await sidecar.stopCleanly();
  sidecar = await startSidecarProcess({
    dataDir: sidecar.dataDir,
    config: { upstream: { prices: { currency: "CNY", models: prices } } },
  });
  for (const [id, cost] of costs) expect((await sidecar.episode(id)).cost).toEqual(cost as never);
});

test("killed right after a priced exchange, then restarted with a table in another currency: the restored episode's cost is its records' sum, in the currency they were priced in", async () => {
  const episode = await sidecar.createEpisode({ model: "qwen3-vl-plus" });
  await turn(episode, 0);
  // The status file has caught up with the first exchange's cost (it is rewritten every 250 ms at most)…
  await Bun.sleep(600);
  // …and not with the second's: the process is gone before it is written.
  await turn(episode, 1);
  await sidecar.stop("SIGKILL");
  const recorded = openRecords(sidecar.dataDir)
    .readEpisode(episode.id)
    .exchanges.map((exchange) => exchange.line("upstream_response")?.cost);
  expect(recorded.map((cost) => cost?.currency)).toEqual(["CNY", "CNY"]);
  const sum = formatCost(recorded.reduce((total, cost) => total + costAmount(cost?.total ?? "x"), 0n));

  sidecar = await startSidecarProcess({
    dataDir: sidecar.dataDir,
    config: { upstream: { prices: { currency: "USD", models: prices } } },
  });
  const restored = await sidecar.episode(episode.id);
  expect(restored.state).toBe("interrupted");
  expect(restored.cost).toMatchObject({ currency: "CNY", total: sum, exchanges: 2 });
  // A new episode is priced by the new table; the restored one runs no exchange, so no sum mixes them.
  const fresh = await sidecar.createEpisode({ model: "qwen3-vl-plus" });
  await turn(fresh, 0);
  expect((await sidecar.episode(fresh.id)).cost).toMatchObject({ currency: "USD", exchanges: 1 });
  expect((await sidecar.episode(episode.id)).cost).toEqual(restored.cost);
});

test("a bad price table is refused at start-up, naming the key", async () => {
  const file = join(mkdtempSync(join(tmpdir(), "ura-prices-")), "config.json");
  writeFileSync(
    file,
    JSON.stringify({
      upstream: { prices: { currency: "CNY", models: { "qwen3-vl-plus": { input: 1, output: "1e-7" } } } },
    }),
  );
  const run = await runBinary(["serve", "--listen", "127.0.0.1:0", "--config", file]);
  expect(run.code).toBe(2);
  expect(run.stderr).toContain(
    'upstream.prices.models.qwen3-vl-plus.output: a price per million tokens: expected a non-negative decimal such as 0.8 or "1.25", got "1e-7"',
  );
});
