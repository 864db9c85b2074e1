import { beforeAll, describe, expect, test } from "bun:test";
import { type Codecs, loadCodecs } from "./codecs.ts";
import { rgbaTransparentPng, rgbNoisePng, sampleEightBitPngs } from "./generate-png.ts";
import { webpSettingsSchema } from "./settings.ts";

let codecs: Codecs;
beforeAll(async () => {
  codecs = await loadCodecs();
});
const settings = webpSettingsSchema.parse({});

function sameBytes(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  return Buffer.compare(Buffer.from(a as Uint8Array), Buffer.from(b as Uint8Array)) === 0;
}

describe("lossless round trip", () => {
  for (const sample of sampleEightBitPngs()) {
    test(`${sample.kind}: WebP decodes to the PNG's exact RGBA and size`, () => {
      const fromPng = codecs.decodePng(sample.png);
      const webp = codecs.encodeWebpLossless(fromPng, settings);
      expect(String.fromCharCode(...webp.subarray(12, 16))).toBe("VP8L");
      const fromWebp = codecs.decodeWebp(webp);
      expect([fromWebp.width, fromWebp.height]).toEqual([fromPng.width, fromPng.height]);
      expect(sameBytes(fromWebp.data, fromPng.data)).toBe(true);
    });
  }

  test("without exact, the RGB under transparent pixels is not kept (why exact is fixed on)", () => {
    const sample = rgbaTransparentPng(64, 48);
    const fromPng = codecs.decodePng(sample.png);
    const loose = { ...settings, exact: false as unknown as true };
    const fromWebp = codecs.decodeWebp(codecs.encodeWebpLossless(fromPng, loose));
    expect(sameBytes(fromWebp.data, fromPng.data)).toBe(false);
  });
});

describe("errors", () => {
  test("corrupt PNG and WebP throw, and the decoders keep working afterwards", () => {
    const good = rgbNoisePng(64, 48);
    const corrupt = new Uint8Array(good.png);
    corrupt[60] = (corrupt[60] ?? 0) ^ 0xff;
    expect(() => codecs.decodePng(corrupt)).toThrow();
    expect(() => codecs.decodeWebp(new Uint8Array([1, 2, 3]))).toThrow();
    expect(codecs.decodePng(good.png).width).toBe(good.rgba.width);
  });
});
