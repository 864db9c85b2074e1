/**
 * Qwen Chat Completions (OpenAI-compatible mode) wire format.
 * Spec: https://help.aliyun.com/zh/model-studio/qwen-api-reference (OpenAI-compatible
 * /chat/completions). What we write is typed plainly; what we read is parsed with
 * lenient zod schemas listing only the fields we use.
 */
import { z } from "zod";

/** `cache_control`: Model Studio's explicit context-cache marker (mark-cache-prefix.ts). */
type CacheMarker = { cache_control?: { type: "ephemeral" } };

export type ChatContentPart =
  | ({ type: "text"; text: string } & CacheMarker)
  | ({ type: "image_url"; image_url: { url: string } } & CacheMarker);

export type ChatToolCall = {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
};

export type ChatMessage =
  | { role: "system"; content: string | ChatContentPart[] }
  | { role: "user"; content: string | ChatContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string | ChatContentPart[] };

export type ChatTool = {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
};

export type ChatRequest = {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  tool_choice?: "auto" | "none" | "required" | { type: "function"; function: { name: string } };
  parallel_tool_calls?: boolean;
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  top_k?: number;
  stop?: string[];
  response_format?:
    | { type: "json_object" }
    | { type: "json_schema"; json_schema: { name: string; schema: unknown } };
  /** Qwen: non-thinking mode, always sent explicitly. */
  enable_thinking: false;
  stream: true;
  stream_options: { include_usage: true };
};

const toolCallDeltaSchema = z.object({
  index: z.number().int().nonnegative(),
  id: z.string().nullish(),
  type: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

export const chatUsageSchema = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
  /**
   * Model Studio's context cache (docs/prompt-cache.md): `cached_tokens` served from the
   * cache (part of prompt_tokens); `cache_creation_input_tokens` written to a new explicit
   * cache entry (billed at 125%).
   */
  prompt_tokens_details: z
    .object({
      cached_tokens: z.number().int().nonnegative().nullish(),
      cache_creation_input_tokens: z.number().int().nonnegative().nullish(),
    })
    .nullish(),
});

export const chatChunkSchema = z.object({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z.array(
    z.object({
      index: z.number().int().nonnegative().default(0),
      delta: z
        .object({
          content: z.string().nullish(),
          reasoning_content: z.string().nullish(),
          tool_calls: z.array(toolCallDeltaSchema).nullish(),
        })
        .nullish(),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: chatUsageSchema.nullish(),
});
