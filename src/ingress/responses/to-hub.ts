/**
 * Responses request → hub request (pure). Spec: https://www.openresponses.org/specification
 * - system/developer messages and `instructions` → system; user → user; assistant
 *   `output_text` and the following `function_call` items → one assistant turn;
 *   `function_call_output` (text, or parts with `input_image`) → a tool message whose
 *   images the upstream builder shows Qwen in the next user message.
 * - `reasoning` items carry nothing upstream (Qwen runs non-thinking): dropped, recorded.
 * - `previous_response_id` and `item_reference` items are resolved first against
 *   the episode's delivered responses (stored-responses.ts); a rendered response
 *   is stored, and becomes resolvable once it was delivered.
 * - Options we cannot honour and that change meaning (`background:true`, a
 *   `tool_choice` forcing a tool we do not offer, …) → 400 naming the field.
 *   Options that only tune OpenAI's service are recorded in `ignored`.
 */

import type { JsonBody } from "../../body/parse-json-body.ts";
import type { Translation } from "../../exchange/exchange-contract.ts";
import type { HubMessage, HubPart, HubRequest, HubToolCall, HubToolChoice } from "../../hub/schema.ts";
import { invalidField } from "../../lib/errors.ts";
import { deepFreeze, deriveOnce } from "../../lib/frozen-json.ts";
import type { FrozenMemos } from "../../lib/frozen-memos.ts";
import type { FrameText } from "../../lib/known-frame.ts";
import { knownFact, ownCopy, type TextHold } from "../../lib/known-texts.ts";
import { createIgnoredFields, type IgnoredFields } from "../ignored-fields.ts";
import { parseAt } from "../parse-at.ts";
import { fromHub, type RenderContext, responseSettings } from "./from-hub.ts";
import { parseRequest } from "./parse-request.ts";
import { flattenName, readDeclaredTools } from "./read-tools.ts";
import {
  type ContentPart,
  functionToolChoiceSchema,
  type InputItem,
  type ResponsesRequest,
  type ToolChoice,
} from "./schema.ts";
import { effectiveInput, type ResponseStore, resolveStoredInput } from "./stored-responses.ts";
import { renderStream } from "./stream.ts";

const dataUrlPattern = /^data:([^;,]+)(?:;[^;,]+)*;base64,(.*)$/s;

/**
 * A base64 data URL's media type and its data, or undefined when the text is not one. A
 * frame resent every turn is matched once (known-texts.ts): what is remembered is the
 * media type and where the data starts, never a piece of the text.
 */
function dataUrlParts(
  url: FrameText,
  texts: TextHold | undefined,
): { mediaType: string; data: FrameText } | undefined {
  const parts = knownFact(texts, url, "data_url", (text) => {
    const match = dataUrlPattern.exec(text);
    if (!match?.[1] || match[2] === undefined) return undefined;
    return { mediaType: ownCopy(match[1]), dataFrom: text.length - match[2].length };
  });
  if (parts === undefined) return undefined;
  // A stand-in's base64 after the comma is a stand-in too (its blob is the same image's).
  if (typeof url !== "string")
    return url.isDataUrl && url.length - url.payload().length === parts.dataFrom
      ? { mediaType: parts.mediaType, data: url.payload() }
      : { mediaType: parts.mediaType, data: url.text().slice(parts.dataFrom) };
  return { mediaType: parts.mediaType, data: url.slice(parts.dataFrom) };
}

/** `texts`: the request's hold, where a resent frame's data URL is known (known-texts.ts). */
function toHubParts(
  content: string | ContentPart[],
  param: string,
  ignored: IgnoredFields,
  texts: TextHold | undefined,
): HubPart[] {
  if (typeof content === "string") return [{ type: "text", text: content }];
  return content.map((part, j): HubPart => {
    switch (part.type) {
      case "input_text":
      case "output_text":
        return { type: "text", text: part.text };
      case "input_image": {
        const at = `${param}[${j}]`;
        if (part.file_id)
          throw invalidField(
            `${at}.file_id`,
            "file ids are not supported: send the image inline as a data URL",
          );
        const image = dataUrlParts(part.image_url ?? "", texts);
        if (!image) {
          throw invalidField(
            `${at}.image_url`,
            "only inline base64 data URLs are supported (the sidecar fetches nothing)",
          );
        }
        if (part.detail && part.detail !== "auto")
          ignored.add(`input_image.detail "${part.detail}" (Qwen has no detail setting)`);
        return { type: "image", mediaType: image.mediaType, data: image.data, source: `${at}.image_url` };
      }
      default: {
        const never: never = part;
        throw new Error(`unhandled content part ${JSON.stringify(never)}`);
      }
    }
  });
}

function textOnly(parts: HubPart[], param: string): string {
  if (parts.some((p) => p.type === "image"))
    throw invalidField(param, "images are only supported in user messages and tool outputs");
  return parts.map((p) => (p.type === "text" ? p.text : "")).join("");
}

/**
 * The client's field for item i of the effective input: `input[k]` for what this
 * request sent, a description for the items `previous_response_id` brought in.
 */
function itemFields(request: ResponsesRequest, previousItems: number): (i: number) => string {
  return (i) =>
    i < previousItems
      ? `previous_response_id ${JSON.stringify(request.previous_response_id)} item ${i}`
      : `input[${i - previousItems}]`;
}

type MessageItem = Extract<InputItem, { type: "message" }>;

/**
 * A message item of text only (a string, or input_text / output_text parts): its hub
 * message depends on nothing but itself (nothing is noted, no call is paired, no position
 * is named), so a resent one (frozen) is translated once per episode, and the same frozen
 * hub message then keys its measured size and its Chat message's JSON.
 */
function isPlainText(item: InputItem): item is MessageItem {
  if (item.type !== "message") return false;
  return (
    typeof item.content === "string" ||
    item.content.every((part) => part.type === "input_text" || part.type === "output_text")
  );
}

/** Whether a function call's output is text only (a string, or text parts): its tool message notes nothing. */
function isTextOutput(output: string | ContentPart[]): boolean {
  return (
    typeof output === "string" ||
    output.every((part) => part.type === "input_text" || part.type === "output_text")
  );
}

type KeptOutput = { param: string; name: string; message: HubMessage };

/**
 * A function call item joins the assistant message before it (or starts one): the message
 * it gives depends on the item, its field and that message. A resent call is translated
 * once per episode, reused while its field is the same and the message before it is the
 * same frozen one (or there is none), so a run of resent calls after a resent message
 * gives the same frozen message every turn.
 */
type KeptCall = { param: string; before: HubMessage | undefined; message: HubMessage };

/** The assistant message a call gives after a frozen assistant message (on a copy) or after none. */
function joinCall(before: HubMessage | undefined, call: HubToolCall): HubMessage {
  return before?.role === "assistant"
    ? { ...before, toolCalls: [...before.toolCalls, call] }
    : { role: "assistant", text: null, toolCalls: [call] };
}

/** The hub message of a plain text message item (isPlainText): what the full translation below gives it. */
function plainTextToHub(item: MessageItem): HubMessage {
  const texts =
    typeof item.content === "string"
      ? [item.content]
      : item.content.map((part) => (part.type === "input_image" ? "" : part.text));
  if (item.role === "user") return { role: "user", content: texts.map((text) => ({ type: "text", text })) };
  if (item.role === "assistant") return { role: "assistant", text: texts.join(""), toolCalls: [] };
  return { role: "system", content: [{ type: "text", text: texts.join("") }] };
}

/**
 * `memos`: the episode's, where a resent plain text message's hub message is kept; `texts`:
 * the request's hold of its long strings.
 */
function toMessages(
  request: ResponsesRequest,
  fieldOf: (i: number) => string,
  ignored: IgnoredFields,
  memos: FrozenMemos | undefined,
  texts: TextHold | undefined,
): HubMessage[] {
  const messages: HubMessage[] = [];
  if (request.instructions)
    messages.push({ role: "system", content: [{ type: "text", text: request.instructions }] });
  if (typeof request.input === "string") {
    messages.push({ role: "user", content: [{ type: "text", text: request.input }] });
    return messages;
  }
  const callNames = new Map<string, string>();
  let reasoningItems = 0;
  request.input.forEach((item, i) => {
    // Only a resent one, with the episode's memos: any other goes the full way below.
    if (memos !== undefined && Object.isFrozen(item) && isPlainText(item)) {
      messages.push(deriveOnce(memos, plainTextToHub, item));
      return;
    }
    const param = fieldOf(i);
    switch (item.type) {
      case "message": {
        const parts = toHubParts(item.content, `${param}.content`, ignored, texts);
        if (item.role === "user") messages.push({ role: "user", content: parts });
        else if (item.role === "assistant")
          messages.push({ role: "assistant", text: textOnly(parts, `${param}.content`), toolCalls: [] });
        else
          messages.push({
            role: "system",
            content: [{ type: "text", text: textOnly(parts, `${param}.content`) }],
          });
        break;
      }
      case "function_call": {
        const call: HubToolCall = {
          id: item.call_id,
          name: flattenName(item.namespace, item.name),
          arguments: item.arguments,
          source: param,
        };
        if (callNames.has(call.id))
          throw invalidField(`${param}.call_id`, `duplicate call_id ${JSON.stringify(call.id)}`);
        callNames.set(call.id, call.name);
        const last = messages.at(-1);
        const before = last?.role === "assistant" ? last : undefined;
        // A resent call after the same frozen message (or after none) gives the assistant message it gave before.
        const keep =
          memos !== undefined && Object.isFrozen(item) && (before === undefined || Object.isFrozen(before));
        const keptCalls = keep ? memos.table<object, KeptCall>(joinCall) : undefined;
        const kept = keptCalls?.get(item);
        if (kept !== undefined && kept.param === param && kept.before === before) {
          if (before === undefined) messages.push(kept.message);
          else messages[messages.length - 1] = kept.message;
          break;
        }
        // A message built for this request takes the call in place; a frozen one, on a copy (joinCall).
        if (before !== undefined && !Object.isFrozen(before)) {
          before.toolCalls.push(call);
          break;
        }
        const message = joinCall(before, call);
        if (before === undefined) messages.push(message);
        else messages[messages.length - 1] = message;
        if (keptCalls !== undefined) keptCalls.set(item, { param, before, message: deepFreeze(message) });
        break;
      }
      case "function_call_output": {
        const name = callNames.get(item.call_id);
        if (name === undefined)
          throw invalidField(
            `${param}.call_id`,
            `no function_call with call_id ${JSON.stringify(item.call_id)} precedes this output`,
          );
        // A resent text output (frozen) is translated once, reused while its field and its call's name are the same.
        const keep = memos !== undefined && Object.isFrozen(item) && isTextOutput(item.output);
        const kept = keep ? memos.table<object, KeptOutput>(isTextOutput).get(item) : undefined;
        if (kept !== undefined && kept.param === param && kept.name === name) {
          messages.push(kept.message);
          break;
        }
        const output: HubMessage = {
          role: "tool",
          toolCallId: item.call_id,
          name,
          content: toHubParts(item.output, `${param}.output`, ignored, texts),
          source: param,
        };
        if (keep)
          memos
            .table<object, KeptOutput>(isTextOutput)
            .set(item, { param, name, message: deepFreeze(output) });
        messages.push(output);
        break;
      }
      case "reasoning":
        reasoningItems += 1;
        break;
      case "item_reference":
        // toHub resolves references against the episode's stored responses before translating.
        throw invalidField(`${param}.id`, `item_reference ${JSON.stringify(item.id)} was not resolved`);
      default: {
        const never: never = item;
        throw new Error(`unhandled input item ${JSON.stringify(never)}`);
      }
    }
  });
  if (reasoningItems > 0)
    ignored.add(`${reasoningItems} reasoning item(s) in input (Qwen runs non-thinking)`);
  return messages;
}

function toToolChoice(
  choice: ToolChoice | null | undefined,
  offered: ReadonlySet<string>,
): HubToolChoice | undefined {
  if (choice === null || choice === undefined) return undefined;
  if (typeof choice === "string") {
    if (choice === "required" && offered.size === 0)
      throw invalidField("tool_choice", `"required" but no tool is offered upstream`);
    return offered.size === 0 ? undefined : choice;
  }
  if (choice.type !== "function") {
    throw invalidField(
      "tool_choice",
      `tool_choice of type ${JSON.stringify(choice.type)} is not supported (only auto, none, required or a function)`,
    );
  }
  const forced = parseAt(functionToolChoiceSchema, choice, "tool_choice");
  const name = flattenName(forced.namespace, forced.name);
  if (!offered.has(name))
    throw invalidField("tool_choice", `forces tool ${JSON.stringify(name)}, which is not offered upstream`);
  return { name };
}

/** Fields that change meaning and that a stateless proxy to Qwen cannot honour. */
function refuseUnsupported(request: ResponsesRequest): void {
  if (request.conversation !== undefined && request.conversation !== null) {
    throw invalidField(
      "conversation",
      "conversations are not stored (stateless proxy); send the whole conversation in input",
    );
  }
  if (request.background) throw invalidField("background", "background responses are not supported");
  if (request.prompt !== undefined && request.prompt !== null)
    throw invalidField("prompt", "prompt templates are not supported");
  if (request.max_tool_calls !== undefined && request.max_tool_calls !== null) {
    throw invalidField("max_tool_calls", "a tool-call cap cannot be enforced on the upstream model");
  }
  if (request.top_logprobs) throw invalidField("top_logprobs", "log probabilities are not available");
}

/** Options that only tune OpenAI's service (or Codex's bookkeeping): accepted, recorded, not forwarded. */
function recordIgnored(request: ResponsesRequest, ignored: IgnoredFields): void {
  const notes: [keyof ResponsesRequest, string][] = [
    ["reasoning", "Qwen runs non-thinking"],
    ["include", "no reasoning or logprobs are produced"],
    ["prompt_cache_key", "provider cache hint"],
    ["prompt_cache_retention", "provider cache hint"],
    ["client_metadata", "client bookkeeping"],
    ["metadata", "not stored"],
    ["user", "provider abuse monitoring"],
    ["safety_identifier", "provider abuse monitoring"],
    ["service_tier", "provider scheduling"],
    ["stream_options", "the answer is buffered and replayed whole"],
  ];
  for (const [field, why] of notes) {
    if (request[field] !== undefined && request[field] !== null) ignored.add(`${field} (${why})`);
  }
  if (request.truncation === "auto") ignored.add(`truncation: "auto" (the episode's context policy decides)`);
  if (request.text?.verbosity) ignored.add(`text.verbosity (no such Qwen setting)`);
}

/** What the response echoes that the request does not say: its id and times (Unix seconds). */
export type ToHubContext = {
  createdAt: number;
  now: () => number;
  newResponseId: () => string;
  /** This episode's responses, for `previous_response_id` and `item_reference` (built on first use). */
  store: () => ResponseStore;
};

export function toHub(body: JsonBody, ctx: ToHubContext): Translation {
  const received = parseRequest(body);
  const store = ctx.store();
  const { input, previousItems } = resolveStoredInput(received, store);
  const request: ResponsesRequest = { ...received, input, previous_response_id: undefined };
  const fieldOf = itemFields(received, previousItems);
  refuseUnsupported(request);
  const ignored = createIgnoredFields();
  const tools = readDeclaredTools(request.tools ?? [], ignored, body.parsed ? body.memos : undefined);
  const messages = toMessages(
    request,
    fieldOf,
    ignored,
    body.parsed ? body.memos : undefined,
    body.received.hold,
  );
  recordIgnored(request, ignored);
  const hub: HubRequest = { model: request.model, messages, tools: tools.hub, ignored: ignored.list() };
  const toolChoice = toToolChoice(request.tool_choice, new Set(tools.names.keys()));
  if (toolChoice !== undefined) hub.toolChoice = toolChoice;
  if (request.parallel_tool_calls !== undefined && request.parallel_tool_calls !== null)
    hub.parallelToolCalls = request.parallel_tool_calls;
  if (request.max_output_tokens) hub.maxOutputTokens = request.max_output_tokens;
  if (request.temperature !== undefined && request.temperature !== null)
    hub.temperature = request.temperature;
  if (request.top_p !== undefined && request.top_p !== null) hub.topP = request.top_p;
  const format = request.text?.format;
  if (format?.type === "json_object") hub.responseFormat = { type: "json_object" };
  if (format?.type === "json_schema") hub.responseFormat = { type: "json_schema", schema: format.schema };
  let responseId: string | undefined;
  const settings = responseSettings(received);
  const { stream } = received;
  // The input is kept for the store only when the response is stored (store: false, as every
  // pinned client sends, keeps none): the render closure otherwise holds the whole history.
  const stored = received.store !== false ? effectiveInput(input) : undefined;
  return {
    hub,
    render: (response) => {
      const rendering: RenderContext = {
        responseId: ctx.newResponseId(),
        createdAt: ctx.createdAt,
        completedAt: ctx.now(),
        request: settings,
        offeredTools: tools.offered,
        names: tools.names,
      };
      responseId = rendering.responseId;
      const rendered = fromHub(response, rendering);
      store.put(stored ?? [], rendered, stored !== undefined);
      return stream
        ? { contentType: "text/event-stream; charset=utf-8", chunks: renderStream(response, rendering) }
        : { contentType: "application/json", chunks: [JSON.stringify(rendered)] };
    },
    settled: (outcome) => {
      if (responseId !== undefined) store.settle(responseId, outcome);
    },
  };
}
