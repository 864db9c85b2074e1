/**
 * Hub request → Qwen Chat Completions request (pure).
 * Qwen, like other OpenAI-style servers, accepts images only in `user` messages:
 * a batch's tool-result images go into one user message right after that batch's
 * tool messages, each labelled with the call it belongs to.
 */

import type { HubMessage, HubPart, HubRequest, HubTool } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { deriveOnce } from "../lib/frozen-json.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";
import { type FrameText, textOf as frameTextOf } from "../lib/known-frame.ts";
import type { ChatContentPart, ChatMessage, ChatRequest } from "./chat-schema.ts";
import { markCachePrefix } from "./mark-cache-prefix.ts";

export type ChatTarget = {
  /** The upstream model (from the episode, not from the client). */
  model: string;
  /** The model takes image parts (its `image_input` capability, src/models). */
  imageInput: boolean;
  parallelToolCalls: boolean;
  /** Upper bound for max_tokens (the model's `max_output_tokens` capability). */
  maxOutputTokens?: number;
  /** Mark the stable prefix for the provider's explicit context cache (the model's `cache` capability). */
  cacheMarkers?: boolean;
};

/** A stand-in still here (an image passed through unconverted) has its text rebuilt from its blob (known-frame.ts). */
function dataUrl(part: { mediaType: string; data: FrameText }): string {
  return `data:${part.mediaType};base64,${frameTextOf(part.data)}`;
}

function toChatParts(parts: HubPart[]): ChatContentPart[] {
  return parts.map((part) =>
    part.type === "text"
      ? { type: "text", text: part.text }
      : { type: "image_url", image_url: { url: dataUrl(part) } },
  );
}

function textOf(parts: HubPart[]): string {
  return parts
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("\n");
}

export function assertImagesAllowed(messages: HubMessage[], target: ChatTarget): void {
  if (target.imageInput) return;
  messages.forEach((message, i) => {
    if (message.role !== "user" && message.role !== "tool") return;
    const j = message.content.findIndex((p) => p.type === "image");
    const image = message.content[j];
    if (image?.type === "image") {
      const param = image.source ?? `messages[${i}].content[${j}]`;
      throw new SidecarError(
        "invalid_request",
        `${param}: model ${target.model} does not take image input (its image_input capability is false: docs/models.md, upstream.models); the image was not dropped`,
        { param },
      );
    }
  });
}

/** A system prompt the client resent (a frozen hub message) is converted once; its JSON is then serialised once too. */
function toChatSystem(message: Extract<HubMessage, { role: "system" }>): ChatMessage {
  return { role: "system", content: textOf(message.content) };
}

function toChatUser(message: Extract<HubMessage, { role: "user" }>): ChatMessage {
  return {
    role: "user",
    content: message.content.every((p) => p.type === "text")
      ? textOf(message.content)
      : toChatParts(message.content),
  };
}

function toChatTextTool(message: Extract<HubMessage, { role: "tool" }>): ChatMessage {
  return { role: "tool", tool_call_id: message.toolCallId, content: textOf(message.content) };
}

function toChatAssistant(message: Extract<HubMessage, { role: "assistant" }>): ChatMessage {
  return {
    role: "assistant",
    content: message.text,
    ...(message.toolCalls.length > 0
      ? {
          tool_calls: message.toolCalls.map((call) => ({
            id: call.id,
            type: "function" as const,
            function: { name: call.name, arguments: call.arguments },
          })),
        }
      : {}),
  };
}

/**
 * `hinted`, when given, receives the chat index of each message the client marked for its
 * cache. `memos`: the episode's, where a repeated system prompt's conversion is kept.
 */
export function toChatMessages(
  messages: HubMessage[],
  hinted?: number[],
  memos?: FrozenMemos,
): ChatMessage[] {
  const out: ChatMessage[] = [];
  let pendingImages: ChatContentPart[] = [];
  const flushImages = () => {
    if (pendingImages.length > 0) out.push({ role: "user", content: pendingImages });
    pendingImages = [];
  };
  for (const message of messages) {
    if (message.role !== "tool") flushImages();
    if (hinted && message.role !== "assistant" && message.cacheHint) hinted.push(out.length);
    switch (message.role) {
      case "system":
        out.push(deriveOnce(memos, toChatSystem, message));
        break;
      // A resent message (frozen, the same hub message every turn) is converted once per episode.
      case "user":
        out.push(deriveOnce(memos, toChatUser, message));
        break;
      case "assistant":
        out.push(deriveOnce(memos, toChatAssistant, message));
        break;
      case "tool": {
        const images = message.content.filter((p) => p.type === "image");
        // A resent text result (frozen) is converted once per episode; one with images brings its carrier message.
        if (images.length === 0) {
          out.push(deriveOnce(memos, toChatTextTool, message));
          break;
        }
        const text = textOf(message.content);
        const note = `[${images.length} image(s) from this result follow in the next user message]`;
        pendingImages.push({
          type: "text",
          text: `Image(s) returned by tool call ${message.toolCallId} (${message.name}):`,
        });
        pendingImages.push(...toChatParts(images));
        out.push({
          role: "tool",
          tool_call_id: message.toolCallId,
          content: text === "" ? note : `${text}\n${note}`,
        });
        break;
      }
      default: {
        const never: never = message;
        throw new Error(`unknown hub message ${JSON.stringify(never)}`);
      }
    }
  }
  flushImages();
  return out;
}

/** A repeated tool list (frozen hub tools) is converted once; its JSON is then serialised once too. */
function toChatTools(tools: readonly HubTool[]): ChatRequest["tools"] & object {
  return tools.map((tool) => ({
    type: "function" as const,
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
}

/** `memos`: the episode's, where what a repeated tool list or system prompt becomes is kept (frozen-memos.ts). */
export function buildChatRequest(request: HubRequest, target: ChatTarget, memos?: FrozenMemos): ChatRequest {
  assertImagesAllowed(request.messages, target);
  const hinted: number[] = [];
  const chat: ChatRequest = {
    model: target.model,
    messages: toChatMessages(request.messages, hinted, memos),
    enable_thinking: false,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) {
    chat.tools = deriveOnce(memos, toChatTools, request.tools);
    chat.parallel_tool_calls = request.parallelToolCalls ?? target.parallelToolCalls;
  }
  const choice = request.toolChoice;
  if (choice !== undefined) {
    chat.tool_choice =
      typeof choice === "string" ? choice : { type: "function", function: { name: choice.name } };
  }
  if (request.maxOutputTokens !== undefined) {
    chat.max_tokens = Math.min(request.maxOutputTokens, target.maxOutputTokens ?? Number.POSITIVE_INFINITY);
  }
  if (request.temperature !== undefined) chat.temperature = request.temperature;
  if (request.topP !== undefined) chat.top_p = request.topP;
  if (request.topK !== undefined) chat.top_k = request.topK;
  if (request.stop !== undefined && request.stop.length > 0) chat.stop = request.stop;
  if (request.responseFormat?.type === "json_object") chat.response_format = { type: "json_object" };
  if (target.cacheMarkers) chat.messages = markCachePrefix(chat.messages, chat.tools, hinted);
  if (request.responseFormat?.type === "json_schema") {
    chat.response_format = {
      type: "json_schema",
      json_schema: { name: "response", schema: request.responseFormat.schema },
    };
  }
  return chat;
}
