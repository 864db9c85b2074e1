/**
 * A conversation → one dataset line in the OpenAI-compatible chat fine-tuning
 * format (docs/dataset.md): `messages` exactly as they went upstream plus the
 * model's answer, the `tools` and `parallel_tool_calls` as sent. Every image is
 * the WebP (or passed-through image) the model was sent, written once as
 * images/sha256-<hex>.<ext> and referenced by that relative path from its
 * `image_url` part, or inlined as a data URL when asked.
 */
import { createHash } from "node:crypto";
import type { Conversation } from "./build-conversations.ts";
import { type BlobRef, isBlobRef } from "./read-episode.ts";

export type TrainingLine = {
  messages: Record<string, unknown>[];
  tools?: Record<string, unknown>[];
  parallel_tool_calls?: boolean;
};

export type DatasetImage = { hex: string; mediaType: string; bytes: Uint8Array; file: string };

/** An image as the wire request carried it: inline bytes with their media type. */
export type SentImage = { mediaType: string; bytes: Uint8Array };

/** Resolves an image part's url (a data URL or a blob reference) to the bytes that were sent. */
export type ImageSource = (url: string | BlobRef) => SentImage;

const extensions: Record<string, string> = {
  "image/webp": "webp",
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/gif": "gif",
};

export function imageFileName(hex: string, mediaType: string): string {
  return `images/sha256-${hex}.${extensions[mediaType] ?? "bin"}`;
}

export function parseDataUrl(url: string): SentImage | undefined {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url);
  if (!match?.[1] || match[2] === undefined) return undefined;
  return { mediaType: match[1], bytes: new Uint8Array(Buffer.from(match[2], "base64")) };
}

export function toDataUrl(image: SentImage): string {
  return `data:${image.mediaType};base64,${Buffer.from(image.bytes).toString("base64")}`;
}

type ImagePart = { type: "image_url"; image_url: { url: string | BlobRef } };

export function isImagePart(part: unknown): part is ImagePart {
  if (typeof part !== "object" || part === null) return false;
  const p = part as { type?: unknown; image_url?: { url?: unknown } };
  return p.type === "image_url" && (typeof p.image_url?.url === "string" || isBlobRef(p.image_url?.url));
}

/** Replaces every image part's url (in user message content arrays) by `replace(url)`; other values are copied as they are. */
export function mapImageUrls(
  messages: Record<string, unknown>[],
  replace: (url: string | BlobRef) => string,
): Record<string, unknown>[] {
  return messages.map((message) => {
    if (!Array.isArray(message.content)) return message;
    return {
      ...message,
      content: message.content.map((part: unknown) =>
        isImagePart(part)
          ? { ...part, image_url: { ...part.image_url, url: replace(part.image_url.url) } }
          : part,
      ),
    };
  });
}

export function renderLine(
  conversation: Conversation,
  source: ImageSource,
  options: { inlineImages: boolean },
): { line: TrainingLine; images: DatasetImage[] } {
  const images = new Map<string, DatasetImage>();
  const messages = mapImageUrls(conversation.request.messages, (url) => {
    const sent = source(url);
    const hex = createHash("sha256").update(sent.bytes).digest("hex");
    const file = imageFileName(hex, sent.mediaType);
    images.set(file, { hex, mediaType: sent.mediaType, bytes: sent.bytes, file });
    return options.inlineImages ? toDataUrl(sent) : file;
  });
  const line: TrainingLine = { messages: [...messages, conversation.answer as Record<string, unknown>] };
  if (conversation.request.tools !== undefined) line.tools = conversation.request.tools;
  if (conversation.request.parallel_tool_calls !== undefined)
    line.parallel_tool_calls = conversation.request.parallel_tool_calls;
  return { line, images: [...images.values()] };
}
