import { expect, test } from "bun:test";
import { palettePng, rgb16Png, rgbNoisePng } from "./generate-png.ts";
import { inspectPng } from "./inspect-png.ts";

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
