/**
 * Gemini `contents` and `systemInstruction` → hub messages (pure).
 *
 * - A `model` content becomes one assistant message (its text parts joined, its
 *   functionCalls as tool calls, arguments as JSON text of `args` exactly as the
 *   client echoed them — `wait_for_previous` included, since the ledger's canonical
 *   arguments ignore it anyway — or, when the route still knows the call and the
 *   echo is equal, the exact text Qwen wrote). A `user` content becomes one tool
 *   message per functionResponse, then one user message with its remaining text and
 *   images. An `inlineData` part after a functionResponse (Gemini CLI's way of
 *   returning an MCP image) belongs to that tool message, so the image reaches Qwen
 *   labelled with its call.
 * - Call ids: Qwen's ids travel to the CLI as `functionCall.id` and come back on the
 *   history's functionCall and `functionResponse.id`. A history functionCall without
 *   an id gets `gemini_call_<content>_<part>`; a functionResponse without an id
 *   answers the first unanswered call of the same name in the preceding model turn.
 * - Given the episode's memos, a resent (frozen) content of plain text, of text and calls,
 *   or of function responses only is translated once per episode and position and its
 *   frozen hub messages reused while what they depend on is the same (the delivered
 *   arguments of its calls, the calls its responses pair with), so measuring and
 *   serialising them upstream are done once too.
 */
import type { HubMessage, HubPart, HubToolCall, HubToolMessage } from "../../hub/schema.ts";
import { invalidField } from "../../lib/errors.ts";
import { deepFreeze, deriveOnce } from "../../lib/frozen-json.ts";
import type { FrozenMemos } from "../../lib/frozen-memos.ts";
import type { FrameText } from "../../lib/known-frame.ts";
import type { IgnoredFields } from "../ignored-fields.ts";
import { liftErrorImages } from "./lift-error-images.ts";
import { droppedSignatureNote, kindOf } from "./part-kind.ts";
import type { Content, GenerateContentRequest } from "./schema.ts";

type PendingCall = { id: string; name: string; answered: boolean };

function imageOf(blob: { mimeType: string; data: FrameText }, param: string): HubPart {
  if (!blob.mimeType.startsWith("image/"))
    throw invalidField(
      `${param}.mimeType`,
      `only images are supported, not ${JSON.stringify(blob.mimeType)}`,
    );
  return { type: "image", mediaType: blob.mimeType, data: blob.data, source: param };
}

/** Gemini CLI wraps a tool's text as `{output: "…"}`; anything else is sent as its JSON. */
function responseText(response: Record<string, unknown>): string {
  const keys = Object.keys(response);
  return keys.length === 1 && typeof response.output === "string"
    ? response.output
    : JSON.stringify(response);
}

/**
 * The arguments text Qwen produced for a delivered call id, if the episode kept it.
 * Gemini carries arguments as an object, so the original bytes are lost on the
 * client's side; when the echoed object equals the delivered one, the history
 * sent upstream uses the exact text Qwen wrote.
 */
export type DeliveredArguments = (callId: string) => string | undefined;

function argumentsText(
  id: string | undefined,
  args: Record<string, unknown>,
  delivered: DeliveredArguments,
): string {
  const original = id === undefined ? undefined : delivered(id);
  if (original !== undefined && Bun.deepEquals(JSON.parse(original), args, true)) return original;
  return JSON.stringify(args);
}

function convertModelContent(
  content: Content,
  i: number,
  notes: IgnoredFields,
  delivered: DeliveredArguments,
): { message: HubMessage; calls: PendingCall[] } {
  const texts: string[] = [];
  const toolCalls: HubToolCall[] = [];
  content.parts.forEach((part, j) => {
    const param = `contents[${i}].parts[${j}]`;
    const kind = kindOf(part, param, notes);
    switch (kind) {
      case "text":
        texts.push(part.text ?? "");
        break;
      case "functionCall": {
        const call = part.functionCall;
        if (!call) break;
        toolCalls.push({
          id: call.id ?? `gemini_call_${i}_${j}`,
          name: call.name,
          arguments: argumentsText(call.id, call.args ?? {}, delivered),
          source: `${param}.functionCall`,
        });
        break;
      }
      case "inlineData":
      case "functionResponse":
        throw invalidField(`${param}.${kind}`, "not allowed in a model content");
      default: {
        const never: never = kind;
        throw new Error(`unknown part kind ${never}`);
      }
    }
  });
  return {
    message: { role: "assistant", text: texts.length > 0 ? texts.join("") : null, toolCalls },
    calls: toolCalls.map((c) => ({ id: c.id, name: c.name, answered: false })),
  };
}

function convertUserContent(
  content: Content,
  i: number,
  pending: PendingCall[],
  notes: IgnoredFields,
): HubMessage[] {
  const toolMessages: HubToolMessage[] = [];
  const userParts: HubPart[] = [];
  let current: HubToolMessage | undefined;
  content.parts.forEach((part, j) => {
    const param = `contents[${i}].parts[${j}]`;
    const kind = kindOf(part, param, notes);
    switch (kind) {
      case "text":
        userParts.push({ type: "text", text: part.text ?? "" });
        current = undefined;
        break;
      case "inlineData": {
        const image = imageOf(part.inlineData ?? { mimeType: "", data: "" }, `${param}.inlineData`);
        if (current) current.content.push(image);
        else userParts.push(image);
        break;
      }
      case "functionResponse": {
        const response = part.functionResponse;
        if (!response) break;
        let id = response.id;
        const call =
          id === undefined
            ? pending.find((c) => !c.answered && c.name === response.name)
            : pending.find((c) => c.id === id);
        if (id === undefined) {
          if (!call)
            throw invalidField(
              `${param}.functionResponse.id`,
              `missing, and no unanswered call named ${JSON.stringify(response.name)} in the preceding model content to pair it with`,
            );
          id = call.id;
        }
        if (call) call.answered = true;
        const images = (response.parts ?? []).map((p, k) =>
          imageOf(p.inlineData, `${param}.functionResponse.parts[${k}].inlineData`),
        );
        const error = response.response.error;
        const lifted =
          typeof error === "string"
            ? liftErrorImages(error, `${param}.functionResponse.response.error`)
            : undefined;
        if (lifted?.note) notes.add(`${param}.functionResponse.response.error: ${lifted.note}`);
        const text = responseText(lifted ? { ...response.response, error: lifted.text } : response.response);
        current = {
          role: "tool",
          toolCallId: id,
          name: response.name,
          content: [{ type: "text", text }, ...(lifted?.images ?? []), ...images],
          ...("error" in response.response ? { isError: true } : {}),
          source: `${param}.functionResponse`,
        };
        toolMessages.push(current);
        break;
      }
      case "functionCall":
        throw invalidField(`${param}.functionCall`, "not allowed in a user content");
      default: {
        const never: never = kind;
        throw new Error(`unknown part kind ${never}`);
      }
    }
  });
  return userParts.length > 0 ? [...toolMessages, { role: "user", content: userParts }] : toolMessages;
}

/**
 * A content of text parts only (no thought signature, nothing else in a part): its hub
 * message depends on nothing but itself (nothing is noted, no call is paired, no position
 * is named), so a resent one (frozen) is translated once per episode, and the same frozen
 * hub message then keys its measured size and its Chat message's JSON.
 */
function isPlainText(content: Content): boolean {
  return (
    content.parts.length > 0 &&
    content.parts.every(
      (part) =>
        part.text !== undefined &&
        part.thoughtSignature === undefined &&
        part.inlineData === undefined &&
        part.functionCall === undefined &&
        part.functionResponse === undefined,
    )
  );
}

/**
 * A model content of text and function calls only: its hub message depends on itself,
 * its position (a call without an id is named by it, each call's source names it) and the
 * arguments text the episode delivered for each call id. A resent one is translated once
 * per episode and position, reused while every call id's delivered text is what it was;
 * the calls it leaves pending are its message's. Gemini CLI marks a turn's first call
 * with its placeholder signature: a kept content was translated, so its signatures were
 * that placeholder, and the one note they leave is taken again.
 */
function hasOnlyTextAndCalls(content: Content): boolean {
  return (
    content.role === "model" &&
    content.parts.some((part) => part.functionCall !== undefined) &&
    content.parts.every(
      (part) =>
        part.inlineData === undefined &&
        part.functionResponse === undefined &&
        (part.text !== undefined) !== (part.functionCall !== undefined),
    )
  );
}

type KeptCalls = {
  index: number;
  message: Extract<HubMessage, { role: "assistant" }>;
  delivered: (string | undefined)[];
  /** Whether a part carried the placeholder signature (its note is taken again). */
  signed: boolean;
};

function sameDelivered(kept: KeptCalls, delivered: DeliveredArguments): boolean {
  return kept.message.toolCalls.every((call, k) => delivered(call.id) === kept.delivered[k]);
}

/**
 * A user content of function responses only (no images, no thought signature): its tool
 * messages depend on itself, its position and which pending call each response without an
 * id answers. A resent one that noted nothing is translated once per episode and position,
 * reused while each response pairs with the same call as before.
 */
function hasOnlyResponses(content: Content): boolean {
  return (
    content.role !== "model" &&
    content.parts.length > 0 &&
    content.parts.every(
      (part) =>
        part.functionResponse !== undefined &&
        part.functionResponse.parts === undefined &&
        part.thoughtSignature === undefined &&
        part.text === undefined &&
        part.inlineData === undefined &&
        part.functionCall === undefined,
    )
  );
}

type KeptResponses = { index: number; messages: HubMessage[] };

/**
 * Pairs the content's responses with the pending calls as the full conversion does and
 * tells whether each pairs with the kept tool message's call; marks those calls answered
 * only then.
 */
function pairAsBefore(content: Content, kept: HubMessage[], pending: PendingCall[]): boolean {
  if (kept.length !== content.parts.length) return false;
  const answered = new Set<PendingCall>();
  const paired = content.parts.every((part, k) => {
    const response = part.functionResponse;
    const message = kept[k];
    if (response === undefined || message?.role !== "tool") return false;
    const id = response.id;
    const call =
      id === undefined
        ? pending.find((c) => !c.answered && !answered.has(c) && c.name === response.name)
        : pending.find((c) => c.id === id);
    if (call) answered.add(call);
    return (id ?? call?.id) === message.toolCallId;
  });
  if (!paired) return false;
  for (const call of answered) call.answered = true;
  return true;
}

/** The hub message of a plain text content (isPlainText): what the full conversion below gives it. */
function plainTextToHub(content: Content): HubMessage {
  const texts = content.parts.map((part) => part.text ?? "");
  if (content.role === "model") return { role: "assistant", text: texts.join(""), toolCalls: [] };
  return { role: "user", content: texts.map((text) => ({ type: "text", text })) };
}

/** `memos`: the episode's, where a resent plain text content's hub message is kept. */
export function convertContents(
  contents: Content[],
  notes: IgnoredFields,
  delivered: DeliveredArguments,
  memos?: FrozenMemos,
): HubMessage[] {
  const messages: HubMessage[] = [];
  let pending: PendingCall[] = [];
  contents.forEach((content, i) => {
    // Only a resent one, with the episode's memos: any other goes the full way below.
    const resent = memos !== undefined && Object.isFrozen(content);
    if (resent && isPlainText(content)) {
      messages.push(deriveOnce(memos, plainTextToHub, content));
      // A model content without calls leaves none pending, as the full way does.
      if (content.role === "model") pending = [];
      return;
    }
    if (content.role === "model") {
      const keep = resent && hasOnlyTextAndCalls(content);
      const keptCalls = keep ? memos.table<Content, KeptCalls>(hasOnlyTextAndCalls) : undefined;
      const kept = keptCalls?.get(content);
      if (kept !== undefined && kept.index === i && sameDelivered(kept, delivered)) {
        if (kept.signed) notes.add(droppedSignatureNote);
        messages.push(kept.message);
        pending = kept.message.toolCalls.map((c) => ({ id: c.id, name: c.name, answered: false }));
        return;
      }
      const { message, calls } = convertModelContent(content, i, notes, delivered);
      if (keptCalls !== undefined && message.role === "assistant")
        keptCalls.set(content, {
          index: i,
          message: deepFreeze(message),
          delivered: message.toolCalls.map((c) => delivered(c.id)),
          signed: content.parts.some((part) => part.thoughtSignature !== undefined),
        });
      messages.push(message);
      pending = calls;
      return;
    }
    const keep = resent && hasOnlyResponses(content);
    const keptResponses = keep ? memos.table<Content, KeptResponses>(hasOnlyResponses) : undefined;
    const kept = keptResponses?.get(content);
    if (kept !== undefined && kept.index === i && pairAsBefore(content, kept.messages, pending)) {
      messages.push(...kept.messages);
      return;
    }
    const noted = notes.list().length;
    const converted = convertUserContent(content, i, pending, notes);
    // Kept only when it noted nothing and carries no image (an error's lifted frame): then it depends on nothing else.
    if (
      keptResponses !== undefined &&
      notes.list().length === noted &&
      converted.every((m) => m.role === "tool" && m.content.every((p) => p.type === "text"))
    )
      keptResponses.set(content, { index: i, messages: converted.map((m) => deepFreeze(m)) });
    messages.push(...converted);
  });
  return messages;
}

type SystemInstruction = NonNullable<GenerateContentRequest["systemInstruction"]>;

/** A system instruction the client resent (frozen) becomes one frozen hub message: measured and serialised once too. */
function toHubSystem(system: SystemInstruction): HubMessage {
  return {
    role: "system",
    content: system.parts.map((part) => ({ type: "text" as const, text: part.text ?? "" })),
  };
}

/** `memos`: the episode's, where a resent system instruction's hub message is kept. */
export function convertSystem(
  request: GenerateContentRequest,
  notes: IgnoredFields,
  memos?: FrozenMemos,
): HubMessage[] {
  const system = request.systemInstruction;
  if (!system) return [];
  // Checked (and its notes taken) on every request, as the notes belong to each one.
  system.parts.forEach((part, j) => {
    const param = `systemInstruction.parts[${j}]`;
    if (kindOf(part, param, notes) !== "text")
      throw invalidField(param, "only text parts are allowed in systemInstruction");
  });
  return [deriveOnce(memos, toHubSystem, system)];
}
