/**
 * What the Responses renderers need in tests (tests only): the render context of a
 * client body, read the way the route reads it (the request as parsed, the tools it
 * offered and their model-visible names), with fixed ids and times.
 */

import { jsonBodyOf } from "../../src/body/parse-json-body.ts";
import { type RenderContext, responseSettings } from "../../src/ingress/responses/from-hub.ts";
import { parseRequest } from "../../src/ingress/responses/parse-request.ts";
import { readTools } from "../../src/ingress/responses/read-tools.ts";

export function renderContextFor(
  body: Record<string, unknown>,
  at: { responseId: string; createdAt: number; completedAt: number },
): RenderContext {
  const request = parseRequest(jsonBodyOf(body));
  const tools = readTools(request.tools ?? []);
  return { ...at, request: responseSettings(request), offeredTools: tools.offered, names: tools.names };
}

/**
 * The event types of a streamed Responses answer, as the Responses streaming
 * reference orders them (written from the reference, not from the renderer): created,
 * in progress, each output item's events, completed.
 */
export function responseEventTypes(...items: ("message" | "function_call")[]): string[] {
  const itemEvents = {
    message: [
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
    ],
    function_call: ["response.function_call_arguments.delta", "response.function_call_arguments.done"],
  };
  return [
    "response.created",
    "response.in_progress",
    ...items.flatMap((item) => [
      "response.output_item.added",
      ...itemEvents[item],
      "response.output_item.done",
    ]),
    "response.completed",
  ];
}
