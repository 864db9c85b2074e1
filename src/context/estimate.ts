/**
 * The size estimates context decisions use. `estimateTokens`: UTF-8 bytes of the hub
 * request's JSON divided by 4, rounded up — sliding_window's thresholds; it errs high
 * for images, which are measured as they are (base64 as the client sent them, since
 * context runs before the WebP conversion). The prompt estimate (`measurePromptBytes`,
 * `estimatePromptTokens`) counts what the model counts against its window: the same
 * text, and each image by its pixel size as Qwen-VL counts it (src/models/image-tokens.ts,
 * from the image header; the lossless WebP conversion keeps the size). Neither is Qwen's
 * tokenizer (the sidecar has none).
 */
import type { HubMessage, HubPart, HubRequest } from "../hub/schema.ts";
import { isPlainBase64 } from "../lib/base64.ts";
import { jsonBytesReusingMembers } from "../lib/frozen-json.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";
import { measureJsonBytes } from "../lib/json-bytes.ts";
import type { TextHold } from "../lib/known-texts.ts";
import { imageTokens } from "../models/image-tokens.ts";

export { measureJsonBytes };

/**
 * `texts`: the request's hold, where a resent frame's base64 is known (known-texts.ts);
 * `keys`: the messages' keys (message-keys.ts), by which each one's size is kept in `memos`.
 */
export function estimateTokens(
  request: HubRequest,
  memos?: FrozenMemos,
  texts?: TextHold,
  keys?: readonly object[],
): number {
  return tokensFromBytes(measureRequestBytes(request, memos, texts, keys));
}

/**
 * UTF-8 length of `JSON.stringify(request)`, summed per message (the request
 * without messages + each message + the commas between): the same number without
 * building one string as large as the whole history. A tool list or system prompt the
 * client repeated (frozen, see frozen-json.ts) is serialised and measured once per
 * episode (its memos), not every turn; so is a message the episode resent, given the
 * messages' keys (the same key for a message verified equal to the previous request's at
 * its place, message-keys.ts).
 */
export function measureRequestBytes(
  request: HubRequest,
  memos?: FrozenMemos,
  texts?: TextHold,
  keys?: readonly object[],
): number {
  let bytes = jsonBytesReusingMembers({ ...request, messages: [] }, memos);
  const kept = keys && memos?.table<object, number>(measureMessageBytes);
  request.messages.forEach((message, i) => {
    const key = keys?.[i];
    let size = key && kept?.get(key);
    if (size === undefined) {
      size = measureMessageBytes(message, memos, texts);
      if (key) kept?.set(key, size);
    }
    bytes += size;
  });
  return bytes + Math.max(0, request.messages.length - 1);
}

/**
 * UTF-8 length of `JSON.stringify(message)` without serialising its images: base64
 * is ASCII and needs no escaping in JSON, so an image's data counts its length. The
 * same number as measureJsonBytes, without copying megabytes of base64 per turn.
 */
export function measureMessageBytes(message: HubMessage, memos?: FrozenMemos, texts?: TextHold): number {
  // A message derived from a member the client resent (frozen: a system prompt) is measured once.
  if (memos !== undefined && Object.isFrozen(message)) return memos.jsonBytes(message);
  if (message.role !== "user" && message.role !== "tool") return measureJsonBytes(message);
  let dataBytes = 0;
  let stripped = false;
  const content = message.content.map((part) => {
    if (part.type !== "image" || !isPlainBase64(part.data, texts)) return part;
    dataBytes += part.data.length;
    stripped = true;
    return { ...part, data: "" };
  });
  return stripped ? measureJsonBytes({ ...message, content }) + dataBytes : measureJsonBytes(message);
}

export function tokensFromBytes(bytes: number): number {
  return Math.ceil(bytes / 4);
}

/**
 * The message's prompt weight in estimate bytes (4 a token): the JSON of the message with
 * each image's data left out, plus each image's tokens as the model counts them. Reads
 * only the images' headers (no scan of their base64).
 */
export function measurePromptBytes(message: HubMessage, memos?: FrozenMemos): number {
  if ((message.role !== "user" && message.role !== "tool") || !message.content.some(isImage))
    return measureMessageBytes(message, memos);
  let imageBytes = 0;
  const content = message.content.map((part) => {
    if (part.type !== "image") return part;
    imageBytes += 4 * imageTokens(part.data);
    return { ...part, data: "" };
  });
  return measureJsonBytes({ ...message, content }) + imageBytes;
}

const isImage = (part: HubPart) => part.type === "image";

/** Whether the message holds an image (else its prompt weight is its JSON's length). */
export function hasImages(message: HubMessage): boolean {
  return (message.role === "user" || message.role === "tool") && message.content.some(isImage);
}

/** An image part's prompt weight in estimate bytes: its JSON without the data, plus its tokens. */
export function partPromptBytes(part: HubPart): number {
  if (part.type !== "image") return measureJsonBytes(part);
  return measureJsonBytes({ ...part, data: "" }) + 4 * imageTokens(part.data);
}

/** Prompt tokens of the request as the model counts them (text ~4 bytes a token, images by pixels). */
export function estimatePromptTokens(request: HubRequest, memos?: FrozenMemos): number {
  let bytes = jsonBytesReusingMembers({ ...request, messages: [] }, memos);
  for (const message of request.messages) bytes += measurePromptBytes(message, memos);
  return tokensFromBytes(bytes + Math.max(0, request.messages.length - 1));
}
