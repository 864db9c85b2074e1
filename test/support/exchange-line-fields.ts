/**
 * Complete fields for exchange record lines (src/records/exchange-lines.ts), for
 * tests that write records through the verbs and care about other members.
 */
import { type ExchangeCost, exchangeCost } from "../../src/pricing/exchange-cost.ts";
import { modelPriceSchema } from "../../src/pricing/price-table.ts";
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

/** The cost of one billed attempt of qwen3-vl-plus at 1 (input) and 10 (output) per million tokens. */
export const pricedAttempt = (currency: string, inputTokens: number, outputTokens = 0): ExchangeCost =>
  exchangeCost({
    model: "qwen3-vl-plus",
    currency,
    price: modelPriceSchema.parse({ input: 1, output: 10 }),
    usages: [{ inputTokens, outputTokens }],
    cache: "implicit",
  });
