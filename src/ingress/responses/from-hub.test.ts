import { describe, expect, test } from "bun:test";
import { hubResponse } from "../../../test/support/hub-kit.ts";
import { renderContextFor } from "../../../test/support/responses-kit.ts";
import { fromHub } from "./from-hub.ts";

/** The required fields of the Open Responses ResponseResource (schema/components/schemas/ResponseResource.json). */
const requiredFields = [
  "id",
  "object",
  "created_at",
  "completed_at",
  "status",
  "incomplete_details",
  "model",
  "previous_response_id",
  "instructions",
  "output",
  "error",
  "tools",
  "tool_choice",
  "truncation",
  "parallel_tool_calls",
  "text",
  "top_p",
  "presence_penalty",
  "frequency_penalty",
  "top_logprobs",
  "temperature",
  "reasoning",
  "user",
  "usage",
  "max_output_tokens",
  "max_tool_calls",
  "store",
  "background",
  "service_tier",
  "metadata",
  "safety_identifier",
  "prompt_cache_key",
];

const contextFor = (body: Record<string, unknown>) =>
  renderContextFor(body, { responseId: "resp_x1", createdAt: 100, completedAt: 101 });

const hub = hubResponse({
  toolCalls: [{ id: "call_q", name: "mcp__ura__observe", arguments: '{"camera":"front"}' }],
  finishReason: "tool_calls",
});

describe("response object", () => {
  test("every required field of the published schema is present; unset ones are null", () => {
    const object = fromHub(hub, contextFor({ model: "ura-qwen", input: "x" }));
    expect(Object.keys(object).sort()).toEqual([...requiredFields].sort());
    expect(object).toMatchObject({
      id: "resp_x1",
      object: "response",
      created_at: 100,
      completed_at: 101,
      status: "completed",
      incomplete_details: null,
      previous_response_id: null,
      instructions: null,
      error: null,
      user: null,
      max_output_tokens: null,
      safety_identifier: null,
      prompt_cache_key: null,
      store: true,
      background: false,
    });
  });

  test("a namespaced call goes back as {namespace, name} with the model's call id", () => {
    const ctx = contextFor({
      model: "ura-qwen",
      input: "x",
      tools: [
        { type: "namespace", name: "mcp__ura", tools: [{ type: "function", name: "observe" }] },
        { type: "namespace", name: "multi_agent_v1", tools: [{ type: "function", name: "spawn_agent" }] },
        { type: "web_search" },
      ],
    });
    const object = fromHub(hub, ctx);
    expect(object.output).toEqual([
      {
        type: "function_call",
        id: "fc_x1_0",
        call_id: "call_q",
        namespace: "mcp__ura",
        name: "observe",
        arguments: '{"camera":"front"}',
        status: "completed",
      },
    ]);
    // The schema admits only function tools in `response.tools`: the namespace is echoed as its members.
    expect(object.tools.map((t) => `${t.type}:${t.namespace}:${t.name}`)).toEqual([
      "function:mcp__ura:observe",
    ]);
    expect(object.tools[0]).toMatchObject({ description: null, strict: null });
  });

  test("usage always carries input, output and total tokens with details", () => {
    expect(fromHub(hub, contextFor({ model: "m", input: "x" })).usage).toEqual({
      input_tokens: 7,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 3,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 10,
    });
  });

  test("an empty answer still yields one (empty) message, never an empty output", () => {
    const object = fromHub(
      { ...hub, toolCalls: [], text: null, finishReason: "stop" },
      contextFor({ model: "m", input: "x" }),
    );
    expect(object.output).toEqual([
      {
        type: "message",
        id: "msg_x1",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: "", annotations: [], logprobs: [] }],
      },
    ]);
  });

  test("request settings are echoed", () => {
    const object = fromHub(
      hub,
      contextFor({
        model: "m",
        input: "x",
        instructions: "sys",
        temperature: 0.3,
        max_output_tokens: 9,
        prompt_cache_key: "k",
        tool_choice: "auto",
      }),
    );
    expect(object).toMatchObject({
      instructions: "sys",
      temperature: 0.3,
      max_output_tokens: 9,
      prompt_cache_key: "k",
      tool_choice: "auto",
    });
  });
});
