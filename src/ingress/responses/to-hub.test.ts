import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { hubToolResult } from "../../../test/support/hub-kit.ts";
import {
  createRepeatedMembers,
  jsonBodyOf,
  parseJsonBody,
  type RepeatedMembers,
} from "../../body/parse-json-body.ts";
import type { HubRequest } from "../../hub/schema.ts";
import { stringifyReusingMembers } from "../../lib/frozen-json.ts";
import { sidecarErrorOf } from "../../lib/sidecar-error-of.ts";
import { buildChatRequest } from "../../upstream/build-chat-request.ts";
import { createResponseStore } from "./stored-responses.ts";
import { toHub } from "./to-hub.ts";

function translate(body: unknown): HubRequest {
  return toHub(jsonBodyOf(body), {
    createdAt: 0,
    now: () => 0,
    newResponseId: () => "resp_test",
    store: createResponseStore,
  }).hub;
}

const errorOf = sidecarErrorOf;

const minimal = { model: "ura-qwen", input: "hi" };

describe("input items", () => {
  test("instructions come first; developer → system; assistant text and its calls form one turn", () => {
    const hub = translate({
      model: "m",
      instructions: "be brief",
      input: [
        { role: "developer", content: "dev note" },
        { role: "user", content: [{ type: "input_text", text: "go" }] },
        { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "opaque" },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "calling" }] },
        { type: "function_call", call_id: "c1", name: "a", arguments: "{}" },
        { type: "function_call", call_id: "c2", namespace: "mcp__ura", name: "observe", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "one" },
        { type: "function_call_output", call_id: "c2", output: [{ type: "input_text", text: "two" }] },
      ],
    });
    expect(hub.messages).toEqual([
      { role: "system", content: [{ type: "text", text: "be brief" }] },
      { role: "system", content: [{ type: "text", text: "dev note" }] },
      { role: "user", content: [{ type: "text", text: "go" }] },
      {
        role: "assistant",
        text: "calling",
        toolCalls: [
          { id: "c1", name: "a", arguments: "{}", source: "input[4]" },
          { id: "c2", name: "mcp__ura__observe", arguments: "{}", source: "input[5]" },
        ],
      },
      hubToolResult("c1", "a", "one", "input[6]"),
      hubToolResult("c2", "mcp__ura__observe", "two", "input[7]"),
    ]);
    expect(hub.ignored).toEqual(["1 reasoning item(s) in input (Qwen runs non-thinking)"]);
  });

  test("a user image data URL becomes a hub image part", () => {
    const hub = translate({
      model: "m",
      input: [
        { role: "user", content: [{ type: "input_image", image_url: "data:image/webp;base64,UklGRg==" }] },
      ],
    });
    expect(hub.messages[0]).toEqual({
      role: "user",
      content: [
        { type: "image", mediaType: "image/webp", data: "UklGRg==", source: "input[0].content[0].image_url" },
      ],
    });
  });

  test("a string input is one user message", () => {
    expect(translate(minimal).messages).toEqual([{ role: "user", content: [{ type: "text", text: "hi" }] }]);
  });

  test("options: forwarded ones reach the hub; json_schema text format becomes a response format", () => {
    const hub = translate({
      ...minimal,
      temperature: 0.2,
      top_p: 0.9,
      max_output_tokens: 50,
      parallel_tool_calls: false,
      store: false,
      text: { format: { type: "json_schema", name: "x", schema: { type: "object" } } },
    });
    expect(hub).toMatchObject({ temperature: 0.2, topP: 0.9, maxOutputTokens: 50, parallelToolCalls: false });
    expect(hub.responseFormat).toEqual({ type: "json_schema", schema: { type: "object" } });
    expect(hub.ignored).toEqual([]);
  });

  test("a forced function tool_choice is kept, flattened when namespaced", () => {
    const hub = translate({
      ...minimal,
      tools: [
        {
          type: "namespace",
          name: "mcp__ura",
          description: "",
          tools: [{ type: "function", name: "observe", parameters: {} }],
        },
      ],
      tool_choice: { type: "function", namespace: "mcp__ura", name: "observe" },
    });
    expect(hub.toolChoice).toEqual({ name: "mcp__ura__observe" });
  });
});

describe("refused with a 400 naming the field", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["background", { ...minimal, background: true }, "background"],
    ["conversation", { ...minimal, conversation: "conv_1" }, "conversation"],
    ["unknown top-level field", { ...minimal, frobnicate: 1 }, "frobnicate"],
    [
      "forced tool that is not offered",
      { ...minimal, tool_choice: { type: "function", name: "nope" } },
      "tool_choice",
    ],
    [
      "forced tool that was dropped",
      {
        ...minimal,
        tools: [{ type: "web_search" }, { type: "function", name: "f" }],
        tool_choice: { type: "web_search" },
      },
      "tool_choice",
    ],
    ["required with no tools", { ...minimal, tool_choice: "required" }, "tool_choice"],
    ["unknown tool type", { ...minimal, tools: [{ type: "teleport" }] }, "tools[0].type"],
    ["function tool without a name", { ...minimal, tools: [{ type: "function" }] }, "tools[0].name"],
    [
      "duplicate tool name",
      {
        ...minimal,
        tools: [
          { type: "function", name: "f" },
          { type: "function", name: "f" },
        ],
      },
      "tools[1].name",
    ],
    [
      "unknown content part",
      { ...minimal, input: [{ role: "user", content: [{ type: "input_file", file_id: "f" }] }] },
      "input[0].content[0].type",
    ],
    ["unknown item type", { ...minimal, input: [{ type: "web_search_call", id: "x" }] }, "input[0].type"],
    [
      "image by URL",
      {
        ...minimal,
        input: [{ role: "user", content: [{ type: "input_image", image_url: "https://example.com/a.png" }] }],
      },
      "input[0].content[0].image_url",
    ],
    [
      "output without its call",
      { ...minimal, input: [{ type: "function_call_output", call_id: "x", output: "r" }] },
      "input[0].call_id",
    ],
    [
      "image in a system message",
      {
        ...minimal,
        input: [
          { role: "system", content: [{ type: "input_image", image_url: "data:image/png;base64,AA==" }] },
        ],
      },
      "input[0].content",
    ],
    ["missing model", { input: "hi" }, "model"],
  ];
  for (const [name, body, param] of cases) {
    test(name, () => {
      const error = errorOf(() => translate(body));
      expect(error.kind).toBe("invalid_request");
      expect(error.status).toBe(400);
      expect(error.param).toBe(param);
      expect(error.message).toStartWith(`${param}:`);
    });
  }

  test("a previous_response_id this episode never delivered: 404 naming the field, before any translation", () => {
    const error = errorOf(() => translate({ ...minimal, previous_response_id: "resp_1" }));
    expect(error.kind).toBe("not_found");
    expect(error.status).toBe(404);
    expect(error.param).toBe("previous_response_id");
    expect(error.message).toStartWith("previous_response_id:");
  });
});

describe("a tool list resent unchanged (Codex's, every turn)", () => {
  const request = JSON.parse(
    readFileSync(
      resolve(import.meta.dir, "../../../fixtures/responses/codex-namespace-turn/client-request.json"),
      "utf8",
    ),
  ) as { tools: unknown[]; input: unknown[] } & Record<string, unknown>;
  const target = { model: "ura-qwen", imageInput: true, parallelToolCalls: true };
  const ctx = { createdAt: 0, now: () => 0, newResponseId: () => "resp_test", store: createResponseStore };
  const translateText = (text: string, repeated?: RepeatedMembers) =>
    toHub(parseJsonBody(text, repeated), ctx);

  test("each later turn translates, notes what it drops and serialises exactly as a fresh request", () => {
    const repeated = createRepeatedMembers(["tools"]);
    const first = translateText(JSON.stringify(request), repeated).hub;
    const laterText = JSON.stringify({
      ...request,
      input: [...request.input, { role: "user", content: "again" }],
    });
    const later = translateText(laterText, repeated);
    const fresh = translateText(laterText);
    expect(later.hub).toEqual(fresh.hub);
    expect(later.hub.ignored.length).toBeGreaterThan(0);
    expect(later.hub.tools).toBe(first.tools);
    const response = {
      id: "chatcmpl-1",
      model: "ura-qwen",
      text: "ok",
      toolCalls: [],
      finishReason: "stop" as const,
      usage: { inputTokens: 1, outputTokens: 1 },
    };
    expect(later.render(response)).toEqual(fresh.render(response));
    const chat = buildChatRequest(later.hub, target);
    expect(stringifyReusingMembers(chat)).toBe(JSON.stringify(buildChatRequest(fresh.hub, target)));
  });

  test("a bad field beside the repeated tools, or a bad tool in a changed list, is named as in a fresh request", () => {
    const repeated = createRepeatedMembers(["tools"]);
    translateText(JSON.stringify(request), repeated);
    for (const body of [
      { ...request, unknown_field: 1 },
      { ...request, input: [{ type: "function_call_output", call_id: "nope", output: "x" }] },
      { ...request, tools: [...request.tools, { type: "function", name: 7 }] },
      { ...request, tools: [...request.tools, { type: "computer_use_preview_2099" }] },
    ]) {
      const text = JSON.stringify(body);
      const reused = errorOf(() => translateText(text, repeated));
      const fresh = errorOf(() => translateText(text));
      expect({ param: reused.param, message: reused.message }).toEqual({
        param: fresh.param,
        message: fresh.message,
      });
    }
  });
});
