/**
 * What the sidecar knows about an upstream model (docs/models.md): the limits and
 * features that shape the upstream request (the `max_tokens` clamp, whether
 * `enable_thinking: false` can be sent, whether images may go upstream) and
 * everything a client is told about the model (model listings, kits). One schema for
 * the built-in table, a config declaration (`upstream.models.<id>`) and the listings.
 */
import { z } from "zod";

export const modelCapabilitiesSchema = z
  .object({
    /** Tokens of prompt and answer together, as the model page states it. */
    context_window: z.number().int().positive(),
    /**
     * Largest prompt the upstream accepts, in tokens: over it Model Studio answers 400
     * "Range of input length should be [1, N]". At most the context window.
     */
    max_input_tokens: z.number().int().positive(),
    /** Largest `max_tokens` the upstream accepts: a client's larger value is lowered to it. */
    max_output_tokens: z.number().int().positive(),
    /** Image parts may go upstream; an image for a model without is an explicit error, never dropped. */
    image_input: z.boolean(),
    /** Video input (the sidecar sends none; told to clients as a modality). */
    video_input: z.boolean(),
    /**
     * `none`: never thinks; `hybrid`: thinks on request (the sidecar sends
     * `enable_thinking: false`); `only`: always thinks and rejects `enable_thinking: false`,
     * so it cannot serve an episode.
     */
    thinking: z.enum(["none", "hybrid", "only"]),
    /** Context cache modes the model offers (Model Studio's implicit and explicit cache). */
    cache: z.enum(["implicit", "explicit", "both", "none"]),
    /** Function calling: every episode offers the robot's tools, so a model without it cannot serve one. */
    tool_calls: z.boolean(),
  })
  .strict();
export type ModelCapabilities = z.infer<typeof modelCapabilitiesSchema>;

/**
 * `upstream.models.<id>` in config: for a built-in model, the fields to change; for
 * any other model, every field (an unknown model is a declared choice, not a default).
 */
export const modelDeclarationSchema = modelCapabilitiesSchema.partial().strict();
export type ModelDeclaration = z.infer<typeof modelDeclarationSchema>;

/** Why a model cannot serve an episode, or undefined when it can. */
export function unservableReason(id: string, model: ModelCapabilities): string | undefined {
  if (model.thinking === "only")
    return `model ${id} is thinking-only: it rejects enable_thinking:false, which the sidecar sends; choose a model with thinking none or hybrid`;
  if (!model.tool_calls)
    return `model ${id} has no function calling (tool_calls: false), and every episode offers the robot's tools`;
  if (model.max_input_tokens > model.context_window)
    return `model ${id}: max_input_tokens ${model.max_input_tokens} is over its context_window ${model.context_window}`;
  return undefined;
}
