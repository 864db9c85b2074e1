/**
 * The size estimate every context decision uses: UTF-8 bytes of the hub request's
 * JSON divided by 4, rounded up. It is an estimate, not Qwen's tokenizer (the sidecar
 * has none); it errs high for images, which are measured as they are — base64 as
 * the client sent them, since context runs before the WebP conversion.
 */
import type { HubRequest } from "../hub/schema.ts";

export function estimateTokens(request: HubRequest): number {
  return tokensFromBytes(measureJsonBytes(request));
}

/** UTF-8 length of `JSON.stringify(value)`. */
export function measureJsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

export function tokensFromBytes(bytes: number): number {
  return Math.ceil(bytes / 4);
}
