/**
 * The window the Claude Code kit tells Claude Code (CLAUDE_CODE_MAX_CONTEXT_TOKENS) so that
 * it compacts where the other clients do, at `compactAtTokens` of the model's largest
 * prompt. Claude Code does not compact at a share of the window it is told: it compacts
 * at that window less an output reserve (the smaller of its output limit, which
 * CLAUDE_CODE_MAX_OUTPUT_TOKENS sets, and 20,000) less a 13,000-token summary buffer. Told
 * a small model's real window (e.g. 30,720), that point falls below its own system prompt
 * and tool list (about 15K tokens): every compaction leaves it over the point again and it
 * stops (`compact_thrashing`). So the kit tells it the window at which that point is
 * `compactAtTokens`; for a small model that is larger than the real window, and what
 * Claude Code sends past the real limit between compactions (a turn's new tool results,
 * its compaction request) the sidecar's window guard reduces (docs/long-sessions.md,
 * "Told limits"; src/context/window-guard.ts).
 */
import type { ModelCapabilities } from "../models/model-capabilities.ts";
import { compactAtTokens } from "./model-limits.ts";

/** Claude Code's largest output reserve below the told window (tokens). */
export const claudeOutputReserveCap = 20_000;
/** Claude Code's room for a compaction summary below its reserve (tokens). */
export const claudeSummaryBuffer = 13_000;

/** CLAUDE_CODE_MAX_CONTEXT_TOKENS for a model: Claude Code then compacts at `compactAtTokens(model)`. */
export function claudeContextTokens(model: ModelCapabilities): number {
  return (
    compactAtTokens(model) + Math.min(model.max_output_tokens, claudeOutputReserveCap) + claudeSummaryBuffer
  );
}
