/**
 * The exact UTF-8 byte count of the upstream body, `JSON.stringify(buildChatRequest(…))`,
 * for any list of the request's messages, without building the body: a long camera
 * history's body is megabytes of base64, and the body_budget policy compares many
 * candidate lists against the provider's limit before it sends one.
 *
 * Why it is exact: JSON.stringify escapes each UTF-16 unit on its own, so the bytes
 * of an array are its brackets, its elements' bytes and the commas between, and a
 * data URL's bytes are its prefix's plus its data's. Each message is rendered once
 * with its images' data emptied (toChatMessages itself, so nothing is modelled by
 * hand) and every image adds the escaped length of its data — its base64 length,
 * which needs no escaping. The one thing spanning messages is the user message that
 * carries a run of tool results' images; the sum below rebuilds those runs.
 *
 * An image's upstream form (media type, data length) is asked of the caller, so a
 * PNG still to convert can be counted as the WebP it will become, and an image whose
 * size is not known yet is reported instead of guessed.
 *
 * A message is rendered once per sizer; given its key (the same for equal messages of an
 * episode's successive requests, src/context/message-keys.ts) and the episode's memos, once
 * while the episode resends it, the rendering kept with the media types it was made with
 * (checked again each time: only the data lengths are asked of every request).
 */
import type { MessageKeyOf } from "../context/apply-body-budget.ts";
import type { HubImagePart, HubMessage, HubRequest } from "../hub/schema.ts";
import { jsonBytesReusingMembers } from "../lib/frozen-json.ts";
import type { FrozenMemos } from "../lib/frozen-memos.ts";
import { measureJsonBytes as jsonBytes } from "../lib/json-bytes.ts";
import {
  assertImagesAllowed,
  buildChatRequest,
  type ChatTarget,
  toChatMessages,
} from "./build-chat-request.ts";

/** An image part as it will be sent: its media type, and its data's length once known. */
export type UpstreamImageForm = { mediaType: string; dataBytes: number | undefined };

export type ChatBodySize = {
  /** The body's bytes, counting only the known images' data. */
  bytes: number;
  /** Kept images whose data length is not known yet (their data is not in `bytes`). */
  unknown: HubImagePart[];
};

export interface ChatBodySizer {
  /** `keyOf`: a message's key, by which its rendering is kept in the episode's memos across requests. */
  measure(messages: readonly HubMessage[], keyOf?: MessageKeyOf): ChatBodySize;
}

/**
 * Bytes of one message, its images' data excluded (a tool result's images go to the
 * next user message). Numbers only: a cached value names its images by position, not
 * by reference, so a stray pointer to it (a stale stack slot the collector treats as a
 * root) cannot keep a camera history's base64 alive after the exchange.
 */
type Pieces = {
  /** The message's own chat message (for a tool result, the tool message). */
  messageBytes: number;
  /** A tool result's image parts, as the inside of a content array (commas included), 0 if none. */
  imagePartsBytes: number;
  /** Where the message's image parts are in its content. */
  imageIndexes: number[];
  /** The upstream media type each of those images was rendered with. */
  mediaTypes: string[];
};

/** `{"role":"user","content":[]}`: the user message carrying a run of tool results' images. */
const imageCarrierBytes = jsonBytes({ role: "user", content: [] });

/** Throws like buildChatRequest does (images refused by the target) before anything is measured. */
export function createChatBodySizer(
  request: HubRequest,
  target: ChatTarget,
  formOf: (part: HubImagePart) => UpstreamImageForm,
  memos?: FrozenMemos,
): ChatBodySizer {
  assertImagesAllowed(request.messages, target);
  const envelope = buildChatRequest({ ...request, messages: [] }, target, memos);
  // A tool list the client repeated is serialised and measured once per episode (its memos).
  const envelopeBytes = jsonBytesReusingMembers(envelope, memos);
  const pieces = new WeakMap<HubMessage, Pieces>();
  // Renderings kept by message key for the episode's life (an entry goes with its key).
  const keptPieces = memos?.table<object, Pieces>(createChatBodySizer);
  const dataBytes = new WeakMap<HubImagePart, number>();

  const piecesOf = (message: HubMessage, keyOf: MessageKeyOf | undefined): Pieces => {
    const known = pieces.get(message);
    if (known) return known;
    const key = keptPieces && keyOf?.(message);
    const kept = key && keptPieces?.get(key);
    if (kept && sameForms(message, kept)) {
      pieces.set(message, kept);
      return kept;
    }
    const imageIndexes: number[] = [];
    const mediaTypes: string[] = [];
    const stripped =
      message.role === "user" || message.role === "tool"
        ? {
            ...message,
            content: message.content.map((part, index) => {
              if (part.type !== "image") return part;
              imageIndexes.push(index);
              const mediaType = formOf(part).mediaType;
              mediaTypes.push(mediaType);
              return { ...part, mediaType, data: "" };
            }),
          }
        : message;
    const [own, carrier] = toChatMessages([stripped], undefined, memos);
    const measured: Pieces = {
      messageBytes: jsonBytes(own),
      imagePartsBytes:
        message.role === "tool" && carrier && Array.isArray(carrier.content)
          ? jsonBytes(carrier.content) - 2
          : 0,
      imageIndexes,
      mediaTypes,
    };
    pieces.set(message, measured);
    if (key) keptPieces?.set(key, measured);
    return measured;
  };

  /** Whether the message's images still take the media types its kept rendering was made with. */
  const sameForms = (message: HubMessage, known: Pieces): boolean =>
    known.imageIndexes.every(
      (index, i) =>
        (message.role === "user" || message.role === "tool") &&
        message.content[index]?.type === "image" &&
        formOf(message.content[index] as HubImagePart).mediaType === known.mediaTypes[i],
    );

  return {
    measure(messages, keyOf) {
      let bytes = envelopeBytes;
      let chatMessages = 0;
      const unknown: HubImagePart[] = [];
      // The open run of tool results' images: its parts' bytes and how many results gave parts.
      let runBytes = 0;
      let runResults = 0;
      const closeRun = () => {
        if (runResults === 0) return;
        bytes += imageCarrierBytes + runBytes + (runResults - 1);
        chatMessages++;
        runBytes = 0;
        runResults = 0;
      };
      for (const message of messages) {
        if (message.role !== "tool") closeRun();
        const piece = piecesOf(message, keyOf);
        bytes += piece.messageBytes;
        chatMessages++;
        if (piece.imagePartsBytes > 0) {
          runBytes += piece.imagePartsBytes;
          runResults++;
        }
        for (const image of imagesAt(message, piece.imageIndexes)) {
          // Known lengths are kept (a base64 check is a scan of the data); unknown ones are asked again.
          const data = dataBytes.get(image) ?? formOf(image).dataBytes;
          if (data === undefined) unknown.push(image);
          else {
            dataBytes.set(image, data);
            bytes += data;
          }
        }
      }
      closeRun();
      return { bytes: bytes + Math.max(0, chatMessages - 1), unknown };
    },
  };
}

function imagesAt(message: HubMessage, indexes: readonly number[]): HubImagePart[] {
  if (indexes.length === 0 || (message.role !== "user" && message.role !== "tool")) return [];
  return indexes.map((index) => message.content[index] as HubImagePart);
}
