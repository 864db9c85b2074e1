/**
 * PNG bytes → lossless WebP bytes, the one heavy step of the image pipeline, behind
 * one interface: in a worker pool (conversion-pool.ts, what the sidecar runs) or on
 * the calling thread (tests, tools). Both use the same codecs and settings, so the
 * bytes are the same.
 */

import { errorMessage } from "../lib/error-message.ts";
import type { ConversionCodecs } from "./codecs.ts";
import type { WebpSettings } from "./settings.ts";

/** A PNG the decoder rejected (corrupt data): the caller names the request field. */
export class PngDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PngDecodeError";
  }
}

export interface PngToWebp {
  /** Rejects with PngDecodeError when the PNG does not decode. */
  convert(png: Uint8Array, settings: WebpSettings): Promise<{ webp: Uint8Array; ms: number }>;
}

export function convertOnThisThread(codecs: ConversionCodecs): PngToWebp {
  return {
    async convert(png, settings) {
      const started = performance.now();
      let image: ReturnType<ConversionCodecs["decodePng"]>;
      try {
        image = codecs.decodePng(png);
      } catch (error) {
        throw new PngDecodeError(errorMessage(error));
      }
      const webp = codecs.encodeWebpLossless(image, settings);
      return { webp, ms: performance.now() - started };
    },
  };
}
