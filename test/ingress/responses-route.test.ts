/**
 * The Responses ingress in process (the whole app of test/support/in-process-sidecar.ts,
 * real pipeline, scripted upstream), one fresh sidecar and episode per test.
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Episode } from "../../src/episodes/episode.ts";
import { records } from "../support/episode-evidence.ts";
import { episodeInProcess, responseEvents as events } from "../support/in-process-sidecar.ts";
import { responseEventTypes } from "../support/responses-kit.ts";

const setup = () => episodeInProcess((key) => ({ authorization: `Bearer ${key}` }));

const robotTools = ["observe", "record", "finish"].map((name) => ({
  type: "function",
  name,
  description: name,
  parameters: { type: "object" },
}));
/** A Codex-shaped turn: the robot tools as the `mcp__ura` namespace, plus Codex's built-in and own namespace. */
const codexTurn = (stream: boolean) => ({
  model: "ura-qwen",
  stream,
  store: false,
  parallel_tool_calls: true,
  tool_choice: "auto",
  reasoning: { summary: "auto" },
  include: ["reasoning.encrypted_content"],
  input: [
    { type: "message", role: "developer", content: [{ type: "input_text", text: "You drive a robot." }] },
    {
      type: "message",
      role: "user",
      content: [{ type: "input_text", text: "Observe, record twice, finish." }],
    },
  ],
  tools: [
    { type: "namespace", name: "mcp__ura", description: "ura", tools: robotTools },
    {
      type: "namespace",
      name: "multi_agent_v1",
      description: "agents",
      tools: [{ type: "function", name: "spawn_agent", parameters: {} }],
    },
    { type: "web_search", external_web_access: false },
  ],
});

const lines = (episode: Episode, file: "ledger" | "exchanges") => records(episode.records.dir, file);

describe("POST /v1/responses", () => {
  test("streamed Codex turn: namespace call back as {namespace, name}, the call id the ledger registered, delivered", async () => {
    const { episode, scripted, post } = await setup();
    const res = await post("/v1/responses", codexTurn(true));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const got = await events(res);
    expect(got.map((e) => e.event)).toEqual(responseEventTypes("function_call"));
    got.forEach((e, i) => {
      expect(e.data).toMatchObject({ type: e.event, sequence_number: i });
    });
    const item = got[5]?.data.item as { call_id: string; namespace: string; name: string; status: string };
    expect(item).toMatchObject({
      type: "function_call",
      namespace: "mcp__ura",
      name: "observe",
      status: "completed",
    });
    const registered = lines(episode, "ledger").filter((e) => e.type === "registered");
    expect(
      ((registered[0]?.calls ?? []) as { id: string; tool: string }[]).map((c) => [c.id, c.tool]),
    ).toEqual([[item.call_id, "observe"]]);
    expect(lines(episode, "ledger").some((e) => e.type === "delivered")).toBe(true);
    expect(got.at(-1)?.data.response).toMatchObject({
      status: "completed",
      usage: { input_tokens: expect.any(Number), output_tokens: 12 },
    });
    // Upstream saw the flattened robot tools only; the drops are recorded.
    const upstream = scripted.received[0]?.body as {
      tools: { function: { name: string } }[];
      messages: { role: string }[];
    };
    expect(upstream.tools.map((t) => t.function.name)).toEqual([
      "mcp__ura__observe",
      "mcp__ura__record",
      "mcp__ura__finish",
    ]);
    expect(upstream.messages.map((m) => m.role)).toEqual(["system", "user"]);
    const recorded = lines(episode, "exchanges").find((l) => l.stage === "upstream_request");
    expect(recorded?.ignored).toEqual([
      "tools[1]: namespace multi_agent_v1 (spawn_agent) not offered: only MCP server namespaces (mcp__*) are",
      "tools[2]: built-in tool web_search not offered (Qwen cannot provide it)",
      "reasoning (Qwen runs non-thinking)",
      "include (no reasoning or logprobs are produced)",
    ]);
  });

  test("JSON turn: one response object with every field", async () => {
    const { post } = await setup();
    const res = await post("/v1/responses", { ...codexTurn(false), stream: undefined });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      object: "response",
      status: "completed",
      previous_response_id: null,
      error: null,
      model: expect.any(String),
    });
    expect(String(body.id)).toStartWith("resp_");
    expect(body.output).toEqual([
      expect.objectContaining({ type: "function_call", namespace: "mcp__ura", name: "observe" }),
    ]);
  });

  test("recorded OpenCode tool-image request: the PNG reaches upstream as WebP in a user message after the tool message", async () => {
    const { scripted, post } = await setup();
    const body = JSON.parse(
      readFileSync(
        resolve(import.meta.dir, "../../fixtures/responses/opencode-tool-image/client-request.json"),
        "utf8",
      ),
    );
    const res = await post("/v1/responses", body);
    expect(res.status).toBe(200);
    const got = await events(res);
    expect(got.at(-1)?.event).toBe("response.completed");
    const upstream = scripted.received[0]?.body as { messages: { role: string; content: unknown }[] };
    const messages = upstream.messages;
    expect(messages.at(-2)?.role).toBe("tool");
    expect(messages.at(-1)?.role).toBe("user");
    expect(JSON.stringify(messages.at(-1))).toContain("data:image/webp;base64,");
    expect(JSON.stringify(messages)).not.toContain("data:image/png");
  });

  test("wrong key → 401 and unknown episode → 404, in the OpenAI envelope, nothing recorded", async () => {
    const { app, episode, post } = await setup();
    const res = await post("/v1/responses", codexTurn(true), { authorization: "Bearer wrong" });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({
      error: { type: "authentication_error", code: "authentication", param: null },
    });
    const missing = await app.request("/e/ep_nothere/v1/responses", {
      method: "POST",
      body: "{}",
      headers: { authorization: "Bearer k" },
    });
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "not_found" } });
    expect(lines(episode, "exchanges")).toEqual([]);
  });

  test("an unknown previous_response_id → 404 previous_response_not_found naming the field; nothing upstream", async () => {
    const { episode, scripted, post } = await setup();
    const res = await post("/v1/responses", { ...codexTurn(true), previous_response_id: "resp_1" });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({
      error: {
        type: "invalid_request_error",
        param: "previous_response_id",
        code: "previous_response_not_found",
      },
    });
    expect(scripted.received).toHaveLength(0);
    expect(episode.state).toBe("running");
  });

  test("/responses/compact → a final 400 at once, recorded as an auxiliary response; nothing upstream", async () => {
    const { episode, scripted, post } = await setup();
    const res = await post("/v1/responses/compact", codexTurn(false));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: { type: "invalid_request_error", code: "unsupported_endpoint" },
    });
    expect(scripted.received).toHaveLength(0);
    expect(episode.state).toBe("running");
    expect(records(episode.records.dir, "auxiliary")).toMatchObject([{ operation: "compact", status: 400 }]);
  });

  test("a body that is not JSON → 400", async () => {
    const { post } = await setup();
    const res = await post("/v1/responses", "{nope");
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { type: "invalid_request_error", param: "body" } });
  });

  test("transient upstream failure (retries spent) → a final 400 at once: the episode is in provider_error, a retry could not succeed", async () => {
    const { episode, scripted, post } = await setup();
    scripted.enqueueFaults([{ kind: "status", status: 503 }]);
    const first = await post("/v1/responses", codexTurn(true));
    expect(first.status).toBe(400);
    expect(first.headers.get("content-type")).toContain("application/json");
    const body = (await first.json()) as { error: { type: string; code: string; message: string } };
    expect(body).toMatchObject({ error: { type: "invalid_request_error", code: "upstream_transient" } });
    expect(body.error.message).toContain("provider_error");
    expect(episode.failure?.reason).toBe("provider_error");
    expect(lines(episode, "exchanges").find((l) => l.stage === "status")).toMatchObject({
      status: "failed",
      error: { kind: "upstream_transient", http_status: 400 },
    });
    const retry = await post("/v1/responses", codexTurn(true));
    expect(retry.status).toBe(400);
    expect(((await retry.json()) as { error: { message: string } }).error.message).toContain(
      "provider_error",
    );
    expect(scripted.received).toHaveLength(1);
  });

  test("upstream rejects the request (4xx) → final 400", async () => {
    const { post, scripted } = await setup();
    scripted.enqueueFaults([{ kind: "thinking_400" }]);
    const res = await post("/v1/responses", codexTurn(true));
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      error: { type: "invalid_request_error", code: "upstream_rejected" },
    });
  });

  test("invalid upstream output (undeclared tool) → a final 400 naming the fault, never a function_call", async () => {
    const { episode, scripted, post } = await setup();
    scripted.enqueueFaults([{ kind: "undeclared_tool" }]);
    const res = await post("/v1/responses", codexTurn(true));
    expect(res.status).toBe(400);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({
      error: { type: "invalid_request_error", code: "upstream_invalid" },
    });
    expect(text).toContain("provider_error");
    expect(text).not.toContain("function_call");
    expect(lines(episode, "ledger").filter((e) => e.type === "registered")).toEqual([]);
  });
});
