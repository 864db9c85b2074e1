import { expect, test } from "bun:test";
import type { Codecs, RgbaImage } from "./codecs.ts";
import { webpSettingsSchema } from "./settings.ts";
import { warmUpCodecs } from "./warm-up.ts";

test("encodes one real-sized frame with the configured settings", () => {
  const seen: { image: RgbaImage; method: number }[] = [];
  const codecs: Codecs = {
    decodePng: () => {
      throw new Error("unused");
    },
    encodeWebpLossless: (image, settings) => {
      seen.push({ image, method: settings.method });
      return new Uint8Array([1]);
    },
    decodeWebp: () => ({ width: 1, height: 1, data: new Uint8Array(4) }),
  };
  const ms = warmUpCodecs(codecs, webpSettingsSchema.parse({ method: 3 }));
  expect(ms).toBeGreaterThanOrEqual(0);
  expect(seen.map((s) => [s.image.width, s.image.height, s.image.data.length, s.method])).toEqual([
    [640, 480, 640 * 480 * 4, 3],
  ]);
});
