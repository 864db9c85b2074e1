/**
 * What every kit tells its client about the episode's model (launch info
 * `model_capabilities`, from src/models): the window and output limits, and the point at
 * which a client that only knows a token count and a threshold should compact. Each
 * client compacts from its own count after an answer (usage's prompt tokens), while the
 * next request also carries the new tool results and the compaction request carries the
 * whole history plus its own prompt, so the point stays a margin below the upstream's
 * real prompt limit rather than at it (docs/long-sessions.md, "Told limits").
 */
import type { ModelCapabilities } from "../models/model-capabilities.ts";

/** Compaction at this share of the upstream's largest prompt. */
export const compactionShare = 0.8;

/** The prompt size (tokens) from which a client should compact. */
export function compactAtTokens(model: ModelCapabilities): number {
  return Math.floor(model.max_input_tokens * compactionShare);
}
