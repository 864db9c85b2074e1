/**
 * Entry for the compiled-binary image test: converts generated PNGs through the real
 * converter in the worker pool (Workers with their own embedded WASM codecs), checks
 * them with codecs loaded on the main thread, and prints, as JSON, whether each WebP
 * decodes to exactly the PNG's pixels. Run from an empty directory with no node_modules.
 */

import { loadCodecs } from "../../src/images/codecs.ts";
import { createConversionPool } from "../../src/images/conversion-pool.ts";
import { createImageConverter } from "../../src/images/convert-request.ts";
import { greyPng, palettePng, rgbaTransparentPng, rgbNoisePng } from "../../src/images/generate-png.ts";
import { createImageCache } from "../../src/images/image-cache.ts";
import { webpSettingsSchema } from "../../src/images/settings.ts";
import { textOf } from "../../src/lib/known-frame.ts";

const codecs = await loadCodecs();
const settings = webpSettingsSchema.parse({});
const pool = createConversionPool(2);
const warmUp = await pool.warmUp(settings);
const converter = createImageConverter({
  converter: pool,
  settings,
  cache: createImageCache(64 * 1024 * 1024),
});
const samples = [rgbNoisePng(64, 48), rgbaTransparentPng(33, 17), greyPng(20, 20, 4), palettePng(15, 9, 8)];
const { request, stats } = await converter.convertRequest({
  model: "m",
  tools: [],
  ignored: [],
  messages: [
    {
      role: "user",
      content: samples.map((s) => ({
        type: "image" as const,
        mediaType: "image/png",
        data: s.png.toBase64(),
      })),
    },
  ],
});
const message = request.messages[0];
const parts = message?.role === "user" ? message.content : [];
const results = samples.map((sample, i) => {
  const part = parts[i];
  if (part?.type !== "image") return { kind: sample.kind, pixelsEqual: false };
  const fromPng = codecs.decodePng(sample.png);
  const fromWebp = codecs.decodeWebp(Uint8Array.fromBase64(textOf(part.data)));
  const pixelsEqual =
    part.mediaType === "image/webp" &&
    fromWebp.width === fromPng.width &&
    fromWebp.height === fromPng.height &&
    Buffer.from(fromWebp.data).equals(Buffer.from(fromPng.data));
  return { kind: sample.kind, mediaType: part.mediaType, pixelsEqual };
});
console.log(JSON.stringify({ cwd: process.cwd(), warmUp, converted: stats.converted, results }));
await pool.close();
