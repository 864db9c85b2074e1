/**
 * Anthropic Messages request, as Claude Code sends it — what we read, strictly:
 * an unknown field is a 400 naming it, never silently dropped.
 * Spec: https://docs.anthropic.com/en/api/messages
 *
 * Accepted but not forwarded (they only tune a provider we do not have; each use
 * is listed in the hub request's `ignored`): `cache_control` on any block or tool
 * (on a message's blocks it is also kept as the hub message's `cacheHint`, where the
 * sidecar's own markers for Model Studio's explicit cache go first),
 * `thinking` (config), `context_management`, `output_config.effort`,
 * `metadata.user_id`, `citations` on text blocks, `thinking` /
 * `redacted_thinking` blocks in the history, and the `anthropic-beta` header's
 * flags. `output_config.format` (structured output) is forwarded as the hub
 * response format. Tool search (`defer_loading` tools, `tool_reference` results)
 * is carried out by to-hub.ts; docs/clients.md has the table of what each member does.
 *
 * String content (message, system, tool_result) is normalised to one text block
 * before validation, so every path a 400 names points into block arrays.
 */
import { z } from "zod";
import { frameTextSchema } from "../../lib/known-frame.ts";

const asTextBlocks = (value: unknown) =>
  typeof value === "string" ? [{ type: "text", text: value }] : value;

/** `cache_control` is accepted wherever the API allows it; never forwarded as is (a hint on messages). */
const cacheControlSchema = z.looseObject({ type: z.string() }).optional();

export const textBlockSchema = z.strictObject({
  type: z.literal("text"),
  text: z.string(),
  cache_control: cacheControlSchema,
  citations: z.array(z.unknown()).nullable().optional(),
});

export const imageSourceSchema = z.discriminatedUnion("type", [
  z.strictObject({
    type: z.literal("base64"),
    media_type: z.enum(["image/jpeg", "image/png", "image/gif", "image/webp"]),
    data: frameTextSchema.refine((data) => data.length > 0, {
      error: "Too small: expected string to have >=1 characters",
    }),
  }),
  /** Parsed only to refuse it by name: the sidecar fetches nothing. */
  z.strictObject({ type: z.literal("url"), url: z.string() }),
]);

export const imageBlockSchema = z.strictObject({
  type: z.literal("image"),
  source: imageSourceSchema,
  cache_control: cacheControlSchema,
});

/**
 * Tool search's answer (beta `advanced-tool-use-2025-11-20`): a reference to a tool the
 * request declares with `defer_loading`, which loads that tool from then on.
 */
export const toolReferenceBlockSchema = z.strictObject({
  type: z.literal("tool_reference"),
  tool_name: z.string().min(1),
  cache_control: cacheControlSchema,
});

export const toolResultBlockSchema = z.strictObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z
    .preprocess(
      asTextBlocks,
      z.array(z.discriminatedUnion("type", [textBlockSchema, imageBlockSchema, toolReferenceBlockSchema])),
    )
    .optional(),
  is_error: z.boolean().optional(),
  cache_control: cacheControlSchema,
});

export const toolUseBlockSchema = z.strictObject({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
  cache_control: cacheControlSchema,
});

/** History thinking is never forwarded (Qwen runs non-thinking): read loosely. */
export const thinkingBlockSchema = z.looseObject({ type: z.literal("thinking") });
export const redactedThinkingBlockSchema = z.looseObject({ type: z.literal("redacted_thinking") });

export const userBlockSchema = z.discriminatedUnion("type", [
  textBlockSchema,
  imageBlockSchema,
  toolResultBlockSchema,
]);
export const assistantBlockSchema = z.discriminatedUnion("type", [
  textBlockSchema,
  toolUseBlockSchema,
  thinkingBlockSchema,
  redactedThinkingBlockSchema,
]);

export const messageSchema = z.discriminatedUnion("role", [
  z.strictObject({ role: z.literal("user"), content: z.preprocess(asTextBlocks, z.array(userBlockSchema)) }),
  z.strictObject({
    role: z.literal("assistant"),
    content: z.preprocess(asTextBlocks, z.array(assistantBlockSchema)),
  }),
  /** Mid-conversation system message (beta `mid-conversation-system-2026-04-07`, sent by Claude Code). */
  z.strictObject({
    role: z.literal("system"),
    content: z.preprocess(asTextBlocks, z.array(textBlockSchema)),
  }),
]);

export const customToolSchema = z.strictObject({
  type: z.literal("custom").optional(),
  name: z.string().min(1),
  description: z.string().optional(),
  input_schema: z.record(z.string(), z.unknown()),
  cache_control: cacheControlSchema,
  /** Tool search: the tool stays out of the model's context until a `tool_reference` loads it. */
  defer_loading: z.boolean().optional(),
});

/** A server tool (`web_search_20250305`, `bash_20250124`, …) is refused by name: we cannot run it. */
export const toolEntrySchema = z
  .looseObject({ type: z.string().optional(), name: z.unknown().optional() })
  .superRefine((tool, ctx) => {
    if (tool.type !== undefined && tool.type !== "custom") {
      const name = typeof tool.name === "string" ? ` (name ${JSON.stringify(tool.name)})` : "";
      ctx.addIssue({
        code: "custom",
        path: ["type"],
        message: `server tool ${tool.type}${name} is not supported: this sidecar runs only custom tools (with input_schema)`,
      });
    }
  })
  .pipe(customToolSchema);

const parallelSwitch = { disable_parallel_tool_use: z.boolean().optional() };
export const toolChoiceSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("auto"), ...parallelSwitch }),
  z.strictObject({ type: z.literal("any"), ...parallelSwitch }),
  z.strictObject({ type: z.literal("tool"), name: z.string().min(1), ...parallelSwitch }),
  z.strictObject({ type: z.literal("none") }),
]);

export const outputConfigSchema = z.strictObject({
  effort: z.string().optional(),
  format: z
    .strictObject({ type: z.literal("json_schema"), schema: z.record(z.string(), z.unknown()) })
    .optional(),
});

export const messagesRequestSchema = z.strictObject({
  model: z.string().min(1),
  messages: z.array(messageSchema),
  max_tokens: z.number().int().positive(),
  system: z.preprocess(asTextBlocks, z.array(textBlockSchema)).optional(),
  tools: z.array(toolEntrySchema).optional(),
  tool_choice: toolChoiceSchema.optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.number().int().min(0).optional(),
  stop_sequences: z.array(z.string()).optional(),
  metadata: z.strictObject({ user_id: z.string().nullable().optional() }).optional(),
  stream: z.boolean().optional(),
  thinking: z.looseObject({ type: z.string() }).optional(),
  context_management: z.looseObject({}).optional(),
  output_config: outputConfigSchema.optional(),
});

export type TextBlock = z.infer<typeof textBlockSchema>;
export type ImageBlock = z.infer<typeof imageBlockSchema>;
export type ToolResultBlock = z.infer<typeof toolResultBlockSchema>;
export type ToolReferenceBlock = z.infer<typeof toolReferenceBlockSchema>;
export type MessagesMessage = z.infer<typeof messageSchema>;
export type ToolChoice = z.infer<typeof toolChoiceSchema>;
export type MessagesTool = z.infer<typeof customToolSchema>;
export type MessagesRequest = z.infer<typeof messagesRequestSchema>;
