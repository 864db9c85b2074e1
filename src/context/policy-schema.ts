/**
 * The per-episode context policy, as written in config and episode JSON (hence
 * snake_case). `identity` (the default) forwards the translated request as is;
 * `sliding_window` reduces a request whose estimate exceeds `max_input_tokens`
 * toward `target_input_tokens` (see apply-context.ts). Objects are strict so a
 * misspelt key is an error, not a silently ignored setting. The numeric defaults
 * are a starting point, to be tuned from records: the estimate counts image
 * bytes (base64, before WebP), so it runs far above Qwen's real token counts.
 * `body_budget` (the policy for camera episodes) budgets the upstream body as it
 * will be sent, after WebP conversion (apply-body-budget.ts).
 */
import { z } from "zod";

export const identityPolicySchema = z.strictObject({ policy: z.literal("identity") });

export const slidingWindowPolicySchema = z
  .strictObject({
    policy: z.literal("sliding_window"),
    /** Reduce only when the estimate is above this. */
    max_input_tokens: z.number().int().positive().default(256_000),
    /** When reducing, stop as soon as the estimate is at or below this. */
    target_input_tokens: z.number().int().positive().default(192_000),
    /** The newest tool-result images that are never replaced by an omission notice. */
    min_recent_tool_images: z.number().int().nonnegative().default(6),
    /** Tool-result images are omitted in whole batches of this many, oldest first. */
    image_eviction_batch_size: z.number().int().positive().default(2),
    /** The newest call/result blocks that are never removed (at least the one being answered). */
    keep_recent_blocks: z.number().int().min(1).default(2),
  })
  .refine((policy) => policy.target_input_tokens <= policy.max_input_tokens, {
    message: "target_input_tokens must not exceed max_input_tokens",
    path: ["target_input_tokens"],
  });

/**
 * Keeps the upstream body, measured after WebP conversion exactly as it will be sent,
 * at or under `max_body_bytes`: a camera episode resending every frame keeps running
 * at any length, with its newest frames.
 */
export const bodyBudgetPolicySchema = z.strictObject({
  policy: z.literal("body_budget"),
  /** Largest upstream body; absent = the provider limit (images.limits.max_request_bytes). */
  max_body_bytes: z.number().int().positive().optional(),
  /** The newest tool-result images that are never replaced by an omission notice. */
  min_recent_tool_images: z.number().int().nonnegative().default(6),
  /** Tool-result images are omitted in whole batches of this many, oldest first. */
  image_eviction_batch_size: z.number().int().positive().default(1),
  /** The newest call/result blocks that are never removed (at least the one being answered). */
  keep_recent_blocks: z.number().int().min(1).default(2),
  /**
   * Once over the budget, reduce to this share of it, so that the next turns only append
   * and the prompt keeps its prefix (the provider's cache can serve it) until the budget
   * is reached again. Lower: fewer reductions, fewer frames on average; 1: the fewest
   * omitted each turn (the prefix changes on nearly every turn).
   */
  low_water_fraction: z.number().gt(0).max(1).default(0.6),
});

export const contextPolicySchema = z
  .discriminatedUnion("policy", [identityPolicySchema, slidingWindowPolicySchema, bodyBudgetPolicySchema])
  .default({ policy: "identity" });

export type SlidingWindowPolicy = z.infer<typeof slidingWindowPolicySchema>;
export type BodyBudgetPolicy = z.infer<typeof bodyBudgetPolicySchema>;
export type ContextPolicy = z.infer<typeof contextPolicySchema>;
