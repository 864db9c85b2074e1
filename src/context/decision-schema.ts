/**
 * What a context policy did to one request. Recorded beside the original and the
 * after-context request, so it is a zod schema (records are read back and checked).
 * `images_omitted[].index` is the content part index inside that tool message.
 */
import { z } from "zod";

export const contextDecisionSchema = z.object({
  policy: z.enum(["identity", "sliding_window", "body_budget"]),
  /** Estimated tokens (JSON bytes / 4) of the request as translated. */
  estimate_before: z.number().int().nonnegative(),
  /** Estimated tokens of the request sent on. */
  estimate_after: z.number().int().nonnegative(),
  /** Whether the request was changed (sliding_window above max_input_tokens, body_budget, the window guard). */
  reduced: z.boolean(),
  images_omitted: z.array(z.object({ toolCallId: z.string(), index: z.number().int().nonnegative() })),
  blocks_removed: z.array(z.object({ toolCallIds: z.array(z.string()) })),
  /**
   * The model's window guard (window-guard.ts), under every policy: the prompt as the
   * model counts it (images by pixel size) before and after, the limit it engages above
   * and the target it then reduces to, and whether it made this reduction.
   */
  window: z
    .object({
      max_input_tokens: z.number().int().positive(),
      limit_tokens: z.number().int().positive(),
      target_tokens: z.number().int().positive(),
      prompt_tokens_before: z.number().int().nonnegative(),
      prompt_tokens_after: z.number().int().nonnegative(),
      engaged: z.boolean(),
    })
    .optional(),
  /** body_budget: the budget and the upstream body's bytes (after WebP) before and after. */
  body_budget: z
    .object({
      max_body_bytes: z.number().int().positive(),
      /** Where a reduction brings the body (max_body_bytes × low_water_fraction). */
      low_water_bytes: z.number().int().nonnegative().optional(),
      /** The episode's previous reduction was kept (the prompt's prefix unchanged). */
      kept_previous: z.boolean().optional(),
      bytes_before: z.number().int().nonnegative(),
      bytes_after: z.number().int().nonnegative(),
    })
    .optional(),
});
export type ContextDecision = z.infer<typeof contextDecisionSchema>;
