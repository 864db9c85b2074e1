/**
 * Settings for PNG→WebP conversion.
 *
 * The default effort is cwebp's `-z 1` (method 1, quality 20): on camera-like noisy
 * frames more effort buys a few percent of bytes for several times the time
 * (docs/decisions/0004-lossless-webp-in-wasm.md, measured with bench/images.ts).
 * `exact` is fixed to true: without it libwebp may rewrite the RGB of fully
 * transparent pixels, and the conversion promises identical decoded pixels.
 */
import { z } from "zod";

export const webpSettingsSchema = z.object({
  /** libwebp method (effort) 0–6; with quality, the pair cwebp's `-z` levels set. */
  method: z.number().int().min(0).max(6).default(1),
  /** For lossless, how hard to search (0–100), not a loss of fidelity. */
  quality: z.number().min(0).max(100).default(20),
  exact: z.literal(true).default(true),
});
export type WebpSettings = z.infer<typeof webpSettingsSchema>;
