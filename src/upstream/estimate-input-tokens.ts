/**
 * Input tokens of a Chat request for the shared budget's tokens-per-minute limit
 * (upstream-budget.ts): text at ~4 characters a token (the request's JSON length / 4,
 * as the context policies estimate), and each image by its patches (`tokensPerImage`),
 * not by its base64 length. The provider counts an image by its pixels (at most about
 * 1,280 tokens at its default resolution); counted by its base64 a camera frame would
 * be tens of thousands of "tokens", and a configured TPM share would hold back a
 * camera episode far below the quota the provider actually grants it.
 * Reads only the lengths of the image URLs, so a camera history costs no scan.
 */
import type { ChatRequest } from "./chat-schema.ts";
import { tokensPerImage } from "./prompt-blocks.ts";

export function estimateInputTokens(chat: ChatRequest, bodyLength: number): number {
  let images = 0;
  let imageChars = 0;
  for (const message of chat.messages) {
    if (typeof message.content === "string" || message.content === null) continue;
    for (const part of message.content) {
      if (part.type !== "image_url") continue;
      images += 1;
      imageChars += part.image_url.url.length;
    }
  }
  return Math.ceil(Math.max(0, bodyLength - imageChars) / 4) + images * tokensPerImage;
}
