/**
 * One conversion of a camera-sized frame at start-up: the first WebP encode after the
 * WASM loads costs ~200 ms (measured), later ones ~25 ms for the same 640×480 frame,
 * and only a real-sized frame removes that (bench/warm-up.ts). The frame is a PNG
 * embedded in the binary (`cameraLikeFrame(640, 480, 42)` as an RGB PNG, what a camera
 * sends), converted as a client's frame is: decoded, then encoded. Generating the same
 * pixels in JavaScript cost ~70 ms of CPU on the start-up path; the first decode costs
 * about as much (60–110 ms of CPU measured), but it warms the PNG decoder the first
 * client frame needs, which it otherwise paid for after ready.
 */
import type { ConversionCodecs } from "./codecs.ts";
import type { WebpSettings } from "./settings.ts";
import warmUpPngPath from "./warm-up-frame.png" with { type: "file" };

export function readWarmUpPng(): Promise<Uint8Array> {
  return Bun.file(warmUpPngPath).bytes();
}

/** Converts the warm-up frame once; returns how long it took in ms. */
export async function warmUpCodecs(codecs: ConversionCodecs, settings: WebpSettings): Promise<number> {
  const started = performance.now();
  codecs.encodeWebpLossless(codecs.decodePng(await readWarmUpPng()), settings);
  return performance.now() - started;
}
