import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { hubResponse } from "../../../test/support/hub-kit.ts";
import { renderContextFor, responseEventTypes } from "../../../test/support/responses-kit.ts";
import type { HubResponse } from "../../hub/schema.ts";
import { readSse } from "../../sse/read-sse.ts";
import { renderStream, streamEvents } from "./stream.ts";

const ctx = renderContextFor(
  {
    model: "ura-qwen",
    input: "go",
    stream: true,
    store: false,
    tools: [
      { type: "function", name: "ura_observe", parameters: { type: "object" } },
      {
        type: "namespace",
        name: "mcp__ura",
        description: "robot",
        tools: [{ type: "function", name: "record", parameters: {} }],
      },
      { type: "web_search" },
    ],
  },
  { responseId: "resp_abc", createdAt: 1_700_000_000, completedAt: 1_700_000_001 },
);
const usage = { inputTokens: 12, outputTokens: 5 };
const text = hubResponse({ text: "A red square.", usage });
const calls = hubResponse({
  id: "chatcmpl-2",
  toolCalls: [
    { id: "call_1", name: "mcp__ura__record", arguments: '{"nonce":"n"}' },
    { id: "call_2", name: "ura_observe", arguments: "{}" },
  ],
  finishReason: "tool_calls",
  usage,
});

describe("SSE event sequence", () => {
  test("text: the full sequence in order, numbered from 0", () => {
    const events = streamEvents(text, ctx);
    expect(events.map((e) => e.type)).toEqual(responseEventTypes("message"));
    expect(events.map((e) => e.sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(events[2]).toEqual({
      type: "response.output_item.added",
      sequence_number: 2,
      output_index: 0,
      item: { type: "message", id: "msg_abc", status: "in_progress", role: "assistant", content: [] },
    });
    expect(events[4]).toEqual({
      type: "response.output_text.delta",
      sequence_number: 4,
      item_id: "msg_abc",
      output_index: 0,
      content_index: 0,
      delta: "A red square.",
      logprobs: [],
    });
    expect(events[7]).toMatchObject({
      item: {
        type: "message",
        status: "completed",
        content: [{ type: "output_text", text: "A red square.", annotations: [], logprobs: [] }],
      },
    });
    expect(events[8]).toMatchObject({
      response: {
        id: "resp_abc",
        status: "completed",
        completed_at: 1_700_000_001,
        usage: {
          input_tokens: 12,
          output_tokens: 5,
          total_tokens: 17,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens_details: { reasoning_tokens: 0 },
        },
      },
    });
  });

  test("tool calls: added, arguments delta/done, done with the full item; namespace restored", () => {
    const events = streamEvents(calls, ctx);
    expect(events.map((e) => e.type)).toEqual(responseEventTypes("function_call", "function_call"));
    expect(events[2]).toEqual({
      type: "response.output_item.added",
      sequence_number: 2,
      output_index: 0,
      item: {
        type: "function_call",
        id: "fc_abc_0",
        call_id: "call_1",
        namespace: "mcp__ura",
        name: "record",
        arguments: "",
        status: "in_progress",
      },
    });
    expect(events[3]).toEqual({
      type: "response.function_call_arguments.delta",
      sequence_number: 3,
      item_id: "fc_abc_0",
      output_index: 0,
      delta: '{"nonce":"n"}',
    });
    expect(events[5]).toEqual({
      type: "response.output_item.done",
      sequence_number: 5,
      output_index: 0,
      item: {
        type: "function_call",
        id: "fc_abc_0",
        call_id: "call_1",
        namespace: "mcp__ura",
        name: "record",
        arguments: '{"nonce":"n"}',
        status: "completed",
      },
    });
    expect(events[9]).toMatchObject({
      output_index: 1,
      item: {
        type: "function_call",
        id: "fc_abc_1",
        call_id: "call_2",
        name: "ura_observe",
        status: "completed",
      },
    });
    expect("namespace" in (events[9] as unknown as { item: object }).item).toBe(false);
  });

  test("text and calls together: the message comes first, then the calls", () => {
    const events = streamEvents({ ...calls, text: "Recording." }, ctx);
    const added = events
      .filter((e) => e.type === "response.output_item.added")
      .map((e) => (e.item as { type: string }).type);
    expect(added).toEqual(["message", "function_call", "function_call"]);
  });

  test("truncated by max tokens: response.incomplete with the reason", () => {
    const last = streamEvents({ ...text, finishReason: "length" }, ctx).at(-1);
    expect(last).toMatchObject({
      type: "response.incomplete",
      response: {
        status: "incomplete",
        incomplete_details: { reason: "max_output_tokens" },
        completed_at: null,
      },
    });
  });

  test("every frame is one whole `event:` + `data:` block that parses back to its event", async () => {
    const frames = renderStream(calls, ctx);
    const events = streamEvents(calls, ctx);
    expect(frames).toHaveLength(events.length);
    frames.forEach((frame, i) => {
      expect(frame).toBe(`event: ${events[i]?.type}\ndata: ${JSON.stringify(events[i])}\n\n`);
    });
    const parsed: { event: string | undefined; data: string }[] = [];
    for await (const event of readSse(new Response(frames.join("")).body as ReadableStream<Uint8Array>))
      parsed.push(event);
    expect(parsed.map((e) => e.event)).toEqual(events.map((e) => e.type));
    expect(parsed.map((e) => JSON.parse(e.data).sequence_number)).toEqual(events.map((_, i) => i));
  });
});

describe("SSE invariants (property)", () => {
  const callArb = fc.record({
    id: fc.string({ minLength: 1, maxLength: 12 }),
    name: fc.constantFrom("ura_observe", "mcp__ura__record", "exec_command"),
    arguments: fc.json(),
  });
  const responseArb: fc.Arbitrary<HubResponse> = fc.record({
    id: fc.string(),
    model: fc.string({ minLength: 1 }),
    text: fc.option(fc.string(), { nil: null }),
    toolCalls: fc.array(callArb, { maxLength: 4 }),
    finishReason: fc.constantFrom("stop", "length", "tool_calls", "content_filter"),
    usage: fc.record({ inputTokens: fc.nat(), outputTokens: fc.nat() }),
  });

  test("numbered 0..n-1; each item added before done; deltas add up; done items are the final output", () => {
    fc.assert(
      fc.property(responseArb, (response) => {
        const events = streamEvents(response, ctx);
        expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
        expect(events[0]?.type).toBe("response.created");
        const final = events.at(-1) as {
          type: string;
          response: { output: unknown[]; usage: { total_tokens: number } };
        };
        expect(["response.completed", "response.incomplete"]).toContain(final.type);
        expect(final.response.usage.total_tokens).toBe(
          response.usage.inputTokens + response.usage.outputTokens,
        );
        const done = events.filter((e) => e.type === "response.output_item.done").map((e) => e.item);
        expect(done).toEqual(final.response.output);
        expect(done.length).toBeGreaterThan(0);
        (done as { id: string; type: string; arguments?: string; content?: { text: string }[] }[]).forEach(
          (item, index) => {
            const mine = events.filter(
              (e) => e.item_id === item.id || (e.item as { id?: string } | undefined)?.id === item.id,
            );
            expect(mine[0]?.type).toBe("response.output_item.added");
            expect(mine.at(-1)?.type).toBe("response.output_item.done");
            expect(mine.every((e) => e.output_index === index)).toBe(true);
            const deltas = mine
              .filter((e) => String(e.type).endsWith(".delta"))
              .map((e) => e.delta as string)
              .join("");
            expect(deltas).toBe(
              item.type === "message" ? (item.content?.[0]?.text ?? "") : (item.arguments ?? ""),
            );
          },
        );
      }),
      { numRuns: 300 },
    );
  });
});
