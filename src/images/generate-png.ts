/**
 * Generated PNGs of every kind the converter must handle, for tests, benches, the
 * scripted upstream and the inert executor. Each generator returns the PNG bytes and
 * the 8-bit RGBA pixels a correct decoder must produce (16-bit ones: the 16-bit samples).
 * Written with write-png.ts (no WASM), so it also works inside the compiled binary.
 */
import { seededRandom } from "../lib/seeded-random.ts";
import { cameraLikeFrame, type RgbaFrame, screenshotLikeFrame } from "./synthetic-frames.ts";
import { type PngBitDepth, pngRowBytes, writePng } from "./write-png.ts";

export interface GeneratedPng {
  kind: string;
  png: Uint8Array;
  /** What the PNG decodes to as 8-bit RGBA (for 16-bit PNGs: the high bytes). */
  rgba: RgbaFrame;
}

function rgbRows(frame: RgbaFrame): Uint8Array {
  const rows = new Uint8Array(frame.width * frame.height * 3);
  for (let p = 0, q = 0; p < frame.data.length; p += 4, q += 3) {
    rows[q] = frame.data[p] ?? 0;
    rows[q + 1] = frame.data[p + 1] ?? 0;
    rows[q + 2] = frame.data[p + 2] ?? 0;
  }
  return rows;
}

function opaque(frame: RgbaFrame): RgbaFrame {
  const data = new Uint8Array(frame.data);
  for (let p = 3; p < data.length; p += 4) data[p] = 255;
  return { width: frame.width, height: frame.height, data };
}

/** RGB (colour type 2), camera-like with sensor noise. */
export function rgbNoisePng(width: number, height: number, seed = 1): GeneratedPng {
  const frame = cameraLikeFrame(width, height, seed);
  const png = writePng({ width, height, colourType: 2, bitDepth: 8, rows: rgbRows(frame) });
  return { kind: `rgb-noise-${width}x${height}`, png, rgba: frame };
}

/** RGB (colour type 2), flat screenshot-like frame. */
export function screenshotPng(width: number, height: number): GeneratedPng {
  const frame = screenshotLikeFrame(width, height);
  const png = writePng({ width, height, colourType: 2, bitDepth: 8, rows: rgbRows(frame) });
  return { kind: `screenshot-${width}x${height}`, png, rgba: frame };
}

/** One colour everywhere (the inert executor's camera). */
export function solidColourPng(
  width: number,
  height: number,
  rgb: readonly [number, number, number],
): Uint8Array {
  const rows = new Uint8Array(width * height * 3);
  for (let q = 0; q < rows.length; q += 3) rows.set(rgb, q);
  return writePng({ width, height, colourType: 2, bitDepth: 8, rows });
}

/**
 * RGBA (colour type 6): a fully transparent left third whose RGB is the noisy scene
 * (non-zero, which a non-exact encoder would be free to overwrite), a band of partial
 * alpha, the rest opaque.
 */
export function rgbaTransparentPng(width: number, height: number, seed = 3): GeneratedPng {
  const frame = cameraLikeFrame(width, height, seed);
  const data = frame.data;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      if (x < width / 3) {
        data[i] = (data[i] ?? 0) | 1;
        data[i + 3] = 0;
      } else if (y < height / 4) data[i + 3] = (x * 7 + y * 3) & 255;
    }
  }
  const png = writePng({ width, height, colourType: 6, bitDepth: 8, rows: new Uint8Array(data) });
  return { kind: `rgba-transparent-${width}x${height}`, png, rgba: frame };
}

/** Greyscale (colour type 0) at 8 bits, or packed at 1/2/4 bits. */
export function greyPng(width: number, height: number, bitDepth: 1 | 2 | 4 | 8 = 8, seed = 4): GeneratedPng {
  const random = seededRandom(seed);
  const max = (1 << bitDepth) - 1;
  const levels = new Uint8Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const base = ((x + y) / Math.max(1, width + height - 2)) * max;
      levels[y * width + x] = Math.max(0, Math.min(max, Math.round(base + (random() - 0.5) * max * 0.1)));
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let p = 0; p < levels.length; p++) {
    const grey = Math.round(((levels[p] ?? 0) * 255) / max);
    rgba.set([grey, grey, grey, 255], p * 4);
  }
  const png = writePng({
    width,
    height,
    colourType: 0,
    bitDepth,
    rows: packSamples(levels, width, height, bitDepth),
  });
  return { kind: `grey${bitDepth}-${width}x${height}`, png, rgba: { width, height, data: rgba } };
}

/** Grey with alpha (colour type 4), some pixels fully transparent. */
export function greyAlphaPng(width: number, height: number, seed = 5): GeneratedPng {
  const random = seededRandom(seed);
  const rows = new Uint8Array(width * height * 2);
  const rgba = new Uint8Array(width * height * 4);
  for (let p = 0; p < width * height; p++) {
    const grey = Math.floor(random() * 256);
    const alpha = p % 5 === 0 ? 0 : p % 5 === 1 ? 128 : 255;
    rows[p * 2] = grey;
    rows[p * 2 + 1] = alpha;
    rgba.set([grey, grey, grey, alpha], p * 4);
  }
  const png = writePng({ width, height, colourType: 4, bitDepth: 8, rows });
  return { kind: `grey-alpha-${width}x${height}`, png, rgba: { width, height, data: rgba } };
}

/** Palette (colour type 3) with a tRNS chunk making some entries transparent or translucent. */
export function palettePng(
  width: number,
  height: number,
  bitDepth: 1 | 2 | 4 | 8 = 8,
  seed = 6,
): GeneratedPng {
  const random = seededRandom(seed);
  const entries = 1 << bitDepth;
  const palette = new Uint8Array(entries * 3);
  for (let i = 0; i < palette.length; i++) palette[i] = Math.floor(random() * 256);
  const transparency = new Uint8Array(Math.min(entries, 4));
  transparency.set([0, 64, 200, 255].slice(0, transparency.length));
  const indices = new Uint8Array(width * height);
  for (let p = 0; p < indices.length; p++) indices[p] = Math.floor(random() * entries);
  const rgba = new Uint8Array(width * height * 4);
  for (let p = 0; p < indices.length; p++) {
    const index = indices[p] ?? 0;
    rgba.set(palette.subarray(index * 3, index * 3 + 3), p * 4);
    rgba[p * 4 + 3] = index < transparency.length ? (transparency[index] ?? 255) : 255;
  }
  const png = writePng({
    width,
    height,
    colourType: 3,
    bitDepth,
    rows: packSamples(indices, width, height, bitDepth),
    palette,
    transparency,
  });
  return { kind: `palette${bitDepth}-${width}x${height}`, png, rgba: { width, height, data: rgba } };
}

/** RGB at 16 bits per sample (colour type 2, bit depth 16): low bytes carry real detail. */
export function rgb16Png(width: number, height: number, seed = 7): GeneratedPng {
  const random = seededRandom(seed);
  const rows = new Uint8Array(width * height * 6);
  const rgba = new Uint8Array(width * height * 4);
  for (let p = 0; p < width * height; p++) {
    for (let c = 0; c < 3; c++) {
      const sample = Math.floor(random() * 65536);
      rows[p * 6 + c * 2] = sample >> 8;
      rows[p * 6 + c * 2 + 1] = sample & 255;
      rgba[p * 4 + c] = sample >> 8;
    }
    rgba[p * 4 + 3] = 255;
  }
  const png = writePng({ width, height, colourType: 2, bitDepth: 16, rows });
  return { kind: `rgb16-${width}x${height}`, png, rgba: { width, height, data: rgba } };
}

/** Packs one sample per byte into scanlines of `bitDepth` bits per sample. */
function packSamples(samples: Uint8Array, width: number, height: number, bitDepth: PngBitDepth): Uint8Array {
  if (bitDepth === 8) return samples;
  const rowBytes = pngRowBytes(width, 0, bitDepth);
  const rows = new Uint8Array(rowBytes * height);
  const perByte = 8 / bitDepth;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const shift = 8 - bitDepth * ((x % perByte) + 1);
      const at = y * rowBytes + Math.floor(x / perByte);
      rows[at] = (rows[at] ?? 0) | ((samples[y * width + x] ?? 0) << shift);
    }
  }
  return rows;
}

/** One of each 8-bit kind the converter must round-trip pixel-exactly. */
export function sampleEightBitPngs(): GeneratedPng[] {
  const tiny = rgbaTransparentPng(1, 1);
  return [
    rgbNoisePng(64, 48),
    rgbaTransparentPng(64, 48),
    greyPng(37, 23, 8),
    greyPng(37, 23, 2),
    greyAlphaPng(40, 30),
    palettePng(41, 29, 8),
    palettePng(41, 29, 4),
    palettePng(17, 9, 1),
    screenshotPng(160, 120),
    { ...tiny, kind: "tiny-1x1" },
    {
      kind: "solid-8x8",
      png: solidColourPng(8, 8, [200, 30, 90]),
      rgba: opaque(solidFrame(8, 8, [200, 30, 90])),
    },
    rgbNoisePng(1920, 1080, 9),
  ];
}

function solidFrame(width: number, height: number, rgb: readonly [number, number, number]): RgbaFrame {
  const data = new Uint8Array(width * height * 4);
  for (let p = 0; p < data.length; p += 4) data.set([rgb[0], rgb[1], rgb[2], 255], p);
  return { width, height, data };
}
