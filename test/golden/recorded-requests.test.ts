/**
 * Recorded client requests (fixtures/<protocol>/<case>/client-request.json) of
 * OpenCode and Codex (Responses), Gemini CLI and Claude Code (Messages): each
 * translates to the hub request the assertions describe and, built for Qwen, to the
 * reviewed golden upstream request beside it (upstream-request.json).
 */
import { describe, expect, test } from "bun:test";
import type { HubRequest } from "../../src/hub/schema.ts";
import {
  expectImageAfterToolMessage,
  expectToolTurn,
  fixtureCases,
  toGoldenUpstream,
  translateFixture,
} from "../support/fixture-cases.ts";

const responses = fixtureCases("responses");
const gemini = fixtureCases("gemini");
const messages = fixtureCases("messages");

/**
 * The last turn of a recorded tool-image request: the assistant's one call, an
 * observe of the front camera (id, model-visible name, the client field it came
 * from), answered by a tool message with parts of these types.
 */
function expectFrontCameraTurn(
  hub: HubRequest,
  [id, name, source]: [string, string, string],
  partTypes: ("text" | "image")[],
): void {
  expectToolTurn(hub, { id, name, arguments: '{"camera":"front"}', source }, partTypes);
}

/** A recorded Claude Code request and the anthropic-beta flags it was sent with. */
function claudeCase(name: string): { body: Record<string, unknown>; betaFlags: string[] } {
  return {
    body: messages.clientRequest(name),
    betaFlags: String(messages.meta(name).headers["anthropic-beta"]).split(","),
  };
}

describe("recorded OpenCode requests", () => {
  test("agent turn: string system message, ura_observe function tool, recorded cache key", () => {
    const body = responses.clientRequest("opencode-agent-turn");
    const hub = translateFixture("responses", body);
    expect(hub.model).toBe("ura-qwen");
    expect(hub.messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(hub.messages[0]).toEqual({
      role: "system",
      content: [{ type: "text", text: (body.input as { content: string }[])[0]?.content ?? "" }],
    });
    expect(hub.tools.map((t) => t.name)).toEqual(["ura_observe"]);
    expect(hub.toolChoice).toBe("auto");
    expect(hub.maxOutputTokens).toBe(8192);
    expect(hub.ignored).toEqual(["prompt_cache_key (provider cache hint)"]);
    responses.expectGolden("opencode-agent-turn", hub);
  });

  test("title request: no tools, no tool_choice upstream", () => {
    const hub = translateFixture("responses", responses.clientRequest("opencode-title"));
    expect(hub.tools).toEqual([]);
    expect(hub.toolChoice).toBeUndefined();
    expect(hub.messages.map((m) => m.role)).toEqual(["system", "user", "user"]);
    const chat = toGoldenUpstream(hub);
    expect(chat.tools).toBeUndefined();
    expect(chat.tool_choice).toBeUndefined();
    responses.expectGolden("opencode-title", hub);
  });

  test("tool image: function_call_output parts become a tool message with an image, shown to Qwen in the next user message", () => {
    const hub = translateFixture("responses", responses.clientRequest("opencode-tool-image"));
    expectFrontCameraTurn(hub, ["call_resp_6", "ura_observe", "input[2]"], ["text", "image"]);
    const tool = hub.messages.at(-1);
    expect(tool?.role === "tool" && tool.content[1]).toMatchObject({ type: "image", mediaType: "image/png" });
    expectImageAfterToolMessage(hub, "call_resp_6");
    responses.expectGolden("opencode-tool-image", hub);
  });
});

describe("recorded Codex requests", () => {
  test("namespace turn: mcp__ura flattened, multi_agent_v1 and web_search dropped and recorded", () => {
    const body = responses.clientRequest("codex-namespace-turn");
    const hub = translateFixture("responses", body);
    const names = hub.tools.map((t) => t.name);
    expect(names).toContain("mcp__ura__observe");
    expect(names).toContain("exec_command");
    expect(names.some((n) => n.includes("spawn_agent"))).toBe(false);
    expect(names.some((n) => n.includes("web_search"))).toBe(false);
    const observe = hub.tools.find((t) => t.name === "mcp__ura__observe");
    expect(observe?.parameters).toMatchObject({ type: "object" });
    expect(hub.ignored).toEqual([
      "tools[7]: namespace multi_agent_v1 (close_agent, resume_agent, send_input, spawn_agent, wait_agent) not offered: only MCP server namespaces (mcp__*) are",
      "tools[12]: built-in tool web_search not offered (Qwen cannot provide it)",
      "reasoning (Qwen runs non-thinking)",
      "include (no reasoning or logprobs are produced)",
      "prompt_cache_key (provider cache hint)",
      "client_metadata (client bookkeeping)",
    ]);
    expect(hub.messages.map((m) => m.role)).toEqual(["system", "system", "user", "user"]);
    expect(hub.parallelToolCalls).toBe(true);
    responses.expectGolden("codex-namespace-turn", hub);
  });

  test("tool image: the namespace call is flattened in history; text and image parts reach the tool message", () => {
    const hub = translateFixture("responses", responses.clientRequest("codex-tool-image"));
    expectFrontCameraTurn(hub, ["call_resp_5", "mcp__ura__observe", "input[4]"], ["text", "text", "image"]);
    expect(hub.ignored).toContain(`input_image.detail "high" (Qwen has no detail setting)`);
    expectImageAfterToolMessage(hub, "call_resp_5");
    responses.expectGolden("codex-tool-image", hub);
  });
});

describe("recorded Gemini CLI requests", () => {
  test("first turn: system instruction, two user text parts, every tool without wait_for_previous", () => {
    const body = gemini.clientRequest("first-turn");
    const hub = translateFixture("gemini", body);
    expect(hub.model).toBe("ura-qwen");
    expect(hub.messages.map((m) => m.role)).toEqual(["system", "user"]);
    const system = body.systemInstruction as { parts: { text: string }[] };
    expect(hub.messages[0]).toEqual({
      role: "system",
      content: [{ type: "text", text: system.parts[0]?.text ?? "" }],
    });
    const declarations =
      (
        body.tools as {
          functionDeclarations: { name: string; parametersJsonSchema: { properties: object } }[];
        }[]
      )[0]?.functionDeclarations ?? [];
    expect(hub.tools.map((t) => t.name)).toEqual(declarations.map((d) => d.name));
    expect(hub.tools.map((t) => t.name)).toContain("mcp_ura_observe");
    for (const tool of hub.tools) expect(JSON.stringify(tool.parameters)).not.toContain("wait_for_previous");
    // The rest of each declaration is forwarded byte for byte.
    const observe = declarations.find((d) => d.name === "mcp_ura_observe");
    if (!observe) throw new Error("the fixture declares mcp_ura_observe");
    const { wait_for_previous: _, ...rest } = observe.parametersJsonSchema.properties as Record<
      string,
      unknown
    >;
    expect(JSON.stringify(hub.tools.find((t) => t.name === "mcp_ura_observe")?.parameters)).toBe(
      JSON.stringify({ ...observe.parametersJsonSchema, properties: rest }),
    );
    expect(hub).toMatchObject({ temperature: 1, topP: 0.95, topK: 64 });
    expect(hub.toolChoice).toBeUndefined();
    expect(hub.ignored).toEqual([
      "wait_for_previous in tool parameters (Gemini CLI scheduling hint, not offered to the model)",
      "generationConfig.thinkingConfig (upstream runs with thinking disabled)",
    ]);
    gemini.expectGolden("first-turn", hub);
  });

  test("functionResponse + sibling inlineData: the image belongs to the tool message of that call", () => {
    const body = gemini.clientRequest("function-response-image");
    const hub = translateFixture("gemini", body);
    expect(hub.messages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"]);
    expectFrontCameraTurn(
      hub,
      ["call_gem_5", "mcp_ura_observe", "contents[1].parts[0].functionCall"],
      ["text", "image"],
    );
    const tool = hub.messages[3];
    if (tool?.role !== "tool") throw new Error("expected a tool message");
    expect(tool.content[0]).toEqual({
      type: "text",
      text: "<untrusted_context>\nobservation nonce=7ad6c3fe: a red square is in view.\n</untrusted_context>\n[Tool 'observe' provided the following image data with mime-type: image/png]",
    });
    expect(tool.content[1]).toMatchObject({ type: "image", mediaType: "image/png" });
    expect(hub.ignored[0]).toBe('thoughtSignature "skip_thought_signature_validator" (dropped)');
    // Upstream: the image travels in a user message right after the tool message, labelled with the call.
    expectImageAfterToolMessage(hub, "call_gem_5");
    expect(JSON.stringify(toGoldenUpstream(hub))).not.toContain("thoughtSignature");
    gemini.expectGolden("function-response-image", hub);
  });

  test("the countTokens body is a bare contents list (the route answers it locally, never translates it)", () => {
    const body = gemini.clientRequest("count-tokens");
    expect(Object.keys(body)).toEqual(["contents"]);
    // Its functionResponse id differs from the one the real turn used: it must never reach the ledger or upstream.
    expect(JSON.stringify(body)).toContain("mcp_ura_observe__call_gem_5");
  });
});

describe("recorded Claude Code requests", () => {
  test("main turn: system blocks with cache_control, tools, mid-conversation system message", () => {
    const { body, betaFlags } = claudeCase("main-turn");
    const hub = translateFixture("messages", body, { "anthropic-beta": betaFlags.join(",") });
    const system = body.system as { text: string }[];
    // Its cache_control marks become hints for the explicit cache's markers (docs/prompt-cache.md).
    expect(hub.messages[0]).toEqual({
      role: "system",
      content: system.map((b) => ({ type: "text", text: b.text })),
      cacheHint: true,
    });
    expect(hub.messages.map((m) => m.role)).toEqual(["system", "user", "system"]);
    expect(hub.messages.map((m) => ("cacheHint" in m ? m.cacheHint : undefined))).toEqual([
      true,
      true,
      undefined,
    ]);
    expect(hub.tools.map((t) => t.name)).toContain("mcp__ura__observe");
    expect(hub.tools).toHaveLength((body.tools as unknown[]).length);
    expect(hub.maxOutputTokens).toBe(32000);
    expect(hub.toolChoice).toBeUndefined();
    expect(hub.responseFormat).toBeUndefined();
    expect(hub.ignored).toEqual([
      "cache_control at system[1], system[2], messages[0].content[1]",
      "thinking (adaptive)",
      "context_management",
      "output_config.effort (high)",
      "metadata.user_id",
      `anthropic-beta: ${betaFlags.join(",")}`,
    ]);
    messages.expectGolden("main-turn", hub);
  });

  test("tool_result image: becomes an image part of the tool message, then a labelled user message upstream", () => {
    const { body, betaFlags } = claudeCase("tool-result-image");
    const hub = translateFixture("messages", body, { "anthropic-beta": betaFlags.join(",") });
    expectFrontCameraTurn(
      hub,
      ["toolu_0006", "mcp__ura__observe", "messages[2].content[0]"],
      ["text", "image"],
    );
    expectImageAfterToolMessage(hub, "toolu_0006");
    messages.expectGolden("tool-result-image", hub);
  });

  test("title request: no tools, structured output forwarded as a json_schema response format", () => {
    const { body, betaFlags } = claudeCase("title");
    const hub = translateFixture("messages", body, { "anthropic-beta": betaFlags.join(",") });
    expect(hub.tools).toEqual([]);
    expect(hub.responseFormat).toEqual({
      type: "json_schema",
      schema: {
        type: "object",
        properties: { title: { type: "string" } },
        required: ["title"],
        additionalProperties: false,
      },
    });
    expect(hub.messages.map((m) => m.role)).toEqual(["system", "user"]);
    messages.expectGolden("title", hub);
  });
});

/**
 * Claude Code 2.1.332 (beside the older pin's cases above): tool search. Its first
 * request declares a `DeferredToolPlaceholder` with `defer_loading`, on every request;
 * with the kit's `alwaysLoad` the robot tool is declared plainly, without it the tool is
 * found through ToolSearch, whose result is a `tool_reference` that loads it.
 */
describe("recorded Claude Code 2.1.332 requests", () => {
  const placeholderNote = (i: number) =>
    `tools[${i}] (DeferredToolPlaceholder): defer_loading, and no tool_reference in the history loads it: not offered upstream`;

  test("main turn (kit: robot tools always loaded): the deferred placeholder is withheld and recorded, the robot tool offered", () => {
    const { body, betaFlags } = claudeCase("claude-2.1.332-main-turn");
    expect(messages.meta("claude-2.1.332-main-turn").version).toBe("2.1.332");
    const hub = translateFixture("messages", body, { "anthropic-beta": betaFlags.join(",") });
    const declared = (body.tools as { name: string; defer_loading?: boolean }[]).map((t) => t.name);
    const placeholder = declared.indexOf("DeferredToolPlaceholder");
    expect(placeholder).toBeGreaterThanOrEqual(0);
    expect(hub.tools.map((t) => t.name)).toEqual(declared.filter((n) => n !== "DeferredToolPlaceholder"));
    expect(hub.tools.map((t) => t.name)).toContain("mcp__ura__observe");
    expect(body).toMatchObject({
      thinking: { type: "adaptive" },
      context_management: { edits: [{ type: "clear_thinking_20251015" }] },
      output_config: { effort: "high" },
    });
    expect(hub.ignored).toEqual([
      "cache_control at system[1], system[2], messages[1].content[0]",
      placeholderNote(placeholder),
      "thinking (adaptive)",
      "context_management",
      "output_config.effort (high)",
      "metadata.user_id",
      `anthropic-beta: ${betaFlags.join(",")}`,
    ]);
    const chat = toGoldenUpstream(hub);
    expect(JSON.stringify(chat)).not.toContain("defer_loading");
    expect(JSON.stringify(chat)).not.toContain("DeferredToolPlaceholder");
    messages.expectGolden("claude-2.1.332-main-turn", hub);
  });

  test("tool_result image: the observe result reaches Qwen as at the older pin", () => {
    const { body, betaFlags } = claudeCase("claude-2.1.332-tool-result-image");
    const hub = translateFixture("messages", body, { "anthropic-beta": betaFlags.join(",") });
    const tool = hub.messages.at(-1);
    expect(tool).toMatchObject({ role: "tool", name: "mcp__ura__observe" });
    expect(tool?.role === "tool" && tool.content.map((p) => p.type)).toEqual(["text", "image", "text"]);
    expectImageAfterToolMessage(hub, tool?.role === "tool" ? tool.toolCallId : "");
    messages.expectGolden("claude-2.1.332-tool-result-image", hub);
  });

  test("without alwaysLoad the first turn declares no robot tool: ToolSearch is offered, the placeholder is not", () => {
    const { body, betaFlags } = claudeCase("claude-2.1.332-deferred-first-turn");
    const hub = translateFixture("messages", body, { "anthropic-beta": betaFlags.join(",") });
    const names = hub.tools.map((t) => t.name);
    expect(names).toContain("ToolSearch");
    expect(names).not.toContain("DeferredToolPlaceholder");
    expect(names).not.toContain("mcp__ura__observe");
    // The robot tool is announced by name, to be loaded through ToolSearch.
    expect(JSON.stringify(hub.messages)).toContain("mcp__ura__observe");
    messages.expectGolden("claude-2.1.332-deferred-first-turn", hub);
  });

  test("a tool_reference loads the deferred robot tool: offered upstream, the reference read as its definition", () => {
    const { body, betaFlags } = claudeCase("claude-2.1.332-tool-search-reference");
    const declared = body.tools as { name: string; defer_loading?: boolean; input_schema: unknown }[];
    expect(declared.find((t) => t.name === "mcp__ura__observe")?.defer_loading).toBe(true);
    const hub = translateFixture("messages", body, { "anthropic-beta": betaFlags.join(",") });
    expect(hub.tools.map((t) => t.name)).toContain("mcp__ura__observe");
    expect(hub.tools.map((t) => t.name)).not.toContain("DeferredToolPlaceholder");
    const result = hub.messages.at(-1);
    expect(result).toMatchObject({ role: "tool", name: "ToolSearch" });
    const text = result?.role === "tool" && result.content[0]?.type === "text" ? result.content[0].text : "";
    const definition = JSON.parse(/<function>(.*)<\/function>/.exec(text)?.[1] ?? "null");
    expect(definition).toEqual({
      description: expect.any(String),
      name: "mcp__ura__observe",
      parameters: declared.find((t) => t.name === "mcp__ura__observe")?.input_schema,
    });
    messages.expectGolden("claude-2.1.332-tool-search-reference", hub);
  });
});
