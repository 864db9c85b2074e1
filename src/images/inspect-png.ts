/**
 * Reads a PNG's structure without decoding pixels: the signature, IHDR (size, bit
 * depth, colour type) and the chunk list (spec: https://www.w3.org/TR/png-3/#5Chunk-layout).
 * Spots what the converter must not convert (16-bit samples, animation) and gives a
 * readable reason for corrupt data before the WASM decoder sees it (its own error is
 * only "`unwrap_throw` failed").
 */

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

function chunkType(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at] ?? 0, bytes[at + 1] ?? 0, bytes[at + 2] ?? 0, bytes[at + 3] ?? 0);
}

export function inspectPng(bytes: Uint8Array): PngInspection {
  if (bytes.length < 8 || signature.some((b, i) => bytes[i] !== b))
    return { ok: false, reason: "no PNG signature" };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 33 || chunkType(bytes, 12) !== "IHDR" || view.getUint32(8) !== 13) {
    return { ok: false, reason: "missing IHDR chunk" };
  }
  const width = view.getUint32(16);
  const height = view.getUint32(20);
  const bitDepth = bytes[24] ?? 0;
  const colourType = bytes[25] ?? 0;
  if (width === 0 || height === 0) return { ok: false, reason: `invalid size ${width}x${height}` };
  if (!validDepths[colourType]?.includes(bitDepth)) {
    return { ok: false, reason: `invalid colour type ${colourType} with bit depth ${bitDepth}` };
  }
  let animated = false;
  let sawData = false;
  let at = 8;
  for (;;) {
    if (at + 12 > bytes.length) return { ok: false, reason: "truncated (no IEND chunk)" };
    const length = view.getUint32(at);
    const type = chunkType(bytes, at + 4);
    if (at + 12 + length > bytes.length) return { ok: false, reason: `truncated ${type} chunk` };
    if (type === "acTL") animated = true;
    if (type === "IDAT") sawData = true;
    if (type === "IEND") break;
    at += 12 + length;
  }
  if (!sawData) return { ok: false, reason: "no IDAT chunk" };
  return { ok: true, width, height, bitDepth, colourType, animated };
}
