/**
 * The pure Responses renderers, over the answers the scripted upstream cannot be
 * made to give through the binary (truncated by length, filtered, text with
 * calls, parallel calls, an empty text), validated against the published schema
 * generated from the vendored OpenAPI document.
 */
import { describe, expect, test } from "bun:test";
import type { HubResponse } from "../../src/hub/schema.ts";
import { fromHub } from "../../src/ingress/responses/from-hub.ts";
import { streamEvents } from "../../src/ingress/responses/stream.ts";
import { hubResponse } from "../support/hub-kit.ts";
import { responseResourceErrors, streamingEventErrors } from "../support/open-responses-schema.ts";
import { renderContextFor } from "../support/responses-kit.ts";

const ctx = renderContextFor(
  {
    model: "ura-qwen",
    input: "go",
    reasoning: { summary: "auto" },
    tools: [
      { type: "function", name: "ura_record" },
      { type: "namespace", name: "mcp__ura", tools: [{ type: "function", name: "observe" }] },
    ],
  },
  { responseId: "resp_r1", createdAt: 1_700_000_000, completedAt: 1_700_000_001 },
);

const base = hubResponse();
const call = (id: string, name: string) => ({ id, name, arguments: '{"nonce":"n1"}' });
const answers: [string, HubResponse][] = [
  ["text", { ...base, text: "done" }],
  ["empty text", { ...base, text: "" }],
  ["truncated by length", { ...base, text: "half", finishReason: "length" }],
  ["filtered", { ...base, text: "", finishReason: "content_filter" }],
  [
    "text with parallel calls",
    {
      ...base,
      text: "calling",
      finishReason: "tool_calls",
      toolCalls: [call("call_a", "ura_record"), call("call_b", "mcp__ura__observe")],
    },
  ],
  [
    "a call with empty arguments",
    { ...base, finishReason: "tool_calls", toolCalls: [{ ...call("c", "ura_record"), arguments: "" }] },
  ],
];

describe("rendered Responses objects and events against the published schema", () => {
  for (const [name, answer] of answers) {
    test(name, () => {
      expect(responseResourceErrors(fromHub(answer, ctx))).toEqual([]);
      const events = streamEvents(answer, ctx);
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
      for (const event of events) expect(streamingEventErrors(event)).toEqual([]);
    });
  }
});
