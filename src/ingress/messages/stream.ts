/**
 * Hub response → Anthropic Messages SSE events (pure). The response is complete
 * and validated before the first byte, so every block is replayed whole:
 *   message_start (full message, empty content, usage)
 *   per block: content_block_start → one content_block_delta (text_delta |
 *   input_json_delta) → content_block_stop (Claude Code drops a tool_use without it)
 *   message_delta (stop_reason, usage) → message_stop
 * Every frame carries an `event:` line (Claude Code requires it).
 * Spec: https://docs.anthropic.com/en/api/messages-streaming
 */
import type { HubRequest, HubResponse } from "../../hub/schema.ts";
import { formatSseFrame } from "../../sse/format-sse.ts";
import { fromHub } from "./from-hub.ts";

export type MessagesEvent = { type: string } & Record<string, unknown>;

export function streamEvents(response: HubResponse, request: Pick<HubRequest, "model">): MessagesEvent[] {
  const message = fromHub(response, request);
  const events: MessagesEvent[] = [
    {
      type: "message_start",
      message: {
        ...message,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...message.usage, output_tokens: 0 },
      },
    },
  ];
  message.content.forEach((block, index) => {
    switch (block.type) {
      case "text":
        events.push({ type: "content_block_start", index, content_block: { type: "text", text: "" } });
        events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: block.text } });
        break;
      case "tool_use":
        events.push({
          type: "content_block_start",
          index,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
        });
        events.push({
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
        });
        break;
      default: {
        const never: never = block;
        throw new Error(`unknown content block ${JSON.stringify(never)}`);
      }
    }
    events.push({ type: "content_block_stop", index });
  });
  events.push({
    type: "message_delta",
    delta: { stop_reason: message.stop_reason, stop_sequence: null },
    usage: { input_tokens: message.usage.input_tokens, output_tokens: message.usage.output_tokens },
  });
  events.push({ type: "message_stop" });
  return events;
}

/** The events as whole SSE frames, `event:` line included. */
export function renderStream(response: HubResponse, request: Pick<HubRequest, "model">): string[] {
  return streamEvents(response, request).map((event) => formatSseFrame(event, event.type));
}
