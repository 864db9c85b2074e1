/**
 * Hub values for the tests beside the code (tests only): a model answer with
 * every required field, so a test writes only what it is about.
 */
import type { HubRequest, HubResponse } from "../../src/hub/schema.ts";

/** A text-less, call-less answer that stopped normally, with the given fields on top. */
export function hubResponse(fields: Partial<HubResponse> = {}): HubResponse {
  return {
    id: "chatcmpl-1",
    model: "qwen3-vl-plus",
    text: null,
    toolCalls: [],
    finishReason: "stop",
    usage: { inputTokens: 7, outputTokens: 3 },
    ...fields,
  };
}

/** A request with no messages and no tools, for renderers that only read its settings. */
export function hubRequest(fields: Partial<HubRequest> = {}): HubRequest {
  return { model: "ura-qwen", messages: [], tools: [], ignored: [], ...fields };
}
