import { beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import { type Codecs, loadCodecs } from "../images/codecs.ts";
import { solidColourPng } from "../images/generate-png.ts";
import { webpSettingsSchema } from "../images/settings.ts";
import {
  imageTokens,
  imageUrlTokens,
  maxImageTokens,
  readImageSize,
  tokensForPixels,
} from "./image-tokens.ts";

let codecs: Codecs;
beforeAll(async () => {
  codecs = await loadCodecs();
});

test("Model Studio's rule: 28×28 patches, 4 to 1,280 of them, plus 2 markers", () => {
  // 1280×720 rounds to 1288×728: 46 × 26 patches.
  expect(tokensForPixels(1280, 720)).toBe(46 * 26 + 2);
  // 224×448 is already on the grid: 8 × 16.
  expect(tokensForPixels(224, 448)).toBe(8 * 16 + 2);
  // A tiny image is scaled up to the 4-patch minimum.
  expect(tokensForPixels(64, 48)).toBe(4 + 2);
  expect(tokensForPixels(1, 1)).toBe(4 + 2);
  // A large one is scaled down under the 1,280-patch maximum.
  expect(tokensForPixels(4000, 3000)).toBeLessThanOrEqual(maxImageTokens);
  expect(tokensForPixels(4000, 3000)).toBeGreaterThan(1200);
});

test("property: never under the minimum or over the maximum; within the limits, its patches", () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 8000 }), fc.integer({ min: 1, max: 8000 }), (w, h) => {
      const tokens = tokensForPixels(w, h);
      expect(Number.isInteger(tokens)).toBe(true);
      expect(tokens).toBeGreaterThanOrEqual(4 + 2);
      expect(tokens).toBeLessThanOrEqual(maxImageTokens);
      // Each side rounds to the nearest multiple of 28: at most 14 pixels either way.
      if (w >= 56 && h >= 56 && (w + 14) * (h + 14) <= 1280 * 28 * 28)
        expect(Math.abs(tokens - 2 - (w * h) / 784)).toBeLessThanOrEqual((w + h) / 56 + 1);
    }),
    { numRuns: 500 },
  );
});

test("the size comes from a PNG's or a lossless WebP's header; the image is not decoded", () => {
  const png = solidColourPng(1280, 720, [10, 20, 30]);
  expect(readImageSize(png)).toEqual({ width: 1280, height: 720 });
  const webp = codecs.encodeWebpLossless(
    codecs.decodePng(solidColourPng(333, 77, [1, 2, 3])),
    webpSettingsSchema.parse({}),
  );
  expect(readImageSize(webp)).toEqual({ width: 333, height: 77 });
  const base64 = Buffer.from(png).toString("base64");
  expect(imageTokens(base64)).toBe(tokensForPixels(1280, 720));
  // Only the header is read: the rest of the data may be anything.
  expect(imageTokens(base64.slice(0, 40) + "A".repeat(1000))).toBe(tokensForPixels(1280, 720));
  expect(imageUrlTokens(`data:image/png;base64,${base64}`)).toBe(tokensForPixels(1280, 720));
});

test("VP8X and lossy VP8 headers, and GIF", () => {
  const vp8x = new Uint8Array(30);
  vp8x.set(Buffer.from("RIFF\0\0\0\0WEBPVP8X"), 0);
  vp8x.set([639 & 0xff, 639 >> 8, 0, 479 & 0xff, 479 >> 8, 0], 24);
  expect(readImageSize(vp8x)).toEqual({ width: 640, height: 480 });
  const vp8 = new Uint8Array(30);
  vp8.set(Buffer.from("RIFF\0\0\0\0WEBPVP8 "), 0);
  vp8.set([0x9d, 0x01, 0x2a, 800 & 0xff, 800 >> 8, 600 & 0xff, 600 >> 8], 23);
  expect(readImageSize(vp8)).toEqual({ width: 800, height: 600 });
  const gif = new Uint8Array(10);
  gif.set(Buffer.from("GIF89a"), 0);
  gif.set([100, 0, 50, 0], 6);
  expect(readImageSize(gif)).toEqual({ width: 100, height: 50 });
});

test("an image whose size cannot be read counts as the most an image costs", () => {
  expect(imageTokens("A".repeat(500))).toBe(maxImageTokens);
  expect(imageTokens("")).toBe(maxImageTokens);
  expect(imageUrlTokens("https://example.com/frame.png")).toBe(maxImageTokens);
  expect(readImageSize(new Uint8Array([0xff, 0xd8, 0xff]))).toBeUndefined();
});
