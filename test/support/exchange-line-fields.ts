/**
 * Complete fields for exchange record lines (src/records/exchange-lines.ts), for
 * tests that write records through the verbs and care about other members.
 */
import type {
  StatusFields,
  UpstreamRequestFields,
  UpstreamResponseFields,
} from "../../src/records/exchange-lines.ts";

export const noImages: UpstreamRequestFields["images"] = {
  images: 0,
  converted: 0,
  cacheHits: 0,
  passedThrough: {},
  bytesBefore: 0,
  bytesAfter: 0,
  encodeMs: 0,
  leftOut: 0,
};

export const answer: NonNullable<UpstreamResponseFields["validated"]> = {
  id: "chatcmpl-1",
  model: "qwen",
  text: "ok",
  toolCalls: [],
  finishReason: "stop",
  usage: { inputTokens: 1, outputTokens: 1 },
};

export const failedStatus: StatusFields = {
  status: "failed",
  error: { kind: "invalid_request", message: "refused", param: null, http_status: 400 },
  episode_state: "running",
};
