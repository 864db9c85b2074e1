import { expect, test } from "bun:test";
import type { ConversionCodecs, RgbaImage } from "./codecs.ts";
import { loadConversionCodecs } from "./codecs.ts";
import { rgbNoisePng } from "./generate-png.ts";
import { webpSettingsSchema } from "./settings.ts";
import { readWarmUpPng, warmUpCodecs } from "./warm-up.ts";

test("the embedded warm-up frame is the camera-like 640×480 frame, pixel for pixel", async () => {
  const codecs = await loadConversionCodecs();
  const decoded = codecs.decodePng(await readWarmUpPng());
  const expected = rgbNoisePng(640, 480, 42).rgba;
  expect([decoded.width, decoded.height]).toEqual([640, 480]);
  // If the generator changed: write the file again with
  // Bun.write("src/images/warm-up-frame.png", rgbNoisePng(640, 480, 42).png).
  expect(Buffer.from(decoded.data).equals(Buffer.from(expected.data))).toBe(true);
});

test("converts the real-sized frame once, decode then encode, with the configured settings", async () => {
  const seen: string[] = [];
  const codecs: ConversionCodecs = {
    decodePng: (bytes) => {
      seen.push(`decode ${bytes.length}`);
      return { width: 640, height: 480, data: new Uint8Array(640 * 480 * 4) };
    },
    encodeWebpLossless: (image: RgbaImage, settings) => {
      seen.push(`encode ${image.width}x${image.height} method ${settings.method}`);
      return new Uint8Array([1]);
    },
  };
  const ms = await warmUpCodecs(codecs, webpSettingsSchema.parse({ method: 3 }));
  expect(ms).toBeGreaterThanOrEqual(0);
  expect(seen).toEqual([`decode ${(await readWarmUpPng()).length}`, "encode 640x480 method 3"]);
});
