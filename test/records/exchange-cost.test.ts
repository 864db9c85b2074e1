/**
 * The price table through the whole in-process app (composed as the binary is): each
 * exchange's recorded cost is the arithmetic of the usage the scripted upstream reported,
 * a cached turn included; the episode's status sums it; a model without a price has no
 * cost, said once in the log; without a table nothing has a cost.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Episode } from "../../src/episodes/episode.ts";
import { openRecords } from "../../src/records/read-records.ts";
import { createInProcessSidecar, type InProcessSidecar, postJson } from "../support/in-process-sidecar.ts";
import { observeResponsesRequest } from "../support/observe-responses-request.ts";

const prices = { currency: "CNY", models: { "qwen3-vl-plus": { input: "1.6", output: 4 } } };
/** Long enough (~1,000 tokens) for the implicit cache's 256-token prefix. */
const instruction = `Observe the bench and report. ${"The arm rests at home; the tray holds three parts. ".repeat(80)}`;

/** The instruction, then `n` observe calls each answered with its frame's text. */
const turns = (n: number) =>
  observeResponsesRequest(
    instruction,
    Array.from({ length: n }, (_, i) => `frame ${i}: nothing moved`),
  );

/** Turn `n` through the Responses ingress. */
const send = (s: InProcessSidecar, episode: Episode, n: number) =>
  postJson(s.app, `/e/${episode.id}/v1/responses`, turns(n), {
    authorization: `Bearer ${episode.ingressKey}`,
  });

async function post(s: InProcessSidecar, episode: Episode, n: number): Promise<void> {
  const res = await send(s, episode, n);
  expect({ status: res.status, body: res.status === 200 ? "" : await res.text() }).toEqual({
    status: 200,
    body: "",
  });
  await res.text();
}

/** The cost the table's arithmetic gives for a usage: prices in millionths per million tokens, so pico-units. */
function expectedTotal(usage: {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens?: number;
}): bigint {
  const cached = BigInt(usage.cachedInputTokens ?? 0);
  const uncached = BigInt(usage.inputTokens) - cached;
  return uncached * 1_600_000n + cached * 320_000n + BigInt(usage.outputTokens) * 4_000_000n;
}
const picoText = (pico: bigint) => {
  const digits = pico.toString().padStart(13, "0");
  return `${digits.slice(0, -12)}.${digits.slice(-12)}`.replace(/\.?0+$/, "");
};

describe("with a price table", () => {
  let s: InProcessSidecar;
  beforeAll(async () => {
    s = await createInProcessSidecar({ config: { upstream: { prices } } });
  });
  afterAll(() => s.stop());

  test("each exchange's cost is the arithmetic of its reported usage, a cached turn included; the episode sums them", async () => {
    const episode = s.createEpisode({ max_turns: 0 });
    await post(s, episode, 0);
    await post(s, episode, 1);
    const exchanges = openRecords(s.dataDir).readEpisode(episode.id).exchanges;
    const lines = exchanges.map((exchange) => exchange.line("upstream_response"));
    const usages = lines.map((line) => line?.validated?.usage);
    expect(usages[1]?.cachedInputTokens).toBeGreaterThan(255);
    let sum = 0n;
    for (const [i, line] of lines.entries()) {
      const usage = usages[i];
      if (!usage?.inputTokens || usage.outputTokens === undefined)
        throw new Error(`exchange ${i} has no usage`);
      const total = expectedTotal({
        ...usage,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
      });
      sum += total;
      expect(line?.cost).toMatchObject({
        model: "qwen3-vl-plus",
        currency: "CNY",
        cache: "implicit",
        billed_attempts: 1,
        total: picoText(total),
      });
      expect(line?.attempts?.[0]?.usage).toEqual(usage);
    }
    expect(episode.describe().cost).toEqual({
      currency: "CNY",
      total: picoText(sum),
      exchanges: 2,
      tokens: {
        input:
          (usages[0]?.inputTokens ?? 0) + (usages[1]?.inputTokens ?? 0) - (usages[1]?.cachedInputTokens ?? 0),
        cache_hit: usages[1]?.cachedInputTokens ?? 0,
        cache_creation: 0,
        output: (usages[0]?.outputTokens ?? 0) + (usages[1]?.outputTokens ?? 0),
      },
    });
  });

  test("a refused answer was billed: the failed exchange has its cost and the episode counts it", async () => {
    const episode = s.createEpisode({ max_turns: 0 });
    s.scripted.enqueueFaults([{ kind: "invalid_json_args" }]);
    const res = await send(s, episode, 0);
    expect(res.status).toBeGreaterThanOrEqual(400);
    await res.text();
    const line = openRecords(s.dataDir).readEpisode(episode.id).exchanges[0]?.line("upstream_response");
    expect(line?.error).toContain("not valid JSON");
    const usage = line?.attempts?.[0]?.usage;
    if (!usage?.inputTokens || usage.outputTokens === undefined)
      throw new Error("the refused attempt has no usage");
    const total = picoText(
      expectedTotal({ ...usage, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }),
    );
    expect(line?.cost).toMatchObject({ billed_attempts: 1, total });
    expect(episode.describe().cost).toMatchObject({ total, exchanges: 1 });
  });

  test("a throttled attempt reported no usage and costs nothing; its answered retry does", async () => {
    const retrying = await createInProcessSidecar({
      config: { upstream: { prices, retry: { max_attempts: 2, initial_backoff_ms: 1, max_backoff_ms: 5 } } },
    });
    try {
      const episode = retrying.createEpisode({ max_turns: 0 });
      retrying.scripted.enqueueFaults([{ kind: "status", status: 429 }]);
      await post(retrying, episode, 0);
      const line = openRecords(retrying.dataDir)
        .readEpisode(episode.id)
        .exchanges[0]?.line("upstream_response");
      expect(line?.attempts?.map((attempt) => [attempt.status, attempt.usage === undefined])).toEqual([
        [429, true],
        [200, false],
      ]);
      const usage = line?.validated?.usage;
      if (!usage?.inputTokens || usage.outputTokens === undefined) throw new Error("no usage");
      expect(line?.cost).toMatchObject({
        billed_attempts: 1,
        total: picoText(
          expectedTotal({ ...usage, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }),
        ),
      });
    } finally {
      retrying.stop();
    }
  });

  test("a model the table does not list has no cost, and the log says so once", async () => {
    const episode = s.createEpisode({ max_turns: 0, model: "qwen3-vl-flash" });
    await post(s, episode, 0);
    await post(s, episode, 1);
    const exchanges = openRecords(s.dataDir).readEpisode(episode.id).exchanges;
    expect(exchanges.map((exchange) => exchange.line("upstream_response")?.cost)).toEqual([
      undefined,
      undefined,
    ]);
    expect(episode.describe().cost).toBeNull();
    const told = s.logLines.filter((line) => line.includes("no price for this model"));
    expect(told).toHaveLength(1);
    expect(JSON.parse(told[0] ?? "{}")).toMatchObject({
      level: "warn",
      model: "qwen3-vl-flash",
      currency: "CNY",
    });
  });
});

test("without a price table no exchange or episode has a cost", async () => {
  const s = await createInProcessSidecar();
  try {
    const episode = s.createEpisode({ max_turns: 0 });
    await post(s, episode, 0);
    const line = openRecords(s.dataDir).readEpisode(episode.id).exchanges[0]?.line("upstream_response");
    expect(line?.validated?.usage?.inputTokens).toBeGreaterThan(0);
    expect(line?.cost).toBeUndefined();
    expect(episode.describe().cost).toBeNull();
  } finally {
    s.stop();
  }
});
