/**
 * Renders a finished response as the Responses SSE event sequence (pure).
 * Spec: https://www.openresponses.org/specification (streaming) and
 * https://platform.openai.com/docs/api-reference/responses-streaming.
 * response.created → response.in_progress → per output item: output_item.added,
 * then for a message content_part.added / output_text.delta / output_text.done /
 * content_part.done, for a call function_call_arguments.delta / .done, then
 * output_item.done with the full item → response.completed (or .incomplete) with usage.
 * Every event has an integer `sequence_number` and is one whole frame with an
 * `event:` line, so it is written in one piece. OpenCode needs output_item.added
 * before text deltas; Codex reads each item from output_item.done.
 */
import type { HubResponse } from "../../hub/schema.ts";
import { formatSseFrame } from "../../sse/format-sse.ts";
import { fromHub, type OutputItem, type RenderContext, toPendingResponse } from "./from-hub.ts";

type EventBody = Record<string, unknown> & { type: string };

function itemEvents(item: OutputItem, outputIndex: number): EventBody[] {
  const at = { item_id: item.id, output_index: outputIndex };
  switch (item.type) {
    case "message": {
      const events: EventBody[] = [
        {
          type: "response.output_item.added",
          output_index: outputIndex,
          item: { ...item, status: "in_progress", content: [] },
        },
      ];
      item.content.forEach((part, contentIndex) => {
        const here = { ...at, content_index: contentIndex };
        events.push({ type: "response.content_part.added", ...here, part: { ...part, text: "" } });
        if (part.text !== "")
          events.push({ type: "response.output_text.delta", ...here, delta: part.text, logprobs: [] });
        events.push({ type: "response.output_text.done", ...here, text: part.text, logprobs: [] });
        events.push({ type: "response.content_part.done", ...here, part });
      });
      events.push({ type: "response.output_item.done", output_index: outputIndex, item });
      return events;
    }
    case "function_call":
      return [
        {
          type: "response.output_item.added",
          output_index: outputIndex,
          item: { ...item, arguments: "", status: "in_progress" },
        },
        ...(item.arguments === ""
          ? []
          : [{ type: "response.function_call_arguments.delta", ...at, delta: item.arguments }]),
        { type: "response.function_call_arguments.done", ...at, name: item.name, arguments: item.arguments },
        { type: "response.output_item.done", output_index: outputIndex, item },
      ];
    default: {
      const never: never = item;
      throw new Error(`unknown output item ${JSON.stringify(never)}`);
    }
  }
}

/** The event bodies in order, numbered from 0. */
export function streamEvents(response: HubResponse, ctx: RenderContext): EventBody[] {
  const pending = toPendingResponse(response, ctx);
  const final = fromHub(response, ctx);
  const events: EventBody[] = [
    { type: "response.created", response: pending },
    { type: "response.in_progress", response: pending },
    ...final.output.flatMap(itemEvents),
    { type: final.status === "completed" ? "response.completed" : "response.incomplete", response: final },
  ];
  return events.map(({ type, ...rest }, i) => ({ type, sequence_number: i, ...rest }));
}

/** One SSE frame per event. */
export function renderStream(response: HubResponse, ctx: RenderContext): string[] {
  return streamEvents(response, ctx).map((event) => formatSseFrame(event, event.type));
}
