/**
 * OpenAI Responses request, as OpenCode (`@ai-sdk/openai`) and Codex CLI send it.
 * Spec: https://www.openresponses.org/specification (the Open Responses schema) and
 * https://platform.openai.com/docs/api-reference/responses/create.
 * Only the fields we read; the top level is strict, so an unknown field is a 400
 * naming it. Items and parts are lenient (Codex adds `id` and `status` to every item).
 */
import { z } from "zod";
import { frameTextSchema } from "../../lib/known-frame.ts";

export const inputTextPartSchema = z.object({ type: z.literal("input_text"), text: z.string() });
export const outputTextPartSchema = z.object({ type: z.literal("output_text"), text: z.string() });
export const inputImagePartSchema = z.object({
  type: z.literal("input_image"),
  image_url: frameTextSchema.nullish(),
  file_id: z.string().nullish(),
  detail: z.string().nullish(),
});
export const contentPartSchema = z.discriminatedUnion("type", [
  inputTextPartSchema,
  outputTextPartSchema,
  inputImagePartSchema,
]);
export type ContentPart = z.infer<typeof contentPartSchema>;
/** A message's content and a function call's output alike: one text, or a list of parts. */
const textOrPartsSchema = z.union([z.string(), z.array(contentPartSchema)]);

export const messageItemSchema = z.object({
  type: z.literal("message"),
  role: z.enum(["system", "developer", "user", "assistant"]),
  content: textOrPartsSchema,
});
export const functionCallItemSchema = z.object({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  /** Codex: the namespace tool the function belongs to (`mcp__ura`). */
  namespace: z.string().nullish(),
  arguments: z.string(),
});
export const functionCallOutputItemSchema = z.object({
  type: z.literal("function_call_output"),
  call_id: z.string().min(1),
  output: textOrPartsSchema,
});
/** Reasoning carries nothing upstream: Qwen runs non-thinking. */
export const reasoningItemSchema = z.object({ type: z.literal("reasoning") });
/** An item of a response this episode stored, by its id (stored-responses.ts resolves it). */
export const itemReferenceSchema = z.object({ type: z.literal("item_reference"), id: z.string().min(1) });

/** An item without `type` is a message (EasyInputMessage: OpenCode sends them so). */
export const inputItemSchema = z.preprocess(
  (item) =>
    item !== null && typeof item === "object" && !("type" in item) ? { ...item, type: "message" } : item,
  z.discriminatedUnion("type", [
    messageItemSchema,
    functionCallItemSchema,
    functionCallOutputItemSchema,
    reasoningItemSchema,
    itemReferenceSchema,
  ]),
);
export type InputItem = z.infer<typeof inputItemSchema>;

export const functionToolSchema = z.object({
  type: z.literal("function"),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});
export type FunctionTool = z.infer<typeof functionToolSchema>;
/** Codex: a group of function tools called as `{namespace, name}`. */
export const namespaceToolSchema = z.object({
  type: z.literal("namespace"),
  name: z.string().min(1),
  description: z.string().nullish(),
  tools: z.array(functionToolSchema),
});
export type NamespaceTool = z.infer<typeof namespaceToolSchema>;
/**
 * A declared tool, read by its type first: `function` and `namespace` are parsed
 * with the schemas above, any other type is a provider built-in (web_search, …)
 * that to-hub.ts drops or refuses.
 */
export const toolSchema = z.looseObject({ type: z.string() });
export type Tool = z.infer<typeof toolSchema>;

export const functionToolChoiceSchema = z.object({
  type: z.literal("function"),
  name: z.string().min(1),
  namespace: z.string().nullish(),
});
export const toolChoiceSchema = z.union([
  z.enum(["auto", "none", "required"]),
  z.looseObject({ type: z.string() }),
]);
export type ToolChoice = z.infer<typeof toolChoiceSchema>;

export const textConfigSchema = z.object({
  format: z
    .union([
      z.object({ type: z.literal("text") }),
      z.object({ type: z.literal("json_object") }),
      z.object({
        type: z.literal("json_schema"),
        name: z.string().nullish(),
        schema: z.record(z.string(), z.unknown()),
        strict: z.boolean().nullish(),
        description: z.string().nullish(),
      }),
    ])
    .nullish(),
  verbosity: z.string().nullish(),
});

export const responsesRequestSchema = z.strictObject({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(inputItemSchema)]),
  instructions: z.string().nullish(),
  stream: z.boolean().nullish(),
  tools: z.array(toolSchema).nullish(),
  tool_choice: toolChoiceSchema.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  text: textConfigSchema.nullish(),
  // Accepted and recorded, never forwarded.
  store: z.boolean().nullish(),
  prompt_cache_key: z.string().nullish(),
  prompt_cache_retention: z.string().nullish(),
  include: z.array(z.string()).nullish(),
  client_metadata: z.record(z.string(), z.unknown()).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  reasoning: z.record(z.string(), z.unknown()).nullish(),
  user: z.string().nullish(),
  safety_identifier: z.string().nullish(),
  service_tier: z.string().nullish(),
  truncation: z.enum(["auto", "disabled"]).nullish(),
  stream_options: z.record(z.string(), z.unknown()).nullish(),
  // Refused unless absent or neutral (they change meaning; see to-hub.ts).
  previous_response_id: z.string().nullish(),
  conversation: z.unknown().optional(),
  background: z.boolean().nullish(),
  prompt: z.unknown().optional(),
  max_tool_calls: z.number().int().nullish(),
  top_logprobs: z.number().int().nullish(),
});
export type ResponsesRequest = z.infer<typeof responsesRequestSchema>;
