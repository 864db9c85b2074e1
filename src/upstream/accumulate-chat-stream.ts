/**
 * Buffers a Chat Completions stream into one complete answer and refuses anything
 * that must not reach a client: a stream cut before its end, no choices, a tool
 * call with invalid JSON arguments or a name that was not declared. Nothing here
 * is deliverable until `validateChatAnswer` has passed.
 */

import type { z } from "zod";
import type { HubFinishReason, HubResponse, HubToolCall, HubUsage } from "../hub/schema.ts";
import { SidecarError } from "../lib/errors.ts";
import { chatChunkSchema, type chatUsageSchema } from "./chat-schema.ts";

export type ChatAnswer = {
  id: string;
  model: string;
  text: string;
  toolCalls: { index: number; id: string | undefined; name: string; arguments: string }[];
  finishReason: string | undefined;
  sawDone: boolean;
  choiceCount: number;
  usage: z.infer<typeof chatUsageSchema> | undefined;
};

/** An error event in place of a chunk (the provider failed after its 200 head); `data` is the event's JSON. */
export class ChatStreamError extends SidecarError {
  readonly data: string;
  constructor(data: string) {
    super("upstream_invalid", `upstream reported an error mid-stream: ${data.slice(0, 300)}`);
    this.data = data;
  }
}

export function emptyChatAnswer(): ChatAnswer {
  return {
    id: "",
    model: "",
    text: "",
    toolCalls: [],
    finishReason: undefined,
    sawDone: false,
    choiceCount: 0,
    usage: undefined,
  };
}

/**
 * JSON text from the upstream, parsed; text that is not JSON is an upstream_invalid
 * error: `notJson`, then the text's first `shown` characters.
 */
function parseUpstreamJson(text: string, notJson: string, shown: number): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new SidecarError("upstream_invalid", `${notJson}: ${text.slice(0, shown)}`);
  }
}

/** Folds one `data:` payload into the answer (mutates the accumulator it owns). */
export function foldChatChunk(answer: ChatAnswer, data: string): void {
  if (data.trim() === "[DONE]") {
    answer.sawDone = true;
    return;
  }
  const json = parseUpstreamJson(data, "upstream stream carried a frame that is not JSON", 120);
  if (typeof json === "object" && json !== null && "error" in json) throw new ChatStreamError(data);
  const parsed = chatChunkSchema.safeParse(json);
  if (!parsed.success) {
    throw new SidecarError(
      "upstream_invalid",
      `upstream chunk does not match Chat Completions: ${parsed.error.message.slice(0, 300)}`,
    );
  }
  const chunk = parsed.data;
  if (chunk.id) answer.id = chunk.id;
  if (chunk.model) answer.model = chunk.model;
  if (chunk.usage) answer.usage = chunk.usage;
  for (const choice of chunk.choices) {
    if (choice.index !== 0) continue; // n=1 is all we ask for
    answer.choiceCount = Math.max(answer.choiceCount, 1);
    if (choice.delta?.content) answer.text += choice.delta.content;
    for (const delta of choice.delta?.tool_calls ?? []) {
      let call = answer.toolCalls.find((c) => c.index === delta.index);
      if (!call) {
        call = { index: delta.index, id: undefined, name: "", arguments: "" };
        answer.toolCalls.push(call);
      }
      if (delta.id) call.id = delta.id;
      if (delta.function?.name) call.name += delta.function.name;
      if (delta.function?.arguments) call.arguments += delta.function.arguments;
    }
    if (choice.finish_reason) answer.finishReason = choice.finish_reason;
  }
}

const finishReasons: Record<string, HubFinishReason> = {
  stop: "stop",
  length: "length",
  tool_calls: "tool_calls",
  function_call: "tool_calls",
  content_filter: "content_filter",
};

/**
 * Turns a buffered answer into a deliverable hub response, or throws.
 * `declaredTools` are the model-visible names offered in this request.
 */
export function validateChatAnswer(
  answer: ChatAnswer,
  declaredTools: ReadonlySet<string>,
  newCallId: () => string,
): HubResponse {
  if (answer.choiceCount === 0) throw new SidecarError("upstream_invalid", "upstream returned no choices");
  if (answer.finishReason === undefined || !answer.sawDone) {
    throw new SidecarError(
      "upstream_invalid",
      `upstream stream ended before completion (${answer.finishReason === undefined ? "no finish_reason" : "no [DONE]"}); ${answer.toolCalls.length} partial tool call(s) discarded`,
    );
  }
  const toolCalls: HubToolCall[] = [...answer.toolCalls]
    .sort((a, b) => a.index - b.index)
    .map((call) => {
      if (!declaredTools.has(call.name)) {
        throw new SidecarError(
          "upstream_invalid",
          `upstream called tool "${call.name}", which this request did not declare`,
        );
      }
      const args = call.arguments.trim() === "" ? "{}" : call.arguments;
      const callName = `${call.id ?? `#${call.index}`} (${call.name})`;
      const parsed = parseUpstreamJson(
        args,
        `upstream tool call ${callName} has arguments that are not valid JSON`,
        200,
      );
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        throw new SidecarError(
          "upstream_invalid",
          `upstream tool call ${call.name} arguments are not a JSON object`,
        );
      }
      const overflow = findNonFiniteNumber(parsed, "arguments");
      if (overflow !== undefined) {
        throw new SidecarError(
          "upstream_invalid",
          `upstream tool call ${callName} has a number too large for JSON (${overflow}): no executor could receive it`,
        );
      }
      if (call.id) checkCallId(call.id);
      return { id: call.id || newCallId(), name: call.name, arguments: args };
    });
  const mapped = finishReasons[answer.finishReason] ?? "stop";
  return {
    id: answer.id || newCallId(),
    model: answer.model,
    text: answer.text === "" ? null : answer.text,
    toolCalls,
    finishReason: toolCalls.length > 0 ? "tool_calls" : mapped,
    usage: hubUsageOf(answer.usage),
  };
}

/** The upstream's usage in the hub's terms (no usage reported reads as zero tokens). */
export function hubUsageOf(usage: ChatAnswer["usage"]): HubUsage {
  return {
    inputTokens: usage?.prompt_tokens ?? 0,
    outputTokens: usage?.completion_tokens ?? 0,
    ...cacheUsage(usage),
  };
}

/**
 * The cache figures of the upstream's usage, within its prompt tokens (a figure over
 * them would make a client's uncached count negative): absent when the upstream reports
 * none, so an answer without them reads as it did before.
 */
function cacheUsage(
  usage: ChatAnswer["usage"],
): Pick<HubResponse["usage"], "cachedInputTokens" | "cacheCreationInputTokens"> {
  const details = usage?.prompt_tokens_details;
  if (!usage || !details) return {};
  const cached = Math.min(details.cached_tokens ?? 0, usage.prompt_tokens);
  const creation = Math.min(details.cache_creation_input_tokens ?? 0, usage.prompt_tokens - cached);
  return { cachedInputTokens: cached, ...(creation > 0 ? { cacheCreationInputTokens: creation } : {}) };
}

/** Longest call id accepted: ids travel in headers and records, and Qwen's are ~30 characters. */
const maxCallIdChars = 256;

/**
 * A call id reaches the client, the ledger, the records and the executor's
 * idempotency key (an HTTP header): control characters (CR, LF, NUL …) would cut
 * or forge that header, so such an id is an upstream fault, never deliverable.
 */
function checkCallId(id: string): void {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  const control = /[\u0000-\u001f\u007f]/.exec(id);
  if (control !== null) {
    throw new SidecarError(
      "upstream_invalid",
      `upstream tool call id ${JSON.stringify(id.slice(0, 80))} contains the control character U+${control[0].charCodeAt(0).toString(16).padStart(4, "0").toUpperCase()}`,
    );
  }
  if (id.length > maxCallIdChars) {
    throw new SidecarError(
      "upstream_invalid",
      `upstream tool call id is ${id.length} characters long (at most ${maxCallIdChars})`,
    );
  }
}

/** The path of the first number JSON.parse turned into ±Infinity (e.g. `1e999`), if any. Iterative: arguments may nest deeply. */
function findNonFiniteNumber(root: unknown, rootPath: string): string | undefined {
  const stack: [unknown, string][] = [[root, rootPath]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [value, path] = next;
    if (typeof value === "number" && !Number.isFinite(value)) return path;
    if (typeof value !== "object" || value === null) continue;
    for (const [key, item] of Object.entries(value)) {
      stack.push([item, Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`]);
    }
  }
  return undefined;
}
