/**
 * Gemini GenerateContent request → hub request (pure), and the rendering of the
 * hub's answer for the operation the path asked for. The parts have one module
 * each: contents and system instruction (convert-contents.ts), tools and tool
 * choice (convert-tools.ts), structured output (convert-response-format.ts);
 * generation settings map here.
 * Spec: https://ai.google.dev/api/generate-content
 */

import type { JsonBody } from "../../body/parse-json-body.ts";
import type { Rendered, Translation } from "../../exchange/exchange-contract.ts";
import type { HubRequest, HubResponse } from "../../hub/schema.ts";
import { SidecarError } from "../../lib/errors.ts";
import type { FrozenMemos } from "../../lib/frozen-memos.ts";
import { createIgnoredFields } from "../ignored-fields.ts";
import type { GeminiOperation } from "./classify-operation.ts";
import { convertContents, convertSystem, type DeliveredArguments } from "./convert-contents.ts";
import { convertResponseFormat } from "./convert-response-format.ts";
import { convertToolChoice, convertTools } from "./convert-tools.ts";
import { fromHub } from "./from-hub.ts";
import { parseRequest } from "./parse-request.ts";
import type { GenerateContentRequest } from "./schema.ts";
import { renderStream, streamEvents } from "./stream.ts";

export type ToHubContext = {
  /** What the request path asks for (classify-operation.ts); countTokens is answered by the route. */
  operation: Extract<GeminiOperation, { kind: "generate" | "unsupported" }>;
  deliveredArguments?: DeliveredArguments;
};

/**
 * An unsupported operation is refused before anything else: it ends the episode's
 * model work (provider_error) and nothing goes upstream.
 */
export function toHub(body: JsonBody, ctx: ToHubContext): Translation {
  const { operation } = ctx;
  if (operation.kind === "unsupported")
    throw new SidecarError("invalid_request", operation.reason, { episodeFatal: true });
  const hub = requestToHub(
    parseRequest(body),
    operation.model,
    ctx.deliveredArguments ?? (() => undefined),
    body.parsed ? body.memos : undefined,
  );
  return { hub, render: (response): Rendered => render(response, operation) };
}

function render(response: HubResponse, operation: { stream: boolean; sse: boolean }): Rendered {
  if (operation.sse) return { contentType: "text/event-stream", chunks: renderStream(response) };
  if (operation.stream)
    return { contentType: "application/json", chunks: [JSON.stringify(streamEvents(response))] };
  return { contentType: "application/json", chunks: [JSON.stringify(fromHub(response))] };
}

/** `model` is the model name from the request path (already checked against the episode). */
function requestToHub(
  request: GenerateContentRequest,
  model: string,
  delivered: DeliveredArguments,
  memos: FrozenMemos | undefined,
): HubRequest {
  const notes = createIgnoredFields();
  const messages = [
    ...convertSystem(request, notes, memos),
    ...convertContents(request.contents, notes, delivered, memos),
  ];
  const tools = convertTools(request, notes, memos);
  const hub: HubRequest = { model, messages, tools, ignored: [] };
  const toolChoice = convertToolChoice(request, tools);
  if (toolChoice !== undefined) hub.toolChoice = toolChoice;
  const config = request.generationConfig;
  if (config?.temperature !== undefined) hub.temperature = config.temperature;
  if (config?.topP !== undefined) hub.topP = config.topP;
  if (config?.topK !== undefined) hub.topK = config.topK;
  if (config?.maxOutputTokens !== undefined) hub.maxOutputTokens = config.maxOutputTokens;
  if (config?.stopSequences !== undefined) hub.stop = config.stopSequences;
  const responseFormat = convertResponseFormat(request, notes);
  if (responseFormat) hub.responseFormat = responseFormat;
  if (config?.thinkingConfig !== undefined)
    notes.add("generationConfig.thinkingConfig (upstream runs with thinking disabled)");
  if (request.safetySettings !== undefined)
    notes.add("safetySettings (Google safety filters; no upstream counterpart)");
  hub.ignored = notes.list();
  return hub;
}
