/**
 * A small, correct PNG writer (spec: https://www.w3.org/TR/png-3/) for every colour
 * type and bit depth, with per-row adaptive filtering (libpng's minimum-sum-of-absolute
 * -differences heuristic) and zlib from `node:zlib`. @jsquash/png only writes RGBA, and
 * its default loader does not work in a compiled binary; this needs no WASM at all.
 */
import { deflateSync } from "node:zlib";

/** 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA. */
export type PngColourType = 0 | 2 | 3 | 4 | 6;
export type PngBitDepth = 1 | 2 | 4 | 8 | 16;

export interface PngImage {
  width: number;
  height: number;
  colourType: PngColourType;
  bitDepth: PngBitDepth;
  /** Unfiltered scanlines, concatenated; each row packed to whole bytes, 16-bit samples big-endian. */
  rows: Uint8Array;
  /** PLTE: RGB triplets (palette images). */
  palette?: Uint8Array;
  /** tRNS: alpha per palette entry, or the transparent colour key for grey/RGB. */
  transparency?: Uint8Array;
}

const channelsByColourType: Record<PngColourType, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };

/** Bytes in one unfiltered scanline. */
export function pngRowBytes(width: number, colourType: PngColourType, bitDepth: PngBitDepth): number {
  return Math.ceil((width * channelsByColourType[colourType] * bitDepth) / 8);
}

const crcTable = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** The CRC-32 PNG chunks carry (ISO 3309, as zlib computes it). */
export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = (crcTable[(c ^ (bytes[i] ?? 0)) & 0xff] ?? 0) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Filters every row with whichever of the five filters gives the smallest absolute sum. */
function filterRows(image: PngImage): Uint8Array {
  const rowBytes = pngRowBytes(image.width, image.colourType, image.bitDepth);
  const bpp = Math.max(1, (channelsByColourType[image.colourType] * image.bitDepth) / 8);
  const out = new Uint8Array((rowBytes + 1) * image.height);
  const zero = new Uint8Array(rowBytes);
  const candidates = [0, 1, 2, 3, 4].map(() => new Uint8Array(rowBytes));
  for (let y = 0; y < image.height; y++) {
    const row = image.rows.subarray(y * rowBytes, (y + 1) * rowBytes);
    const up = y === 0 ? zero : image.rows.subarray((y - 1) * rowBytes, y * rowBytes);
    let best = 0;
    let bestSum = Number.POSITIVE_INFINITY;
    for (let f = 0; f < 5; f++) {
      const dst = candidates[f] as Uint8Array;
      let sum = 0;
      for (let i = 0; i < rowBytes; i++) {
        const x = row[i] ?? 0;
        const a = i >= bpp ? (row[i - bpp] ?? 0) : 0;
        const b = up[i] ?? 0;
        const c = i >= bpp ? (up[i - bpp] ?? 0) : 0;
        const predictor = f === 0 ? 0 : f === 1 ? a : f === 2 ? b : f === 3 ? (a + b) >> 1 : paeth(a, b, c);
        const value = (x - predictor) & 0xff;
        dst[i] = value;
        sum += value < 128 ? value : 256 - value;
      }
      if (sum < bestSum) {
        bestSum = sum;
        best = f;
      }
    }
    out[y * (rowBytes + 1)] = best;
    out.set(candidates[best] as Uint8Array, y * (rowBytes + 1) + 1);
  }
  return out;
}

export function writePng(image: PngImage): Uint8Array {
  const expected = pngRowBytes(image.width, image.colourType, image.bitDepth) * image.height;
  if (image.rows.length !== expected) {
    throw new Error(`PNG rows hold ${image.rows.length} bytes, expected ${expected}`);
  }
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, image.width);
  view.setUint32(4, image.height);
  header[8] = image.bitDepth;
  header[9] = image.colourType;
  const parts = [
    new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk("IHDR", header),
    ...(image.palette ? [chunk("PLTE", image.palette)] : []),
    ...(image.transparency ? [chunk("tRNS", image.transparency)] : []),
    chunk("IDAT", new Uint8Array(deflateSync(filterRows(image)))),
    chunk("IEND", new Uint8Array(0)),
  ];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
