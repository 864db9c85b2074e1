/**
 * Hub response → Anthropic Messages `message` object (pure), used as the JSON
 * answer and, block by block, by the SSE stream.
 * Spec: https://docs.anthropic.com/en/api/messages (response body)
 *
 * Ids: the message id is `msg_` + the upstream completion id; tool_use ids are the
 * model's call ids unchanged — the ledger registered exactly these, and Claude
 * Code echoes them in `_meta["claudecode/toolUseId"]` (it does not require the
 * `toolu_` prefix). The model name echoed is the one the client asked for.
 */
import type { HubRequest, HubResponse, HubToolCall } from "../../hub/schema.ts";
import { SidecarError } from "../../lib/errors.ts";
import { type StopReason, toStopReason } from "./stop-reason.ts";

export type TextContent = { type: "text"; text: string };
export type ToolUseContent = { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };
export type ContentBlock = TextContent | ToolUseContent;

export type MessagesUsage = {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
};

export type MessagesResponse = {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: ContentBlock[];
  stop_reason: StopReason;
  stop_sequence: null;
  usage: MessagesUsage;
};

export function messageId(response: HubResponse): string {
  const safe = response.id.replace(/[^A-Za-z0-9_-]/g, "");
  return safe.startsWith("msg_") ? safe : `msg_${safe}`;
}

/** The tool_use input: the validated arguments as an object (`""` is an empty input). */
export function toolInput(call: HubToolCall): Record<string, unknown> {
  const parsed: unknown = call.arguments.trim() === "" ? {} : JSON.parse(call.arguments);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new SidecarError(
      "upstream_invalid",
      `tool call ${call.id} (${call.name}): arguments are not a JSON object, cannot be a tool_use input`,
    );
  }
  return parsed as Record<string, unknown>;
}

export function toContentBlocks(response: HubResponse): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  if (response.text !== null && response.text !== "") blocks.push({ type: "text", text: response.text });
  for (const call of response.toolCalls)
    blocks.push({ type: "tool_use", id: call.id, name: call.name, input: toolInput(call) });
  return blocks;
}

export function toUsage(response: HubResponse): MessagesUsage {
  // Anthropic's input_tokens counts only what was neither read from nor written to the cache.
  const read = response.usage.cachedInputTokens ?? 0;
  const written = response.usage.cacheCreationInputTokens ?? 0;
  return {
    input_tokens: Math.max(0, response.usage.inputTokens - read - written),
    output_tokens: response.usage.outputTokens,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
  };
}

/** `request`: only its model is echoed (a rendering holds nothing else of the request). */
export function fromHub(response: HubResponse, request: Pick<HubRequest, "model">): MessagesResponse {
  return {
    id: messageId(response),
    type: "message",
    role: "assistant",
    model: request.model,
    content: toContentBlocks(response),
    stop_reason: toStopReason(response),
    stop_sequence: null,
    usage: toUsage(response),
  };
}
