import { expect, test } from "bun:test";
import fc from "fast-check";
import { palettePng, rgb16Png, rgbNoisePng } from "./generate-png.ts";
import { inspectPng, inspectPngBase64 } from "./inspect-png.ts";

const good = rgbNoisePng(7, 5).png;

test("reads size, bit depth and colour type from IHDR", () => {
  expect(inspectPng(good)).toEqual({
    ok: true,
    width: 7,
    height: 5,
    bitDepth: 8,
    colourType: 2,
    animated: false,
  });
  expect(inspectPng(rgb16Png(3, 2).png)).toMatchObject({ ok: true, bitDepth: 16 });
  expect(inspectPng(palettePng(3, 2, 4).png)).toMatchObject({ ok: true, bitDepth: 4, colourType: 3 });
});

test("gives a reason for what is not a PNG", () => {
  expect(inspectPng(new Uint8Array([0xff, 0xd8, 0xff, 0xe0]))).toEqual({
    ok: false,
    reason: "no PNG signature",
  });
  expect(inspectPng(good.subarray(0, 20))).toEqual({ ok: false, reason: "missing IHDR chunk" });
  expect(inspectPng(good.subarray(0, good.length - 12))).toEqual({
    ok: false,
    reason: "truncated (no IEND chunk)",
  });
  const badDepth = new Uint8Array(good);
  badDepth[24] = 3;
  expect(inspectPng(badDepth)).toEqual({ ok: false, reason: "invalid colour type 2 with bit depth 3" });
  const zero = new Uint8Array(good);
  zero.set([0, 0, 0, 0], 16);
  expect(inspectPng(zero)).toMatchObject({ ok: false, reason: "invalid size 0x5" });
});

test("inspectPngBase64 reads the same from the base64 text as inspectPng from the bytes", () => {
  const pngs = [good, rgb16Png(3, 2).png, palettePng(9, 4, 2).png, rgbNoisePng(40, 30, 3).png];
  fc.assert(
    fc.property(
      fc.constantFrom(...pngs),
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 3 }),
      fc.nat(),
      fc.boolean(),
      (png, edits, cut, pad) => {
        const bytes = new Uint8Array(png);
        for (const [at, value] of edits) bytes[at % bytes.length] = value;
        const cutBytes = cut % 5 === 0 ? bytes.subarray(0, cut % bytes.length) : bytes;
        const text = Buffer.from(cutBytes).toString("base64");
        const base64 = pad ? text : text.replace(/=+$/, "");
        expect(inspectPngBase64(base64)).toEqual(inspectPng(cutBytes));
      },
    ),
    { numRuns: 500 },
  );
  // Whitespace in the text is allowed (it is decoded whole).
  const wrapped = Buffer.from(good)
    .toString("base64")
    .replace(/(.{20})/g, "$1\n");
  expect(inspectPngBase64(wrapped)).toEqual(inspectPng(good));
});
