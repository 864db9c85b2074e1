/**
 * Anthropic Messages request → hub request (pure).
 * Spec: https://docs.anthropic.com/en/api/messages
 *
 * - `system` (string or text blocks) → one leading hub system message; a
 *   mid-conversation `role:"system"` message stays where it is.
 * - A user message's `tool_result` blocks become hub tool messages (images kept
 *   as parts of that tool message; the upstream builder moves them into a user
 *   message for Qwen), placed first — Chat Completions needs tool messages right
 *   after the assistant's calls — followed by the rest of the user's text/images.
 * - Assistant `tool_use` ids are kept verbatim: they are the model's call ids,
 *   which Claude Code echoes in `_meta["claudecode/toolUseId"]`.
 * - `thinking`/`redacted_thinking` history, cache_control and the other
 *   provider-only options are recorded in `ignored` (see schema.ts).
 * - Tool search, as the Messages API defines it: a tool declared with
 *   `defer_loading: true` is not in the model's context (not offered upstream)
 *   until a `tool_reference` block in a tool result of the history names it; from
 *   then on it is offered, and the reference reads as the tool's definition (the
 *   `<functions>` line Claude Code's ToolSearch tells the model to expect).
 */

import type { JsonBody } from "../../body/parse-json-body.ts";
import type { Translation } from "../../exchange/exchange-contract.ts";
import type {
  HubMessage,
  HubPart,
  HubRequest,
  HubTextPart,
  HubTool,
  HubToolCall,
  HubToolChoice,
} from "../../hub/schema.ts";
import { invalidField } from "../../lib/errors.ts";
import { deepFreeze, deriveOnce } from "../../lib/frozen-json.ts";
import type { FrozenMemos } from "../../lib/frozen-memos.ts";
import { createIgnoredFields, type IgnoredFields } from "../ignored-fields.ts";
import { fromHub } from "./from-hub.ts";
import { parseRequest } from "./parse-request.ts";
import type {
  ImageBlock,
  MessagesMessage,
  MessagesRequest,
  MessagesTool,
  TextBlock,
  ToolChoice,
  ToolReferenceBlock,
  ToolResultBlock,
} from "./schema.ts";
import { renderStream } from "./stream.ts";

export type ToHubContext = {
  /** The `anthropic-beta` header's flags (recorded as ignored: none changes what we forward). */
  betaFlags?: string[];
};

function toImagePart(block: ImageBlock, path: string): HubPart {
  if (block.source.type === "url") {
    throw invalidField(
      `${path}.source.type`,
      "url image sources are not supported (the sidecar fetches nothing); send the image as a base64 source",
    );
  }
  return {
    type: "image",
    mediaType: block.source.media_type,
    data: block.source.data,
    source: `${path}.source`,
  };
}

function toTextPart(block: TextBlock): HubTextPart {
  return { type: "text", text: block.text };
}

function toToolChoice(choice: ToolChoice): HubToolChoice {
  switch (choice.type) {
    case "auto":
      return "auto";
    case "any":
      return "required";
    case "none":
      return "none";
    case "tool":
      return { name: choice.name };
    default: {
      const never: never = choice;
      throw new Error(`unknown tool_choice ${JSON.stringify(never)}`);
    }
  }
}

/** A repeated tool list (frozen) is translated once; the same hub tools then key the upstream body's reuse of their JSON. */
function toHubTools(tools: readonly MessagesTool[]): HubTool[] {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description ?? "",
    parameters: tool.input_schema,
  }));
}

/**
 * The tools offered upstream: all of them but the deferred ones no reference loaded.
 * For a repeated (frozen) tool list the same selection is the same array every turn
 * (kept in the episode's memos), so the upstream body keeps reusing its JSON.
 */
function offeredTools(
  tools: HubTool[],
  withheld: ReadonlySet<number>,
  memos: FrozenMemos | undefined,
): HubTool[] {
  if (withheld.size === 0) return tools;
  const select = () => tools.filter((_, i) => !withheld.has(i));
  if (memos === undefined || !Object.isFrozen(tools)) return select();
  const offeredSelections = memos.table<HubTool[], Map<string, HubTool[]>>(offeredTools);
  let selections = offeredSelections.get(tools);
  if (selections === undefined) {
    selections = new Map();
    offeredSelections.set(tools, selections);
  }
  const key = [...withheld].join(",");
  let selection = selections.get(key);
  if (selection === undefined) {
    selection = select();
    Object.freeze(selection);
    selections.set(key, selection);
  }
  return selection;
}

/** What a `tool_reference` reads as: the definition it loads, as ToolSearch's own description promises. */
function referenceText(block: ToolReferenceBlock, tool: MessagesTool | undefined): string {
  if (tool === undefined)
    return `Tool ${block.tool_name} is not declared in this request; it cannot be called.`;
  const definition = { description: tool.description ?? "", name: tool.name, parameters: tool.input_schema };
  return `<functions>\n<function>${JSON.stringify(definition)}</function>\n</functions>`;
}

/** A repeated system prompt (frozen) becomes one frozen hub message (deriveOnce): measured and serialised once too. */
function toHubSystem(blocks: readonly TextBlock[]): HubMessage {
  return {
    role: "system",
    content: blocks.map(toTextPart),
    ...(blocks.some(hasCacheControl) ? { cacheHint: true as const } : {}),
  };
}

/** The client asked its provider to cache up to this block: a hint for the explicit cache's markers. */
const hasCacheControl = (block: { cache_control?: unknown }) => block.cache_control !== undefined;

/**
 * A user, assistant or mid-conversation system message of text blocks only, none with
 * `cache_control` or citations: its hub message depends on nothing but itself (nothing is
 * noted, no tool call is paired, no position is named), so a resent one (frozen) is
 * translated once per episode, and the same frozen hub message then keys its measured
 * size and its Chat message's JSON.
 */
function isPlainText(message: MessagesMessage): boolean {
  if (message.content.length === 0) return false;
  return message.content.every(
    (block) =>
      block.type === "text" &&
      !hasCacheControl(block) &&
      !(block.citations !== undefined && block.citations !== null && block.citations.length > 0),
  );
}

/**
 * An assistant message of text and tool calls only, none with `cache_control` or citations:
 * its translation depends on itself and its position (each call's source names it) and
 * notes nothing, and what it does to the translation's state is to register its calls. A
 * resent one is translated once per episode and position; a later turn registers its calls
 * again (a repeated id is the same error) and reuses the frozen hub message.
 */
function hasOnlyTextAndCalls(message: MessagesMessage): boolean {
  if (message.role !== "assistant" || !message.content.some((block) => block.type === "tool_use"))
    return false;
  return message.content.every(
    (block) =>
      (block.type === "text" || block.type === "tool_use") &&
      !hasCacheControl(block) &&
      !(
        block.type === "text" &&
        block.citations !== undefined &&
        block.citations !== null &&
        block.citations.length > 0
      ),
  );
}

type KeptAssistant = { index: number; message: HubMessage };

/**
 * A user message of tool results only, each of text parts only, none with `cache_control`:
 * its tool messages depend on it, its position (each source names it) and the names of the
 * calls it answers, and note nothing. A resent one is translated once per episode and
 * position; a later turn reuses the frozen tool messages while each call still has that name.
 */
function hasOnlyTextResults(message: MessagesMessage): boolean {
  if (message.role !== "user" || message.content.length === 0) return false;
  return message.content.every(
    (block) =>
      block.type === "tool_result" &&
      !hasCacheControl(block) &&
      (block.content ?? []).every((part) => part.type === "text" && !hasCacheControl(part)),
  );
}

type KeptResults = { index: number; messages: HubMessage[] };

/** The hub message of a plain text message (isPlainText): what the full translation below gives it. */
function plainTextToHub(message: MessagesMessage): HubMessage {
  const texts = message.content as TextBlock[];
  if (message.role === "system") return { role: "system", content: texts.map(toTextPart) };
  if (message.role === "user") return { role: "user", content: texts.map(toTextPart) };
  return { role: "assistant", text: texts.map((block) => block.text).join("\n"), toolCalls: [] };
}

/** `cache_control` hints are many (one per block): one note lists where they were. */
function noteCacheControl(ignored: IgnoredFields, path: string, block: { cache_control?: unknown }): void {
  if (block.cache_control !== undefined) ignored.addAt("cache_control", path);
}

export function toHub(body: JsonBody, ctx: ToHubContext = {}): Translation {
  const request: MessagesRequest = parseRequest(body);
  const hub = requestToHub(request, ctx, body.parsed ? body.memos : undefined);
  // The render closure holds what the answer echoes, not the request (a camera history's
  // images): a closure kept a moment past its exchange keeps no more than that.
  const echoed = { model: hub.model };
  const { stream } = request;
  return {
    hub,
    render: (response) =>
      stream
        ? { contentType: "text/event-stream; charset=utf-8", chunks: renderStream(response, echoed) }
        : { contentType: "application/json", chunks: [JSON.stringify(fromHub(response, echoed))] },
  };
}

function requestToHub(
  request: MessagesRequest,
  context: ToHubContext,
  memos: FrozenMemos | undefined,
): HubRequest {
  const ignored = createIgnoredFields();
  const messages: HubMessage[] = [];
  const toolNames = new Map<string, string>();
  const declared = request.tools ?? [];
  const history: ToolHistory = {
    callNames: toolNames,
    declared: new Map(declared.map((tool) => [tool.name, tool])),
    loaded: new Set(),
    ignored,
  };

  const systemBlocks = request.system ?? [];
  systemBlocks.forEach((block, i) => {
    noteCacheControl(ignored, `system[${i}]`, block);
  });
  if (systemBlocks.length > 0) messages.push(deriveOnce(memos, toHubSystem, systemBlocks));

  request.messages.forEach((message, i) => {
    // Only a resent one, with the episode's memos: any other goes the full way below.
    if (memos !== undefined && Object.isFrozen(message) && isPlainText(message)) {
      messages.push(deriveOnce(memos, plainTextToHub, message));
      return;
    }
    const at = (j: number) => `messages[${i}].content[${j}]`;
    switch (message.role) {
      case "system":
        message.content.forEach((block, j) => {
          noteCacheControl(ignored, at(j), block);
        });
        messages.push({
          role: "system",
          content: message.content.map(toTextPart),
          ...(message.content.some(hasCacheControl) ? { cacheHint: true as const } : {}),
        });
        break;
      case "assistant": {
        // A resent one of text and calls only: its earlier translation at this position, its calls registered again.
        const keep = memos !== undefined && Object.isFrozen(message) && hasOnlyTextAndCalls(message);
        const kept = keep ? memos.table<object, KeptAssistant>(hasOnlyTextAndCalls).get(message) : undefined;
        if (kept !== undefined && kept.index === i && kept.message.role === "assistant") {
          for (const call of kept.message.toolCalls) {
            if (toolNames.has(call.id))
              throw invalidField(`${call.source}.id`, `tool_use id ${call.id} appears twice in messages`);
            toolNames.set(call.id, call.name);
          }
          messages.push(kept.message);
          break;
        }
        const texts: string[] = [];
        const toolCalls: HubToolCall[] = [];
        message.content.forEach((block, j) => {
          switch (block.type) {
            case "text":
              noteCacheControl(ignored, at(j), block);
              if (block.citations && block.citations.length > 0) ignored.add(`${at(j)}.citations`);
              texts.push(block.text);
              break;
            case "tool_use":
              noteCacheControl(ignored, at(j), block);
              if (toolNames.has(block.id))
                throw invalidField(`${at(j)}.id`, `tool_use id ${block.id} appears twice in messages`);
              toolNames.set(block.id, block.name);
              toolCalls.push({
                id: block.id,
                name: block.name,
                arguments: JSON.stringify(block.input),
                source: at(j),
              });
              break;
            case "thinking":
            case "redacted_thinking":
              ignored.add(`${at(j)}: ${block.type} block (history thinking is not forwarded)`);
              break;
            default: {
              const never: never = block;
              throw new Error(`unknown assistant block ${JSON.stringify(never)}`);
            }
          }
        });
        if (texts.length === 0 && toolCalls.length === 0) {
          ignored.add(`messages[${i}]: assistant message with nothing but thinking (not forwarded)`);
          break;
        }
        const translated: HubMessage = {
          role: "assistant",
          text: texts.length > 0 ? texts.join("\n") : null,
          toolCalls,
        };
        if (keep) {
          deepFreeze(translated);
          memos
            .table<object, KeptAssistant>(hasOnlyTextAndCalls)
            .set(message, { index: i, message: translated });
        }
        messages.push(translated);
        break;
      }
      case "user": {
        // A resent one of text tool results only: its earlier translation at this position, while each call's name is the same.
        const keep = memos !== undefined && Object.isFrozen(message) && hasOnlyTextResults(message);
        const kept = keep ? memos.table<object, KeptResults>(hasOnlyTextResults).get(message) : undefined;
        if (
          kept !== undefined &&
          kept.index === i &&
          kept.messages.every(
            (result) => result.role === "tool" && toolNames.get(result.toolCallId) === result.name,
          )
        ) {
          messages.push(...kept.messages);
          break;
        }
        const first = messages.length;
        const parts: HubPart[] = [];
        message.content.forEach((block, j) => {
          noteCacheControl(ignored, at(j), block);
          switch (block.type) {
            case "text":
              if (block.citations && block.citations.length > 0) ignored.add(`${at(j)}.citations`);
              parts.push(toTextPart(block));
              break;
            case "image":
              parts.push(toImagePart(block, at(j)));
              break;
            case "tool_result": {
              const result = toToolMessage(block, at(j), history);
              const hinted = hasCacheControl(block) || (block.content ?? []).some(hasCacheControl);
              messages.push(hinted && result.role === "tool" ? { ...result, cacheHint: true } : result);
              break;
            }
            default: {
              const never: never = block;
              throw new Error(`unknown user block ${JSON.stringify(never)}`);
            }
          }
        });
        const hinted = message.content.some(
          (block) => block.type !== "tool_result" && hasCacheControl(block),
        );
        if (parts.length > 0)
          messages.push({ role: "user", content: parts, ...(hinted ? { cacheHint: true as const } : {}) });
        if (keep) {
          const results = messages.slice(first).map((result) => deepFreeze(result));
          memos.table<object, KeptResults>(hasOnlyTextResults).set(message, { index: i, messages: results });
        }
        break;
      }
      default: {
        const never: never = message;
        throw new Error(`unknown message role ${JSON.stringify(never)}`);
      }
    }
  });

  const withheld = new Set<number>();
  declared.forEach((tool, i) => {
    noteCacheControl(ignored, `tools[${i}]`, tool);
    if (tool.defer_loading === true && !history.loaded.has(tool.name)) {
      withheld.add(i);
      ignored.add(
        `tools[${i}] (${tool.name}): defer_loading, and no tool_reference in the history loads it: not offered upstream`,
      );
    }
  });
  const allTools = deriveOnce(memos, toHubTools, declared);
  const names = new Set<string>();
  allTools.forEach((tool, i) => {
    if (names.has(tool.name))
      throw invalidField(`tools[${i}].name`, `tool name ${tool.name} is declared twice`);
    names.add(tool.name);
  });
  const tools = offeredTools(allTools, withheld, memos);

  if (request.thinking !== undefined) ignored.add(`thinking (${request.thinking.type})`);
  if (request.context_management !== undefined) ignored.add("context_management");
  if (request.output_config?.effort !== undefined)
    ignored.add(`output_config.effort (${request.output_config.effort})`);
  if (request.metadata?.user_id !== undefined) ignored.add("metadata.user_id");
  if (context.betaFlags !== undefined && context.betaFlags.length > 0)
    ignored.add(`anthropic-beta: ${context.betaFlags.join(",")}`);

  const choice = request.tool_choice;
  if (choice?.type === "tool" && history.declared.get(choice.name)?.defer_loading === true) {
    if (!history.loaded.has(choice.name))
      throw invalidField(
        "tool_choice.name",
        `tool ${choice.name} is deferred (defer_loading) and no tool_reference in the history loads it`,
      );
  }
  const format = request.output_config?.format;
  return {
    model: request.model,
    messages,
    tools,
    ...(choice !== undefined ? { toolChoice: toToolChoice(choice) } : {}),
    ...(choice !== undefined && choice.type !== "none" && choice.disable_parallel_tool_use === true
      ? { parallelToolCalls: false }
      : {}),
    maxOutputTokens: request.max_tokens,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.top_p !== undefined ? { topP: request.top_p } : {}),
    ...(request.top_k !== undefined ? { topK: request.top_k } : {}),
    ...(request.stop_sequences !== undefined ? { stop: request.stop_sequences } : {}),
    ...(format !== undefined
      ? { responseFormat: { type: "json_schema" as const, schema: format.schema } }
      : {}),
    ignored: ignored.list(),
  };
}

/** What the tool results of a request's history are read against. */
type ToolHistory = {
  /** The name of each earlier tool_use, by id. */
  callNames: Map<string, string>;
  declared: Map<string, MessagesTool>;
  /** Deferred tools loaded by a `tool_reference` so far. */
  loaded: Set<string>;
  ignored: IgnoredFields;
};

function toToolMessage(block: ToolResultBlock, path: string, history: ToolHistory): HubMessage {
  const name = history.callNames.get(block.tool_use_id);
  if (name === undefined) {
    throw invalidField(`${path}.tool_use_id`, `no earlier tool_use has id ${block.tool_use_id}`);
  }
  const content = (block.content ?? []).map((part, k): HubPart => {
    const at = `${path}.content[${k}]`;
    noteCacheControl(history.ignored, at, part);
    switch (part.type) {
      case "text":
        return toTextPart(part);
      case "image":
        return toImagePart(part, at);
      case "tool_reference": {
        const tool = history.declared.get(part.tool_name);
        if (tool === undefined)
          history.ignored.add(`${at}: tool_reference to undeclared tool ${part.tool_name}`);
        else history.loaded.add(part.tool_name);
        return { type: "text", text: referenceText(part, tool) };
      }
      default: {
        const never: never = part;
        throw new Error(`unknown tool_result part ${JSON.stringify(never)}`);
      }
    }
  });
  return {
    role: "tool",
    toolCallId: block.tool_use_id,
    name,
    content,
    ...(block.is_error === true ? { isError: true } : {}),
    source: path,
  };
}
