import { describe, expect, test } from "bun:test";
import { hubRequest, hubResponse } from "../../../test/support/hub-kit.ts";
import { messagesTurnEvents } from "../../../test/support/messages-kit.ts";
import type { HubResponse } from "../../hub/schema.ts";
import { readSse } from "../../sse/read-sse.ts";
import { renderStream, streamEvents } from "./stream.ts";

const request = hubRequest();
const base = hubResponse({ id: "chatcmpl-42", usage: { inputTokens: 120, outputTokens: 7 } });

function typesOf(response: HubResponse): string[] {
  return streamEvents(response, request).map((e) => e.type);
}

describe("Messages SSE", () => {
  test("text then two tool calls: exact event sequence, a stop for every block", () => {
    const response: HubResponse = {
      ...base,
      text: "Recording twice.",
      finishReason: "tool_calls",
      toolCalls: [
        { id: "call_1", name: "mcp__ura__record", arguments: '{"nonce":"n"}' },
        { id: "call_2", name: "mcp__ura__record", arguments: '{"nonce":"n"}' },
      ],
    };
    expect(typesOf(response)).toEqual(messagesTurnEvents(3));
    const events = streamEvents(response, request);
    expect(events[0]).toEqual({
      type: "message_start",
      message: {
        id: "msg_chatcmpl-42",
        type: "message",
        role: "assistant",
        model: "ura-qwen",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: 120,
          output_tokens: 0,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    });
    expect(events.slice(1, 4)).toEqual([
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Recording twice." } },
      { type: "content_block_stop", index: 0 },
    ]);
    expect(events.slice(4, 7)).toEqual([
      {
        type: "content_block_start",
        index: 1,
        content_block: { type: "tool_use", id: "call_1", name: "mcp__ura__record", input: {} },
      },
      {
        type: "content_block_delta",
        index: 1,
        delta: { type: "input_json_delta", partial_json: '{"nonce":"n"}' },
      },
      { type: "content_block_stop", index: 1 },
    ]);
    expect(events[7]).toMatchObject({ index: 2, content_block: { id: "call_2" } });
    expect(events.at(-2)).toEqual({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { input_tokens: 120, output_tokens: 7 },
    });
  });

  test("text only ends the turn", () => {
    expect(typesOf({ ...base, text: "done" })).toEqual(messagesTurnEvents(1));
    expect(streamEvents({ ...base, text: "done" }, request).at(-2)).toMatchObject({
      delta: { stop_reason: "end_turn" },
    });
  });

  test("max tokens and empty answers", () => {
    expect(streamEvents({ ...base, text: "cut", finishReason: "length" }, request).at(-2)).toMatchObject({
      delta: { stop_reason: "max_tokens" },
    });
    expect(typesOf(base)).toEqual(messagesTurnEvents(0));
  });

  test("frames carry event: lines, are whole, and parse back to the same events", async () => {
    const response: HubResponse = {
      ...base,
      text: "hi",
      toolCalls: [{ id: "call_9", name: "t", arguments: "" }],
      finishReason: "tool_calls",
    };
    const frames = renderStream(response, request);
    expect(frames[0]?.startsWith("event: message_start\ndata: {")).toBe(true);
    for (const frame of frames) expect(frame.endsWith("\n\n")).toBe(true);
    expect(frames.at(-1)).toBe('event: message_stop\ndata: {"type":"message_stop"}\n\n');
    const body = new Response(frames.join("")).body as ReadableStream<Uint8Array>;
    const parsed: { event: string | undefined; data: unknown }[] = [];
    for await (const e of readSse(body)) parsed.push({ event: e.event, data: JSON.parse(e.data) });
    const events = streamEvents(response, request);
    expect(parsed).toEqual(events.map((e) => ({ event: e.type, data: e })));
    // Empty arguments are an empty input object.
    expect(events[5]).toEqual({
      type: "content_block_delta",
      index: 1,
      delta: { type: "input_json_delta", partial_json: "{}" },
    });
  });

  test("exact bytes of a text answer", () => {
    const frames = renderStream({ ...base, text: "Hi" }, request);
    expect(frames.join("")).toBe(
      [
        'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_chatcmpl-42","type":"message","role":"assistant","model":"ura-qwen","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}\n\n',
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":120,"output_tokens":7}}\n\n',
        'event: message_stop\ndata: {"type":"message_stop"}\n\n',
      ].join(""),
    );
  });
});
