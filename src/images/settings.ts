/**
 * Settings for PNG→WebP conversion.
 *
 * Encoder defaults come from measurement (bench/images.ts, docs/measurements.md):
 * on camera-like noisy frames, lossless effort above cwebp's `-z 1` (method 1,
 * quality 20) buys ~1–5% of bytes for 3–4× the time, so `-z 1` is the default.
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
