/**
 * OpenTelemetry traces of the compiled binary, exported over OTLP/HTTP to a
 * receiver the test runs: a smoke episode (Responses + MCP) and a Gemini
 * countTokens. Span names, GenAI and MCP attributes, parenting, the link from
 * each execute_tool span to the chat span that delivered its call, ledger
 * transitions as events, and the trace id in the JSON log lines. Needs `make build`.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { openRecords } from "../../src/records/read-records.ts";
import {
  awaitApprovals,
  driveSmokeEpisode,
  fileUpstream,
  injectFaults,
  resetUpstream,
  responsesRequest,
  robotManifestWith,
  upstreamRequests,
  waitFor,
} from "../support/lifecycle-kit.ts";
import { type ReceivedSpan, spanKind, startOtlpReceiver } from "../support/otlp-receiver.ts";
import { startSidecarProcess } from "../support/sidecar-process.ts";

const upstream = await fileUpstream(60_000);
const receiver = startOtlpReceiver();
afterAll(() => receiver.stop());

describe("traces of the compiled binary", () => {
  test("chat, execute_tool, MCP and local-response spans arrive at the OTLP receiver", async () => {
    const sidecar = await startSidecarProcess({
      upstreamUrl: upstream.url,
      args: ["--log-level", "debug"],
      config: {
        upstream: { prices: { currency: "CNY", models: { "qwen3-vl-plus": { input: 1, output: 10 } } } },
      },
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
        OTEL_SERVICE_NAME: "ura-under-test",
        OTEL_BSP_SCHEDULE_DELAY: "100",
      },
    });
    const episode = {
      ...(await sidecar.createEpisode({ client: "codex", model: "qwen3-vl-plus" })),
      model: "qwen3-vl-plus",
    };
    expect(await driveSmokeEpisode(episode)).toBe(4);
    const gemini = {
      ...(await sidecar.createEpisode({ client: "gemini", model: "qwen3-vl-plus" })),
      model: "qwen3-vl-plus",
    };
    const count = await fetch(`${gemini.urls.gemini}/v1beta/models/${gemini.model}:countTokens`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": gemini.ingress_key },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
    });
    expect(count.status).toBe(400);
    expect(await sidecar.stop("SIGTERM")).toBe(0);
    expect(receiver.problems).toEqual([]);

    const spans = receiver.spans;
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: ReceivedSpan) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
    expect(spans[0]?.resource["service.name"]).toBe("ura-under-test");

    const chats = spans.filter((s) => s.name.startsWith("chat "));
    expect(chats).toHaveLength(4);
    // Each chat span carries its exchange's recorded cost, in the table's currency.
    const recorded = openRecords(sidecar.dataDir)
      .readEpisode(episode.id)
      .exchanges.map((x) => [x.id, Number(x.line("upstream_response")?.cost?.total), "CNY"]);
    expect(recorded).toHaveLength(4);
    expect(
      chats
        .map((c) => [
          c.attributes["ura.exchange.id"],
          c.attributes["ura.cost.total"],
          c.attributes["ura.cost.currency"],
        ])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    ).toEqual(recorded);
    for (const chat of chats) {
      expect(chat.name).toBe(`chat ${episode.model}`);
      expect(chat.kind).toBe(spanKind.client);
      expect(chat.attributes).toMatchObject({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": episode.model,
        "gen_ai.conversation.id": episode.id,
        "http.response.status_code": 200,
        // One episode, nothing else in flight: no wait for a turn in the shared budget.
        "ura.upstream.queue_wait_ms": 0,
      });
      expect(chat.attributes["gen_ai.usage.input_tokens"]).toBeGreaterThan(0);
      expect(chat.attributes["gen_ai.response.finish_reasons"]).toHaveLength(1);
      const server = parentOf(chat);
      expect(server?.name).toBe("POST /e/{episode}/v1/responses");
      expect(server?.kind).toBe(spanKind.server);
      expect(server?.traceId).toBe(chat.traceId);
    }

    const tools = spans.filter((s) => s.name.startsWith("execute_tool "));
    expect(tools.map((s) => s.name).sort()).toEqual([
      "execute_tool finish",
      "execute_tool observe",
      "execute_tool record",
      "execute_tool record",
    ]);
    const callIds = new Set(tools.map((s) => s.attributes["gen_ai.tool.call.id"]));
    expect(callIds.size).toBe(4);
    for (const tool of tools) {
      expect(tool.attributes).toMatchObject({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.conversation.id": episode.id,
      });
      expect(tool.events.map((e) => e.name)).toEqual([
        "registered",
        "delivered",
        "claimed",
        "submitted",
        "acknowledged",
        "receipt",
      ]);
      // Linked to the chat span whose answer delivered the call.
      expect(tool.links).toHaveLength(1);
      const delivering = byId.get(tool.links[0]?.spanId ?? "");
      expect(delivering?.name).toBe(`chat ${episode.model}`);
      expect((delivering?.startTimeUnixNano ?? Infinity) <= tool.startTimeUnixNano).toBe(true);
      // Inside the MCP request that claimed it.
      const mcp = parentOf(tool);
      expect(mcp?.name).toBe(`tools/call ${tool.name.slice("execute_tool ".length)}`);
      expect(mcp?.kind).toBe(spanKind.server);
      expect(mcp?.attributes["mcp.method.name"]).toBe("tools/call");
      expect(typeof mcp?.attributes["mcp.session.id"]).toBe("string");
    }
    // The two identical record calls were delivered by the same chat answer.
    const records = tools.filter((t) => t.name === "execute_tool record");
    expect(records[0]?.links[0]?.spanId).toBe(records[1]?.links[0]?.spanId ?? "");

    const local = spans.filter((s) => s.name === "provider.local_response");
    expect(local).toHaveLength(1);
    expect(local[0]?.attributes).toMatchObject({
      "http.response.status_code": 400,
      "gen_ai.conversation.id": gemini.id,
      "url.path": `/e/{episode}/gemini/v1beta/models/${gemini.model}:countTokens`,
      "ura.operation": "countTokens",
    });

    // JSON log lines written inside a request carry its trace id.
    const logged = sidecar
      .output()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === "auxiliary response");
    expect(logged?.trace_id).toBe(local[0]?.traceId ?? "");
    expect(logged?.span_id).toBe(parentOf(local[0] as ReceivedSpan)?.spanId ?? "");
  });

  test("a tool's policy on the execute_tool span: approval requested and approved (by whom); a rate-limited call ends in error", async () => {
    const before = receiver.spans.length;
    const sidecar = await startSidecarProcess({
      upstreamUrl: upstream.url,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "100" },
    });
    const manifest = robotManifestWith({
      observe: { approval: "always" },
      record: { rate: { min_interval_ms: 600_000 } },
    });
    const episode = await sidecar.createEpisode({ client: "codex", manifest });
    const driving = driveSmokeEpisode(episode);
    const [pending] = await awaitApprovals(sidecar, episode.id);
    const decided = await sidecar.control(`/episodes/${episode.id}/approvals/${pending?.call_id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBe(200);
    await driving;
    expect(await sidecar.stop("SIGTERM")).toBe(0);

    const tools = receiver.spans.slice(before).filter((s) => s.name.startsWith("execute_tool "));
    const observe = tools.find((t) => t.name === "execute_tool observe");
    expect(observe?.events.map((e) => e.name)).toEqual([
      "registered",
      "delivered",
      "claimed",
      "approval_requested",
      "approved",
      "submitted",
      "acknowledged",
      "receipt",
    ]);
    expect(observe?.events.find((e) => e.name === "approved")?.attributes).toMatchObject({
      "ura.approval.by": "api",
    });
    // The batch's two identical records: one runs, the other is over the tool's limit.
    const limited = tools.filter((t) => t.name === "execute_tool record" && t.attributes["error.type"]);
    expect(limited).toHaveLength(1);
    expect(limited[0]?.attributes["error.type"]).toBe("rate_limited");
    expect(limited[0]?.events.at(-1)?.name).toBe("rate_limited");
  });

  test("an exchange cancelled while waiting to retry: its failed attempt's span says where and why", async () => {
    const before = receiver.spans.length;
    const sidecar = await startSidecarProcess({
      upstreamUrl: upstream.url,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "100" },
    });
    const episode = await sidecar.createEpisode({ client: "codex" });
    await resetUpstream(upstream);
    await injectFaults(upstream, [{ kind: "status", status: 503, retry_after: "5" }]);
    const answered = responsesRequest(episode, [{ role: "user", content: "go" }]).then((r) => r.status);
    await waitFor("the first attempt", async () =>
      (await upstreamRequests(upstream)).length > 0 ? true : undefined,
    );
    await Bun.sleep(300);
    expect((await sidecar.control(`/episodes/${episode.id}/cancel`, { method: "POST" })).status).toBe(200);
    expect(await answered).toBe(400);
    expect(await sidecar.stop("SIGTERM")).toBe(0);

    const chats = receiver.spans.slice(before).filter((s) => s.name.startsWith("chat "));
    expect(chats.map((c) => c.attributes)).toEqual([
      expect.objectContaining({
        "http.response.status_code": 503,
        "ura.upstream.ended": "http_error",
        "ura.upstream.retry_in_ms": 5_000,
        "ura.upstream.cancelled_at": "backoff",
        "ura.upstream.cancel_reason": "episode_cancelled",
      }),
    ]);
  });

  test("without OTEL_* settings nothing is exported and log lines carry no trace ids", async () => {
    const before = receiver.spans.length;
    const sidecar = await startSidecarProcess({ upstreamUrl: upstream.url });
    const episode = await sidecar.createEpisode({ client: "codex" });
    expect(await driveSmokeEpisode(episode)).toBe(4);
    expect(await sidecar.stop("SIGTERM")).toBe(0);
    await Bun.sleep(300);
    expect(receiver.spans.length).toBe(before);
    expect(sidecar.output()).not.toContain("trace_id");
  });

  test("an exporter this build lacks is refused at start", async () => {
    await expect(
      startSidecarProcess({
        upstreamUrl: upstream.url,
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_TRACES_EXPORTER: "zipkin" },
      }),
    ).rejects.toThrow(/OTEL_TRACES_EXPORTER=zipkin/);
  });
});
