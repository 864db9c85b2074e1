import { expect, test } from "bun:test";
import { bareMetrics } from "../../test/support/bare-metrics.ts";

test("ura_upstream_input_tokens_total splits each answer's prompt tokens by what the prompt cache did", async () => {
  const metrics = bareMetrics();
  const usages = [
    { inputTokens: 10_000, outputTokens: 12, cachedInputTokens: 7_000, cacheCreationInputTokens: 2_500 },
    { inputTokens: 3_000, outputTokens: 5, cachedInputTokens: 2_000 },
    { inputTokens: 400, outputTokens: 1 },
  ];
  usages.forEach((usage, i) => {
    const at = { kind: "exchange_stage", episode: "ep_1", exchange: `ex_${i}`, at: 0 } as const;
    metrics.observer.observe({
      ...at,
      line: { stage: "client_request", protocol: "responses", path: "/v1/responses" },
    });
    metrics.observer.observe({
      ...at,
      line: {
        stage: "upstream_response",
        attempts: [],
        raw: null,
        validated: { id: "r", model: "m", text: "ok", toolCalls: [], finishReason: "stop", usage },
      },
    });
  });
  const text = await metrics.render();
  expect(text).toContain('ura_upstream_input_tokens_total{cache="read"} 9000');
  expect(text).toContain('ura_upstream_input_tokens_total{cache="write"} 2500');
  expect(text).toContain('ura_upstream_input_tokens_total{cache="none"} 1900');
});
