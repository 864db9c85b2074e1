import { describe, expect, test } from "bun:test";
import { hubRequest, hubResponse } from "../../../test/support/hub-kit.ts";
import { SidecarError } from "../../lib/errors.ts";
import { fromHub } from "./from-hub.ts";

const request = hubRequest({ model: "claude-sonnet-4-5" });
const base = hubResponse({ id: "chatcmpl-7", usage: { inputTokens: 10, outputTokens: 3 } });

describe("fromHub", () => {
  test("text and tool_use blocks, the model's call ids unchanged", () => {
    expect(
      fromHub(
        {
          ...base,
          text: "ok",
          finishReason: "tool_calls",
          toolCalls: [{ id: "call_abc", name: "mcp__ura__observe", arguments: '{"camera":"front"}' }],
        },
        request,
      ),
    ).toEqual({
      id: "msg_chatcmpl-7",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [
        { type: "text", text: "ok" },
        { type: "tool_use", id: "call_abc", name: "mcp__ura__observe", input: { camera: "front" } },
      ],
      stop_reason: "tool_use",
      stop_sequence: null,
      usage: {
        input_tokens: 10,
        output_tokens: 3,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
  });

  test("stop reasons", () => {
    expect(fromHub({ ...base, text: "x" }, request).stop_reason).toBe("end_turn");
    expect(fromHub({ ...base, text: "x", finishReason: "length" }, request).stop_reason).toBe("max_tokens");
    expect(fromHub({ ...base, text: "x", finishReason: "content_filter" }, request).stop_reason).toBe(
      "refusal",
    );
    expect(fromHub({ ...base, text: "x", finishReason: "tool_calls" }, request).stop_reason).toBe("end_turn");
  });

  test("message ids are path-safe and keep an existing msg_ prefix", () => {
    expect(fromHub({ ...base, id: "a b/c" }, request).id).toBe("msg_abc");
    expect(fromHub({ ...base, id: "msg_x" }, request).id).toBe("msg_x");
  });

  test("arguments that are not a JSON object cannot become a tool_use input", () => {
    const bad = { ...base, toolCalls: [{ id: "c", name: "t", arguments: "[1]" }] };
    expect(() => fromHub(bad, request)).toThrow(SidecarError);
  });
});
