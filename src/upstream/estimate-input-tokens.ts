/**
 * Input tokens of a Chat request for the shared budget's tokens-per-minute limit
 * (upstream-budget.ts): text at ~4 characters a token (the request's JSON length / 4,
 * as the context policies estimate), and each image by its patches, from the pixel size
 * in its header (src/models/image-tokens.ts), not by its base64 length. The provider
 * counts an image by its pixels (at most 1,282 tokens at its default resolution);
 * counted by its base64 a camera frame would
 * be tens of thousands of "tokens", and a configured TPM share would hold back a
 * camera episode far below the quota the provider actually grants it.
 * Reads only the lengths of the image URLs and their headers, so a camera history costs no scan.
 */
import { imageUrlTokens } from "../models/image-tokens.ts";
import type { ChatRequest } from "./chat-schema.ts";

export function estimateInputTokens(chat: ChatRequest, bodyLength: number): number {
  let imageTokens = 0;
  let imageChars = 0;
  for (const message of chat.messages) {
    if (typeof message.content === "string" || message.content === null) continue;
    for (const part of message.content) {
      if (part.type !== "image_url") continue;
      imageTokens += imageUrlTokens(part.image_url.url);
      imageChars += part.image_url.url.length;
    }
  }
  return Math.ceil(Math.max(0, bodyLength - imageChars) / 4) + imageTokens;
}
