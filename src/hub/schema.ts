/**
 * The hub: the one internal conversation model every ingress translates to and
 * from, and the only thing images, context, records and the ledger ever see.
 * Close to Chat Completions (the upstream), but with images as structured parts
 * and tool results allowed to carry images — the upstream builder decides where
 * Qwen can see them (a user message right after the batch's tool messages).
 */
import { z } from "zod";
import { frameTextSchema } from "../lib/known-frame.ts";

/**
 * Where a history item or image was in the client's own request (`input[3]`,
 * `contents[4].parts[0].functionCall`, `messages[2].content[1]`): errors raised
 * after translation (tool-history integrity, image checks and sizes) name this, not the hub
 * position. Absent on what the model answered.
 */
const clientSourceSchema = z.string().optional();

export const hubTextPartSchema = z.object({ type: z.literal("text"), text: z.string() });
/**
 * An inline image. `data` is base64 without the `data:` prefix, or the stand-in of a frame
 * known from an earlier request (src/lib/known-frame.ts): its text is never made unless asked for.
 */
export const hubImagePartSchema = z.object({
  type: z.literal("image"),
  mediaType: z.string(),
  data: frameTextSchema,
  /** E.g. `input[3].output[1].image_url`, `contents[5].parts[1].inlineData`, `messages[2].content[0].source`. */
  source: clientSourceSchema,
});
export const hubPartSchema = z.discriminatedUnion("type", [hubTextPartSchema, hubImagePartSchema]);
export type HubTextPart = z.infer<typeof hubTextPartSchema>;
export type HubImagePart = z.infer<typeof hubImagePartSchema>;
export type HubPart = z.infer<typeof hubPartSchema>;

/** A tool call exactly as the model produced it; `arguments` is the raw JSON text. */
export const hubToolCallSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
  source: clientSourceSchema,
});
export type HubToolCall = z.infer<typeof hubToolCallSchema>;

/**
 * The client marked this message for its provider's prompt cache (Anthropic
 * `cache_control`): where the model has an explicit cache, a marker goes there first
 * (src/upstream/mark-cache-prefix.ts).
 */
const cacheHintSchema = z.literal(true).optional();

export const hubSystemMessageSchema = z.object({
  role: z.literal("system"),
  content: z.array(hubTextPartSchema),
  cacheHint: cacheHintSchema,
});
export const hubUserMessageSchema = z.object({
  role: z.literal("user"),
  content: z.array(hubPartSchema),
  cacheHint: cacheHintSchema,
});
export const hubAssistantMessageSchema = z.object({
  role: z.literal("assistant"),
  /** Text the model said (null when it only called tools). */
  text: z.string().nullable(),
  toolCalls: z.array(hubToolCallSchema),
});
export const hubToolMessageSchema = z.object({
  role: z.literal("tool"),
  toolCallId: z.string().min(1),
  /** Name of the tool this result answers (validated against the call by context). */
  name: z.string(),
  content: z.array(hubPartSchema),
  isError: z.boolean().optional(),
  source: clientSourceSchema,
  cacheHint: cacheHintSchema,
});
export const hubMessageSchema = z.discriminatedUnion("role", [
  hubSystemMessageSchema,
  hubUserMessageSchema,
  hubAssistantMessageSchema,
  hubToolMessageSchema,
]);
export type HubToolMessage = z.infer<typeof hubToolMessageSchema>;
export type HubMessage = z.infer<typeof hubMessageSchema>;

/** A function tool as the model sees it (model-visible name, JSON Schema parameters). */
export const hubToolSchema = z.object({
  name: z.string().min(1),
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});
export type HubTool = z.infer<typeof hubToolSchema>;

export const hubToolChoiceSchema = z.union([
  z.literal("auto"),
  z.literal("none"),
  z.literal("required"),
  z.object({ name: z.string() }),
]);
export type HubToolChoice = z.infer<typeof hubToolChoiceSchema>;

export const hubRequestSchema = z.object({
  /** The model name the client asked for (the upstream model comes from the episode). */
  model: z.string(),
  messages: z.array(hubMessageSchema),
  tools: z.array(hubToolSchema),
  toolChoice: hubToolChoiceSchema.optional(),
  parallelToolCalls: z.boolean().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  temperature: z.number().optional(),
  topP: z.number().optional(),
  topK: z.number().int().optional(),
  stop: z.array(z.string()).optional(),
  /** Structured output: a JSON schema the text answer must follow (Gemini responseJsonSchema). */
  responseFormat: z
    .union([
      z.object({ type: z.literal("json_object") }),
      z.object({ type: z.literal("json_schema"), schema: z.record(z.string(), z.unknown()) }),
    ])
    .optional(),
  /**
   * What the ingress accepted but does not forward (e.g. cache_control, reasoning,
   * Codex's web_search tool): recorded with the exchange, never sent upstream.
   */
  ignored: z.array(z.string()).default([]),
});
export type HubRequest = z.infer<typeof hubRequestSchema>;

export const hubFinishReasonSchema = z.enum(["stop", "length", "tool_calls", "content_filter"]);
export type HubFinishReason = z.infer<typeof hubFinishReasonSchema>;

export const hubUsageSchema = z.object({
  /** Every prompt token, cached or not. */
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  /** Of inputTokens, those the provider's prompt cache served (absent: not reported). */
  cachedInputTokens: z.number().int().nonnegative().optional(),
  /** Of inputTokens, those written to a new explicit cache entry (absent: none reported). */
  cacheCreationInputTokens: z.number().int().nonnegative().optional(),
});

export type HubUsage = z.infer<typeof hubUsageSchema>;

/** A complete, validated model answer: what an ingress renders for its client. */
export const hubResponseSchema = z.object({
  id: z.string(),
  model: z.string(),
  text: z.string().nullable(),
  toolCalls: z.array(hubToolCallSchema),
  finishReason: hubFinishReasonSchema,
  usage: hubUsageSchema,
});
export type HubResponse = z.infer<typeof hubResponseSchema>;
