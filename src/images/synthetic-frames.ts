/**
 * Deterministic synthetic RGBA frames: a camera-like scene (smooth lighting, a few
 * objects, per-channel sensor noise) and a flat screenshot-like frame. Used to warm
 * the encoder up at start-up with a real-sized frame, and by tests and benches.
 */

import { seededRandom } from "../lib/seeded-random.ts";
import { writePng } from "./write-png.ts";

export interface RgbaFrame {
  width: number;
  height: number;
  data: Uint8Array;
}

function clampByte(value: number): number {
  return value < 0 ? 0 : value > 255 ? 255 : Math.round(value);
}

/** A lit room with a table and two objects, plus ±`noise` sensor noise per channel. */
export function cameraLikeFrame(width: number, height: number, seed = 1, noise = 6): RgbaFrame {
  const random = seededRandom(seed);
  const data = new Uint8Array(width * height * 4);
  const objects = [0, 1].map(() => ({
    cx: random() * width,
    cy: height * (0.4 + random() * 0.4),
    r: Math.max(1, Math.min(width, height) * (0.08 + random() * 0.1)),
    colour: [random() * 255, random() * 255, random() * 255] as const,
  }));
  const column = Float64Array.from({ length: width }, (_, x) =>
    Math.cos(((x / width - 0.3) * Math.PI) / 1.5),
  );
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const light = 0.55 + 0.45 * (column[x] ?? 0) * (1 - y / (2 * height));
      let r = 170 * light;
      let g = 160 * light;
      let b = 140 * light;
      if (y > height * 0.6) {
        r = 120 * light;
        g = 80 * light;
        b = 50 * light;
      }
      for (const o of objects) {
        const dx = x - o.cx;
        const dy = y - o.cy;
        if (dx * dx + dy * dy < o.r * o.r) {
          const shade = 0.6 + 0.4 * (1 - (dx + dy) / (2 * o.r));
          r = o.colour[0] * shade;
          g = o.colour[1] * shade;
          b = o.colour[2] * shade;
        }
      }
      const i = (y * width + x) * 4;
      data[i] = clampByte(r + (random() * 2 - 1) * noise);
      data[i + 1] = clampByte(g + (random() * 2 - 1) * noise);
      data[i + 2] = clampByte(b + (random() * 2 - 1) * noise);
      data[i + 3] = 255;
    }
  }
  return { width, height, data };
}

/** Flat panels, a title bar and rows of "text" strokes: what a desktop screenshot compresses like. */
export function screenshotLikeFrame(width: number, height: number, seed = 2): RgbaFrame {
  const random = seededRandom(seed);
  const data = new Uint8Array(width * height * 4);
  const sidebar = Math.floor(width * 0.2);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let colour: readonly [number, number, number] = [250, 250, 250];
      if (y < 32) colour = [40, 44, 52];
      else if (x < sidebar) colour = [235, 238, 242];
      const line = Math.floor((y - 40) / 18);
      const inText = y > 40 && (y - 40) % 18 < 10 && x > sidebar + 16 && x < width - 16;
      if (inText && ((x >> 3) * 31 + line * 17) % 7 !== 0 && (x + line * 13) % 5 < 3) colour = [30, 30, 30];
      const i = (y * width + x) * 4;
      data[i] = colour[0];
      data[i + 1] = colour[1];
      data[i + 2] = colour[2];
      data[i + 3] = 255;
    }
  }
  // A few coloured buttons.
  for (let k = 0; k < 6; k++) {
    const bx = Math.floor(random() * (width - 80));
    const by = Math.floor(32 + random() * Math.max(1, height - 64));
    for (let y = by; y < Math.min(height, by + 24); y++) {
      for (let x = bx; x < Math.min(width, bx + 80); x++) {
        const i = (y * width + x) * 4;
        data[i] = 30;
        data[i + 1] = 120;
        data[i + 2] = 220;
      }
    }
  }
  return { width, height, data };
}

/** `cameraLikeFrame` as an 8-bit RGBA PNG file: a robot camera's frame as a client sends it. */
export function cameraLikePng(width: number, height: number, seed = 1): Uint8Array {
  const frame = cameraLikeFrame(width, height, seed);
  return writePng({ width, height, colourType: 6, bitDepth: 8, rows: frame.data });
}
