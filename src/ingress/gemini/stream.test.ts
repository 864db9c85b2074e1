import { describe, expect, test } from "bun:test";
import { hubResponse } from "../../../test/support/hub-kit.ts";
import type { HubResponse } from "../../hub/schema.ts";
import { SidecarError } from "../../lib/errors.ts";
import { readSse } from "../../sse/read-sse.ts";
import { fromHub, mapFinishReason } from "./from-hub.ts";
import { renderStream, streamEvents } from "./stream.ts";

const base = hubResponse({ usage: { inputTokens: 120, outputTokens: 7 } });
const twoRecords: HubResponse = {
  ...base,
  finishReason: "tool_calls",
  toolCalls: [
    { id: "call_a", name: "mcp_ura_record", arguments: '{"nonce":"n1"}' },
    { id: "call_b", name: "mcp_ura_record", arguments: '{"nonce":"n1"}' },
  ],
};

describe("SSE", () => {
  test("a text answer is one data-only frame with finishReason, usage, modelVersion and responseId (exact bytes)", () => {
    expect(renderStream({ ...base, text: "The cube is red." })).toEqual([
      `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"The cube is red."}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":7,"totalTokenCount":127},"modelVersion":"qwen3-vl-plus","responseId":"chatcmpl-1"}\n\n`,
    ]);
  });

  test("one frame per functionCall, Qwen's ids as functionCall.id, finishReason and usage only on the last", () => {
    const frames = renderStream({ ...twoRecords, text: "Recording." });
    expect(frames).toHaveLength(3);
    for (const frame of frames) {
      expect(frame.startsWith("data: ")).toBe(true);
      expect(frame.endsWith("\n\n")).toBe(true);
      expect(frame).not.toContain("event:");
    }
    const chunks = streamEvents({ ...twoRecords, text: "Recording." });
    expect(chunks.map((c) => c.candidates[0]?.content.parts)).toEqual([
      [{ text: "Recording." }],
      [{ functionCall: { id: "call_a", name: "mcp_ura_record", args: { nonce: "n1" } } }],
      [{ functionCall: { id: "call_b", name: "mcp_ura_record", args: { nonce: "n1" } } }],
    ]);
    expect(chunks.map((c) => c.candidates[0]?.finishReason)).toEqual([undefined, undefined, "STOP"]);
    expect(chunks.map((c) => c.usageMetadata === undefined)).toEqual([true, true, false]);
    expect(chunks.every((c) => c.responseId === "chatcmpl-1" && c.modelVersion === "qwen3-vl-plus")).toBe(
      true,
    );
  });

  test("the frames parse back with a standard SSE reader into the same chunks", async () => {
    const body = renderStream(twoRecords).join("");
    const events = [];
    for await (const event of readSse(new Response(body).body as ReadableStream<Uint8Array>))
      events.push(JSON.parse(event.data));
    expect(events).toEqual(JSON.parse(JSON.stringify(streamEvents(twoRecords))));
  });

  test("an empty answer still ends with one chunk carrying the finish reason", () => {
    const chunks = streamEvents({ ...base, finishReason: "length" });
    expect(chunks).toHaveLength(1);
    expect(chunks[0]?.candidates[0]).toEqual({
      content: { role: "model", parts: [] },
      finishReason: "MAX_TOKENS",
      index: 0,
    });
  });
});

describe("JSON", () => {
  test("all parts in one candidate", () => {
    expect(fromHub({ ...twoRecords, text: "Recording." })).toEqual({
      candidates: [
        {
          content: {
            role: "model",
            parts: [
              { text: "Recording." },
              { functionCall: { id: "call_a", name: "mcp_ura_record", args: { nonce: "n1" } } },
              { functionCall: { id: "call_b", name: "mcp_ura_record", args: { nonce: "n1" } } },
            ],
          },
          finishReason: "STOP",
          index: 0,
        },
      ],
      usageMetadata: { promptTokenCount: 120, candidatesTokenCount: 7, totalTokenCount: 127 },
      modelVersion: "qwen3-vl-plus",
      responseId: "chatcmpl-1",
    });
  });

  test("arguments that are not a JSON object are never delivered", () => {
    expect(() => fromHub({ ...base, toolCalls: [{ id: "c", name: "a", arguments: "[1]" }] })).toThrow(
      SidecarError,
    );
  });

  test.each([
    ["stop", "STOP"],
    ["tool_calls", "STOP"],
    ["length", "MAX_TOKENS"],
    ["content_filter", "SAFETY"],
  ] as const)("finish reason %s → %s", (hub, gemini) => {
    expect(mapFinishReason(hub)).toBe(gemini);
  });
});
