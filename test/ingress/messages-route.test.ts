/**
 * The Anthropic Messages ingress in process (the whole app of
 * test/support/in-process-sidecar.ts, real pipeline, scripted upstream), one
 * fresh sidecar and episode per test.
 */
import { describe, expect, test } from "bun:test";
import type { Episode } from "../../src/episodes/episode.ts";
import { records } from "../support/episode-evidence.ts";
import { episodeInProcess, responseEvents as events } from "../support/in-process-sidecar.ts";
import { messagesTurnEvents } from "../support/messages-kit.ts";

const setup = () => episodeInProcess((key) => ({ "x-api-key": key }));

const tools = ["observe", "record", "finish"].map((name) => ({
  name: `mcp__ura__${name}`,
  description: name,
  input_schema: { type: "object" },
}));
const turn = (stream: boolean) => ({
  model: "ura-qwen",
  max_tokens: 1024,
  stream,
  system: [{ type: "text", text: "You drive a robot.", cache_control: { type: "ephemeral" } }],
  messages: [{ role: "user", content: "Observe, record twice, finish." }],
  tools,
});

const lines = (episode: Episode, file: "ledger" | "exchanges" | "auxiliary") =>
  records(episode.records.dir, file);

describe("POST /v1/messages", () => {
  test("streamed turn: SSE events, the tool_use id is the id the ledger registered, delivery confirmed", async () => {
    const { episode, scripted, post } = await setup();
    const res = await post("/anthropic/v1/messages?beta=true", turn(true));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const got = await events(res);
    expect(got.map((e) => e.event)).toEqual(messagesTurnEvents(1));
    for (const e of got) expect(e.data.type).toBe(e.event as string);
    const block = got[1]?.data.content_block as { type: string; id: string; name: string };
    expect(block).toMatchObject({ type: "tool_use", name: "mcp__ura__observe" });
    const registered = lines(episode, "ledger").filter((e) => e.type === "registered");
    expect(registered).toHaveLength(1);
    expect(((registered[0]?.calls ?? []) as { id: string }[]).map((c) => c.id)).toEqual([block.id]);
    expect(lines(episode, "ledger").some((e) => e.type === "delivered")).toBe(true);
    expect(episode.counters.delivered_exchanges).toBe(1);
    // What went upstream: the system prompt and tools, no cache_control; recorded as ignored.
    const upstream = scripted.received[0]?.body as {
      messages: { role: string; content: unknown }[];
      tools: { function: { name: string } }[];
    };
    expect(upstream.messages[0]).toEqual({ role: "system", content: "You drive a robot." });
    expect(upstream.tools.map((t) => t.function.name)).toEqual(tools.map((t) => t.name));
    expect(JSON.stringify(upstream)).not.toContain("cache_control");
    const recorded = lines(episode, "exchanges").find((l) => l.stage === "upstream_request");
    expect(recorded?.ignored).toEqual(["cache_control at system[0]"]);
  });

  test("JSON turn with Authorization: Bearer", async () => {
    const { episode, post } = await setup();
    const res = await post("/anthropic/v1/messages", turn(false), {
      authorization: `Bearer ${episode.ingressKey}`,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      type: "message",
      role: "assistant",
      model: "ura-qwen",
      stop_reason: "tool_use",
      stop_sequence: null,
    });
    expect(String(body.id)).toStartWith("msg_");
    expect((body.content as { type: string; name: string }[]).map((b) => [b.type, b.name])).toEqual([
      ["tool_use", "mcp__ura__observe"],
    ]);
  });

  test("wrong key → 401 and unknown episode → 404, in the Anthropic envelope, nothing recorded", async () => {
    const { app, episode, post } = await setup();
    const res = await post("/anthropic/v1/messages", turn(true), { "x-api-key": "ura_key_wrong" });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ type: "error", error: { type: "authentication_error" } });
    const missing = await app.request("/e/ep_nothere/anthropic/v1/messages", {
      method: "POST",
      body: "{}",
      headers: { "x-api-key": "k" },
    });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ type: "error", error: { type: "not_found_error" } });
    expect(lines(episode, "exchanges")).toEqual([]);
  });

  test("a server tool is a final 400 naming it; the episode keeps running and nothing went upstream", async () => {
    const { episode, scripted, post } = await setup();
    const res = await post("/anthropic/v1/messages", {
      ...turn(true),
      tools: [...tools, { type: "web_search_20250305", name: "web_search" }],
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("tools[3].type");
    expect(body.error.message).toContain("web_search_20250305");
    expect(scripted.received).toHaveLength(0);
    expect(episode.state).toBe("running");
    expect(lines(episode, "exchanges").find((l) => l.stage === "status")).toMatchObject({
      status: "failed",
    });
  });

  test("a body that is not JSON is a 400", async () => {
    const { post } = await setup();
    const res = await post("/anthropic/v1/messages", "{not json");
    expect(res.status).toBe(400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(body.error.message).toStartWith("request body is not valid JSON");
  });

  test("transient upstream failure (retries spent) → a final 400 at once: the episode is in provider_error", async () => {
    const { episode, scripted, post } = await setup();
    scripted.enqueueFaults([{ kind: "status", status: 503 }]);
    const first = await post("/anthropic/v1/messages", turn(true));
    expect(first.status).toBe(400);
    const firstBody = (await first.json()) as { error: { type: string; message: string } };
    expect(firstBody).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(firstBody.error.message).toContain("HTTP 503");
    expect(firstBody.error.message).toContain("provider_error");
    expect(episode.state).toBe("failed");
    expect(episode.failure?.reason).toBe("provider_error");
    const retry = await post("/anthropic/v1/messages", turn(true));
    expect(retry.status).toBe(400);
    const body = (await retry.json()) as { error: { type: string; message: string } };
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("provider_error");
    expect(scripted.received).toHaveLength(1);
  });

  test("invalid upstream output (undeclared tool) → a final 400 naming the fault, never a tool_use", async () => {
    const { episode, scripted, post } = await setup();
    scripted.enqueueFaults([{ kind: "undeclared_tool" }]);
    const res = await post("/anthropic/v1/messages", turn(true));
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect(text).toContain("provider_error");
    expect(text).not.toContain("tool_use");
    expect(lines(episode, "ledger").filter((e) => e.type === "registered")).toEqual([]);
  });
});

describe("POST /v1/messages/count_tokens", () => {
  test("a local final 400: auxiliary, no exchange, no turn, nothing upstream", async () => {
    const { episode, scripted, post } = await setup();
    const res = await post("/anthropic/v1/messages/count_tokens?beta=true", {
      model: "ura-qwen",
      messages: [{ role: "user", content: "x" }],
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toContain("count_tokens");
    expect(episode.counters.auxiliary_responses).toBe(1);
    expect(episode.counters.delivered_exchanges).toBe(0);
    expect(episode.counters.failed_exchanges).toBe(0);
    expect(lines(episode, "auxiliary")).toEqual([
      expect.objectContaining({
        path: `/e/${episode.id}/anthropic/v1/messages/count_tokens?beta=true`,
        status: 400,
        operation: "count_tokens",
      }),
    ]);
    expect(lines(episode, "exchanges")).toEqual([]);
    expect(scripted.received).toHaveLength(0);
    expect(episode.state).toBe("running");
  });

  test("count_tokens still needs the ingress key", async () => {
    const { episode, post } = await setup();
    const res = await post("/anthropic/v1/messages/count_tokens", {}, {});
    expect(res.status).toBe(401);
    expect(episode.counters.auxiliary_responses).toBe(0);
  });
});
