/**
 * ura_upstream_throttled_attempts_total counts every attempt the provider throttled,
 * as the shared pace hears it (src/upstream/upstream-client.ts): an HTTP 429 and a
 * throttle that arrives as an error event inside a 200 stream alike; a 5xx or a
 * server error event does not count.
 */
import { expect, test } from "bun:test";
import { bareMetrics } from "../../test/support/bare-metrics.ts";
import type { UpstreamAttempt } from "../upstream/upstream-attempt.ts";

const attempt = (n: number, fields: Partial<UpstreamAttempt>): UpstreamAttempt => ({
  attempt: n,
  started_at: "2026-12-05T00:00:00.000Z",
  ms: 10,
  ended: "answered",
  ...fields,
});

test("a throttle error event inside a 200 stream counts as a throttled attempt, as a 429 does", async () => {
  const metrics = bareMetrics();
  const at = { kind: "exchange_stage", episode: "ep_1", exchange: "ex_1", at: 0 } as const;
  metrics.observer.observe({
    ...at,
    line: { stage: "client_request", protocol: "responses", path: "/v1/responses" },
  });
  const failed = { classification: "transient" as const, error: "…" };
  metrics.observer.observe({
    ...at,
    line: {
      stage: "upstream_response",
      attempts: [
        attempt(1, { ...failed, status: 200, ended: "stream_error", cause: "allocation_quota" }),
        attempt(2, { ...failed, status: 429, ended: "http_error", cause: "rate_quota" }),
        attempt(3, { ...failed, status: 200, ended: "stream_error", cause: "server_error" }),
        attempt(4, { ...failed, status: 503, ended: "http_error", cause: "server_error" }),
        attempt(5, { ...failed, status: 200, ended: "stream_error", cause: "throttled" }),
        attempt(6, { status: 200 }),
      ],
      raw: null,
      validated: {
        id: "r",
        model: "m",
        text: "ok",
        toolCalls: [],
        finishReason: "stop",
        usage: { inputTokens: 1, outputTokens: 1 },
      },
    },
  });
  const lines = (await metrics.render()).split("\n");
  expect(lines.filter((l) => l.startsWith("ura_upstream_throttled_attempts_total "))).toEqual([
    "ura_upstream_throttled_attempts_total 3",
  ]);
  expect(lines).toContain('ura_upstream_attempts_total{status_class="2xx"} 4');
});
