/**
 * Hub values for the tests beside the code (tests only): a model answer with
 * every required field, and the tool calls and tool results a translation is
 * expected to give, so a test writes only what it is about; and the check that a
 * translation reusing a resent body's members is the fresh one in every way.
 */
import { expect } from "bun:test";
import { estimateTokens } from "../../src/context/estimate.ts";
import type { HubRequest, HubResponse, HubToolCall, HubToolMessage } from "../../src/hub/schema.ts";
import { stringifyReusingMembers } from "../../src/lib/frozen-json.ts";
import type { FrozenMemos } from "../../src/lib/frozen-memos.ts";
import { buildChatRequest } from "../../src/upstream/build-chat-request.ts";
import type { ChatRequest } from "../../src/upstream/chat-schema.ts";

/** A text-less, call-less answer that stopped normally, with the given fields on top. */
export function hubResponse(fields: Partial<HubResponse> = {}): HubResponse {
  return {
    id: "chatcmpl-1",
    model: "qwen3-vl-plus",
    text: null,
    toolCalls: [],
    finishReason: "stop",
    usage: { inputTokens: 7, outputTokens: 3 },
    ...fields,
  };
}

/** A request with no messages and no tools, for renderers that only read its settings. */
export function hubRequest(fields: Partial<HubRequest> = {}): HubRequest {
  return { model: "ura-qwen", messages: [], tools: [], ignored: [], ...fields };
}

/** A tool call with its raw JSON arguments, from the client's field `source`. */
export function hubToolCall(id: string, name: string, args: string, source: string): HubToolCall {
  return { id, name, arguments: args, source };
}

/** A tool result of one text part answering call `toolCallId`, from the client's field `source`. */
export function hubToolResult(
  toolCallId: string,
  name: string,
  text: string,
  source: string,
  fields: Partial<HubToolMessage> = {},
): HubToolMessage {
  return { role: "tool", toolCallId, name, content: [{ type: "text", text }], source, ...fields };
}

export const chatTarget = { model: "ura-qwen", imageInput: true, parallelToolCalls: true };

/**
 * A request translated from a body that reused an earlier turn's members equals the
 * fresh translation, is measured as it and serialises (reusing members, with the
 * episode's memos) to its upstream text; the reused translation's upstream request, for further checks.
 */
export function expectAsFresh(reused: HubRequest, fresh: HubRequest, memos?: FrozenMemos): ChatRequest {
  expect(reused).toEqual(fresh);
  expect(JSON.stringify(reused)).toBe(JSON.stringify(fresh));
  expect(estimateTokens(reused, memos)).toBe(estimateTokens(fresh));
  const chat = buildChatRequest(reused, chatTarget, memos);
  expect(stringifyReusingMembers(chat, memos)).toBe(JSON.stringify(buildChatRequest(fresh, chatTarget)));
  return chat;
}
