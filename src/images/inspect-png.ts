/**
 * Reads a PNG's structure without decoding pixels: the signature, IHDR (size, bit
 * depth, colour type) and the chunk list (spec: https://www.w3.org/TR/png-3/#5Chunk-layout).
 * Spots what the converter must not convert (16-bit samples, animation) and gives a
 * readable reason for corrupt data before the WASM decoder sees it (its own error is
 * only "`unwrap_throw` failed").
 */
import type { FrameText } from "../lib/known-frame.ts";
import { knownFact, type TextHold } from "../lib/known-texts.ts";
export type PngInspection =
  | {
      ok: true;
      width: number;
      height: number;
      /** Bits per sample (IHDR byte 24): 1, 2, 4, 8 or 16. */
      bitDepth: number;
      colourType: number;
      /** Has an acTL chunk (APNG): a decoder gives only the first frame. */
      animated: boolean;
    }
  | { ok: false; reason: string };

const signature = [137, 80, 78, 71, 13, 10, 26, 10];
const validDepths: Record<number, number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

/** A PNG's bytes: `length` in all, and `n` of them from an offset (fewer at the end). */
type PngBytes = { length: number; at(offset: number, n: number): Uint8Array };

function chunkType(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at] ?? 0, bytes[at + 1] ?? 0, bytes[at + 2] ?? 0, bytes[at + 3] ?? 0);
}

const uint32 = (bytes: Uint8Array, at: number) =>
  (((bytes[at] ?? 0) << 24) |
    ((bytes[at + 1] ?? 0) << 16) |
    ((bytes[at + 2] ?? 0) << 8) |
    (bytes[at + 3] ?? 0)) >>>
  0;

export function inspectPng(bytes: Uint8Array): PngInspection {
  return inspect({ length: bytes.length, at: (offset, n) => bytes.subarray(offset, offset + n) });
}

/**
 * The same inspection of the bytes a base64 text decodes to, decoding only the few bytes
 * it reads (the header and each chunk's length and type), never the image data: a camera
 * history resends every frame, and one no longer cached is checked on every turn, whether
 * or not it is sent. The caller has checked the text is base64 (see base64.ts).
 */
export function inspectPngBase64(base64: FrameText, texts?: TextHold): PngInspection {
  // A frame resent every turn is inspected once, given the request's hold (known-texts.ts); the answer is frozen, being shared.
  // A stand-in's is read from its blob's bytes, without rebuilding its text (known-frame.ts).
  if (typeof base64 !== "string")
    return base64.factOfBytes("png_inspection", (bytes) => Object.freeze(inspectPng(bytes)));
  return knownFact(texts, base64, "png_inspection", (text) => Object.freeze(inspectFromBase64(text)));
}

function inspectFromBase64(base64: string): PngInspection {
  // Whitespace moves characters off the 4-characters-per-3-bytes grid: decode it all (rare).
  if (/[\t\n\f\r ]/.test(base64)) return inspectPng(Buffer.from(base64, "base64"));
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return inspect({
    length: Math.floor(((base64.length - padding) * 3) / 4),
    at(offset, n) {
      const first = Math.floor(offset / 3);
      const quads = base64.slice(first * 4, Math.ceil((offset + n) / 3) * 4);
      const skip = offset - first * 3;
      return Buffer.from(quads, "base64").subarray(skip, skip + n);
    },
  });
}

function inspect(png: PngBytes): PngInspection {
  const head = png.at(0, 33);
  if (png.length < 8 || signature.some((b, i) => head[i] !== b))
    return { ok: false, reason: "no PNG signature" };
  if (png.length < 33 || chunkType(head, 12) !== "IHDR" || uint32(head, 8) !== 13) {
    return { ok: false, reason: "missing IHDR chunk" };
  }
  const width = uint32(head, 16);
  const height = uint32(head, 20);
  const bitDepth = head[24] ?? 0;
  const colourType = head[25] ?? 0;
  if (width === 0 || height === 0) return { ok: false, reason: `invalid size ${width}x${height}` };
  if (!validDepths[colourType]?.includes(bitDepth)) {
    return { ok: false, reason: `invalid colour type ${colourType} with bit depth ${bitDepth}` };
  }
  let animated = false;
  let sawData = false;
  let at = 8;
  for (;;) {
    if (at + 12 > png.length) return { ok: false, reason: "truncated (no IEND chunk)" };
    const chunk = png.at(at, 8);
    const length = uint32(chunk, 0);
    const type = chunkType(chunk, 4);
    if (at + 12 + length > png.length) return { ok: false, reason: `truncated ${type} chunk` };
    if (type === "acTL") animated = true;
    if (type === "IDAT") sawData = true;
    if (type === "IEND") break;
    at += 12 + length;
  }
  if (!sawData) return { ok: false, reason: "no IDAT chunk" };
  return { ok: true, width, height, bitDepth, colourType, animated };
}
