/**
 * Prompt tokens an image costs a Qwen-VL model, by its pixel size, as Model Studio
 * counts them (docs/models.md, "Image tokens"): the image is resized to multiples of
 * 28 pixels (one token per 28×28 patch) within 4 and 1,280 tokens (the default
 * resolution: the sidecar never sends `vl_high_resolution_images`), plus 2 for the
 * vision start and end markers. One pure function for every count of an image: the
 * context policies' window guard, the shared upstream budget, the prompt blocks of the
 * cache emulation and the scripted upstream, so that all of them agree.
 *
 * The size comes from the image header (PNG IHDR, WebP VP8/VP8L/VP8X, GIF), read from
 * the first few base64 characters without decoding the image; an image whose size
 * cannot be read counts as the most an image can cost (the guard errs high).
 */
import type { FrameText } from "../lib/known-frame.ts";

const patch = 28;
const minTokens = 4;
const maxTokens = 1280;
/** `<|vision_start|>` and `<|vision_end|>` around the patches. */
const markerTokens = 2;

/** The most one image costs at the default resolution. */
export const maxImageTokens = maxTokens + markerTokens;

/** Tokens of a `width` × `height` image (Model Studio's rule for Qwen-VL). */
export function tokensForPixels(width: number, height: number): number {
  if (!(width > 0 && height > 0)) return maxImageTokens;
  const minPixels = minTokens * patch * patch;
  const maxPixels = maxTokens * patch * patch;
  let h = Math.max(patch, Math.round(height / patch) * patch);
  let w = Math.max(patch, Math.round(width / patch) * patch);
  if (h * w > maxPixels) {
    const beta = Math.sqrt((height * width) / maxPixels);
    h = Math.max(patch, Math.floor(height / beta / patch) * patch);
    w = Math.max(patch, Math.floor(width / beta / patch) * patch);
  } else if (h * w < minPixels) {
    const beta = Math.sqrt(minPixels / (height * width));
    h = Math.ceil((height * beta) / patch) * patch;
    w = Math.ceil((width * beta) / patch) * patch;
  }
  return (h * w) / (patch * patch) + markerTokens;
}

/** Width and height from a PNG, WebP or GIF header, or undefined. */
export function readImageSize(header: Uint8Array): { width: number; height: number } | undefined {
  const at = (i: number) => header[i] ?? 0;
  const ascii = (from: number, n: number) =>
    String.fromCharCode(...Array.from({ length: n }, (_, i) => at(from + i)));
  if (at(0) === 0x89 && ascii(1, 3) === "PNG" && ascii(12, 4) === "IHDR") {
    const u32 = (i: number) => ((at(i) << 24) | (at(i + 1) << 16) | (at(i + 2) << 8) | at(i + 3)) >>> 0;
    return sized(u32(16), u32(20));
  }
  if (ascii(0, 4) === "RIFF" && ascii(8, 4) === "WEBP") {
    const chunk = ascii(12, 4);
    if (chunk === "VP8X")
      return sized(
        1 + (at(24) | (at(25) << 8) | (at(26) << 16)),
        1 + (at(27) | (at(28) << 8) | (at(29) << 16)),
      );
    if (chunk === "VP8L" && at(20) === 0x2f) {
      const bits = (at(21) | (at(22) << 8) | (at(23) << 16) | (at(24) << 24)) >>> 0;
      return sized(1 + (bits & 0x3fff), 1 + ((bits >>> 14) & 0x3fff));
    }
    if (chunk === "VP8 " && at(23) === 0x9d && at(24) === 0x01 && at(25) === 0x2a)
      return sized((at(26) | (at(27) << 8)) & 0x3fff, (at(28) | (at(29) << 8)) & 0x3fff);
    return undefined;
  }
  if (ascii(0, 3) === "GIF") return sized(at(6) | (at(7) << 8), at(8) | (at(9) << 8));
  return undefined;
}

function sized(width: number, height: number) {
  return width > 0 && height > 0 ? { width, height } : undefined;
}

/** Base64 characters that hold every header field read above (30 bytes). */
const headerChars = 40;

/** Tokens of an image given as base64 (no `data:` prefix); only its header is decoded. */
export function imageTokens(base64: FrameText): number {
  // A stand-in (known-frame.ts) keeps its first characters: its text is not rebuilt for this.
  const head = typeof base64 === "string" ? base64.slice(0, headerChars) : base64.prefix(headerChars);
  const size = readImageSize(Buffer.from(head, "base64"));
  return size ? tokensForPixels(size.width, size.height) : maxImageTokens;
}

const dataUrlHead = /^data:[^;,]*;base64,/;

/** Tokens of an image given as a data URL; any other URL counts as the most an image costs. */
export function imageUrlTokens(url: string): number {
  const head = dataUrlHead.exec(url.slice(0, 100));
  return head ? imageTokens(url.slice(head[0].length, head[0].length + headerChars)) : maxImageTokens;
}
