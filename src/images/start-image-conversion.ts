/**
 * The sidecar's PNG→WebP converter, warmed up: a worker pool of `workers` workers,
 * or — with 0 — conversion on the event loop itself (the layout before the pool,
 * kept as a measured baseline and for machines where threads are unwanted).
 */
import { loadCodecs } from "./codecs.ts";
import { createConversionPool } from "./conversion-pool.ts";
import { convertOnThisThread, type PngToWebp } from "./png-to-webp.ts";
import type { WebpSettings } from "./settings.ts";
import { warmUpCodecs } from "./warm-up.ts";

export type ImageConversion = {
  converter: PngToWebp;
  workers: number;
  /** Each worker's warm-up (one entry when converting on the event loop). */
  warmUpMs: number[];
  close(): Promise<void>;
};

export async function startImageConversion(
  workers: number,
  settings: WebpSettings,
): Promise<ImageConversion> {
  if (workers === 0) {
    const codecs = await loadCodecs();
    const warmUpMs = [warmUpCodecs(codecs, settings)];
    return { converter: convertOnThisThread(codecs), workers, warmUpMs, close: async () => {} };
  }
  const pool = createConversionPool(workers);
  const warmUpMs = await pool.warmUp(settings);
  return { converter: pool, workers: pool.size, warmUpMs, close: () => pool.close() };
}
