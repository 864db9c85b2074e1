/**
 * The sidecar's PNG→WebP converter: a worker pool of `workers` workers, or — with 0
 * — conversion on the event loop itself (the layout before the pool, kept as a
 * measured baseline and for machines where threads are unwanted).
 *
 * Returns at once: the codecs load and warm up in the background (`warmedUp`), so
 * the server can listen while they do. A conversion asked for meanwhile waits in the
 * workers' queue behind the warm-up; readiness (/health/ready) waits for `warmedUp`.
 */
import { loadConversionCodecs } from "./codecs.ts";
import { createConversionPool, type WarmUpTimes } from "./conversion-pool.ts";
import { convertOnThisThread, type PngToWebp } from "./png-to-webp.ts";
import type { WebpSettings } from "./settings.ts";
import { warmUpCodecs } from "./warm-up.ts";

export type ImageConversion = {
  converter: PngToWebp;
  workers: number;
  /** Once the codecs are warm (rejects if they failed to load or warm up). */
  warmedUp: Promise<WarmUpTimes>;
  close(): Promise<void>;
};

export function startImageConversion(workers: number, settings: WebpSettings): ImageConversion {
  if (workers === 0) {
    const codecs = loadConversionCodecs();
    const warmedUp = codecs.then(async (loaded) => ({
      warmUpMs: await warmUpCodecs(loaded, settings),
      instantiateMs: [],
    }));
    return {
      converter: {
        convert: async (png, converting) => convertOnThisThread(await codecs).convert(png, converting),
      },
      workers,
      warmedUp,
      close: async () => {},
    };
  }
  const pool = createConversionPool(workers);
  return { converter: pool, workers: pool.size, warmedUp: pool.warmUp(settings), close: () => pool.close() };
}
