import { beforeAll, expect, test } from "bun:test";
import { type Codecs, loadCodecs } from "./codecs.ts";
import { rgb16Png, sampleEightBitPngs, solidColourPng } from "./generate-png.ts";
import { inspectPng } from "./inspect-png.ts";
import { crc32 } from "./write-png.ts";

let codecs: Codecs;
const samples = sampleEightBitPngs();
beforeAll(async () => {
  codecs = await loadCodecs();
});

test("crc32 matches the standard check value", () => {
  expect(crc32(new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
});

test("every generated PNG decodes (with an independent decoder) to the pixels it claims", () => {
  for (const sample of samples) {
    const decoded = codecs.decodePng(sample.png);
    expect([sample.kind, decoded.width, decoded.height]).toEqual([
      sample.kind,
      sample.rgba.width,
      sample.rgba.height,
    ]);
    expect(Buffer.from(decoded.data).equals(Buffer.from(sample.rgba.data))).toBe(true);
  }
});

test("the kinds really are what they say (colour type, bit depth, size)", () => {
  const kinds = Object.fromEntries(
    samples.map((s) => {
      const header = inspectPng(s.png);
      if (!header.ok) throw new Error(header.reason);
      return [s.kind, `${header.colourType}/${header.bitDepth} ${header.width}x${header.height}`];
    }),
  );
  expect(kinds).toMatchObject({
    "rgb-noise-64x48": "2/8 64x48",
    "rgba-transparent-64x48": "6/8 64x48",
    "grey8-37x23": "0/8 37x23",
    "grey2-37x23": "0/2 37x23",
    "grey-alpha-40x30": "4/8 40x30",
    "palette8-41x29": "3/8 41x29",
    "palette4-41x29": "3/4 41x29",
    "tiny-1x1": "6/8 1x1",
    "rgb-noise-1920x1080": "2/8 1920x1080",
  });
  const sixteen = inspectPng(rgb16Png(5, 4).png);
  expect(sixteen.ok && sixteen.bitDepth).toBe(16);
});

test("the 1x1 sample is fully transparent with non-zero RGB", () => {
  const tiny = samples.find((s) => s.kind === "tiny-1x1");
  expect(tiny?.rgba.data[3]).toBe(0);
  expect(tiny?.rgba.data[0]).not.toBe(0);
});

test("solidColourPng is one colour everywhere", () => {
  const decoded = codecs.decodePng(solidColourPng(3, 2, [10, 20, 30]));
  expect(Array.from(decoded.data)).toEqual(Array(6).fill([10, 20, 30, 255]).flat());
});
