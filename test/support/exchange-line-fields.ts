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

/** An attempt the upstream answered 503, to be retried: the first entry of a retried exchange's `attempts`. */
export const failedAttempt: UpstreamResponseFields["attempts"][number] = {
  attempt: 1,
  started_at: "2026-12-05T00:00:00.000Z",
  ms: 5,
  status: 503,
  ended: "http_error",
  retry_in_ms: 5_000,
};

export const failedStatus: StatusFields = {
  status: "failed",
  error: { kind: "invalid_request", message: "refused", param: null, http_status: 400 },
  episode_state: "running",
};
