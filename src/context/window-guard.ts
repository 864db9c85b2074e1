/**
 * The model's window guard: whatever the episode's context policy, the prompt sent
 * upstream is kept under the episode model's `max_input_tokens` (src/models), so an
 * episode whose client cannot compact (Gemini CLI in a robot tool loop) keeps running
 * with its oldest tool-result images omitted and then its oldest call/result blocks
 * removed, the way sliding_window reduces — never a context-length 400 from the
 * upstream. Sending a request the model is known to refuse is never better than a
 * recorded reduction (docs/context-policies.md, "The model's window").
 *
 * It counts the prompt as the model does (estimate.ts: text at ~4 bytes a token, an
 * image by its pixel size), engages above `limit` (a share of max_input_tokens that
 * leaves room for what the estimate cannot see: the chat template, the image labels the
 * upstream request adds, a tokenizer denser than 4 bytes a token) and then reduces to
 * `target`, a low-water mark below it, so that the following turns only append and the
 * provider's cache keeps serving the prompt's prefix. A client that compacts on its own
 * (told its limits by its kit, below `limit`) never meets it. Model Studio's input limit
 * is on the prompt alone ("Range of input length should be [1, N]"), and the model
 * table's max_input_tokens is already below the window by the output it reserves, so the
 * requested output is not subtracted.
 */

import type { ContextDecision } from "./decision-schema.ts";

/** Of max_input_tokens: above this share the guard reduces the request. */
export const windowLimitShare = 0.9;
/** Of max_input_tokens: a reduction goes down to this share (the low-water mark). */
export const windowTargetShare = 0.7;

export interface WindowGuard {
  /** The model's largest prompt (its `max_input_tokens`). */
  maxInputTokens: number;
  /** Reduce when the prompt's estimate is above this. */
  limit: number;
  /** When reducing, go down to this. */
  target: number;
}

export function windowGuardFor(maxInputTokens: number): WindowGuard {
  return {
    maxInputTokens,
    limit: Math.floor(maxInputTokens * windowLimitShare),
    target: Math.floor(maxInputTokens * windowTargetShare),
  };
}

/** The guard's part of a policy's decision: nothing without a guard, else its limits and the prompt before and after. */
export function windowDecision(
  window: WindowGuard | undefined,
  prompt: { before: number; after: number; engaged: boolean },
): Pick<ContextDecision, "window"> {
  if (window === undefined) return {};
  return {
    window: {
      max_input_tokens: window.maxInputTokens,
      limit_tokens: window.limit,
      target_tokens: window.target,
      prompt_tokens_before: prompt.before,
      prompt_tokens_after: prompt.after,
      engaged: prompt.engaged,
    },
  };
}
