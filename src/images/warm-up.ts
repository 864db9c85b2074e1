/**
 * One encode of a real-sized frame at start-up: the first WebP encode after loading
 * the WASM costs ~200 ms (measured), later ones ~25 ms for the same 640×480 frame.
 */
import type { Codecs } from "./codecs.ts";
import type { WebpSettings } from "./settings.ts";
import { cameraLikeFrame } from "./synthetic-frames.ts";

/** Encodes (and decodes back) a 640×480 noisy frame once; returns how long it took in ms. */
export function warmUpCodecs(codecs: Codecs, settings: WebpSettings): number {
  const started = performance.now();
  const frame = cameraLikeFrame(640, 480, 42);
  const webp = codecs.encodeWebpLossless(frame, settings);
  codecs.decodeWebp(webp);
  return performance.now() - started;
}
