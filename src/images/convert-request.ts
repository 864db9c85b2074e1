/**
 * PNG → lossless WebP for every inline image in a hub request, at the upstream
 * boundary (docs/design.md §3). The decoded pixels and dimensions are identical: VP8L is
 * lossless and `exact` keeps the RGB under fully transparent pixels.
 *
 * What is not converted, and why (counted in `stats.passedThrough`):
 * - `not_png`: any other media type (JPEG, WebP, GIF…) goes upstream unchanged.
 * - `png_16bit`: lossless WebP holds 8 bits per sample, so a 16-bit PNG would lose its
 *   low bytes. It is passed through unchanged as PNG rather than silently degraded.
 * - `animated_png`: an APNG decodes to its first frame only; passed through unchanged.
 * Corrupt PNG data (or invalid base64, or non-PNG bytes labelled image/png) is a
 * SidecarError("invalid_request") naming the client's own field (the part's `source`,
 * e.g. input[3].output[1].image_url), else the hub location (messages[3].content[1]).
 *
 * The input request is never modified (the CLI's original is recorded as sent).
 */
import type { HubImagePart, HubPart, HubRequest } from "../hub/schema.ts";
import { decodeBase64, encodeBase64 } from "../lib/base64.ts";
import { SidecarError } from "../lib/errors.ts";
import { sha256Hex } from "../lib/sha256.ts";
import type { ImageCache } from "./image-cache.ts";
import { inspectPng } from "./inspect-png.ts";
import { PngDecodeError, type PngToWebp } from "./png-to-webp.ts";
import type { WebpSettings } from "./settings.ts";

export type PassThroughReason = "not_png" | "png_16bit" | "animated_png";

export interface ImageStats {
  /** Image parts seen. */
  images: number;
  /** PNGs encoded to WebP in this request (cache misses). */
  converted: number;
  /** PNGs whose WebP came from the image cache. */
  cacheHits: number;
  passedThrough: Record<PassThroughReason, number>;
  /** Decoded bytes of the PNGs replaced (converted + cache hits), and of their WebPs. */
  bytesBefore: number;
  bytesAfter: number;
  /** Time spent decoding PNGs and encoding WebPs (cache misses only). */
  encodeMs: number;
}

export interface ImageConverter {
  convertRequest(request: HubRequest): Promise<{ request: HubRequest; stats: ImageStats }>;
}

export interface ImageConverterDeps {
  /** Decode + encode: the worker pool in the sidecar (png-to-webp.ts). */
  converter: PngToWebp;
  settings: WebpSettings;
  /** Process-wide, keyed by the SHA-256 of the PNG bytes (image-cache.ts). */
  cache: ImageCache;
  /** PNGs whose header claims more pixels are refused before decoding (size-guard.ts). */
  maxPixels?: number;
  /** The episode converting (its cache entries are released when it ends). */
  owner?: string;
}

/** Decoded length of a base64 string, without decoding or scanning it (exact when it has no whitespace). */
export function base64ByteLength(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}

function emptyStats(): ImageStats {
  return {
    images: 0,
    converted: 0,
    cacheHits: 0,
    passedThrough: { not_png: 0, png_16bit: 0, animated_png: 0 },
    bytesBefore: 0,
    bytesAfter: 0,
    encodeMs: 0,
  };
}

function invalidPng(param: string, detail: string, cause?: unknown): SidecarError {
  return new SidecarError("invalid_request", `${param}: image/png data is not a valid PNG (${detail})`, {
    param,
    cause,
  });
}

/** An image part after its checks: left as it is, its WebP already cached, or a PNG to convert. */
type Checked =
  | { kind: "keep"; part: HubPart }
  | { kind: "cached"; part: HubImagePart; pngBytes: number; webp: Uint8Array }
  | { kind: "convert"; part: HubImagePart; param: string; png: Uint8Array; key: string };

export function createImageConverter(deps: ImageConverterDeps): ImageConverter {
  const { converter, settings, cache } = deps;

  /**
   * Everything that can refuse an image, without decoding it: its base64, its PNG header,
   * the pixel limit. Every image of a request passes this before any conversion starts,
   * so a refused request converts and caches nothing.
   */
  function check(part: HubPart, param: string, stats: ImageStats): Checked {
    if (part.type !== "image") return { kind: "keep", part };
    stats.images++;
    if (part.mediaType.toLowerCase() !== "image/png") {
      stats.passedThrough.not_png++;
      return { kind: "keep", part };
    }
    const png = decodeBase64(part.data);
    if (!png) throw invalidPng(param, "invalid base64");
    const key = sha256Hex(png);
    const webp = cache.get(key, deps.owner);
    if (webp !== undefined) return { kind: "cached", part, pngBytes: png.length, webp };
    const header = inspectPng(png);
    if (!header.ok) throw invalidPng(param, header.reason);
    if (header.bitDepth === 16) {
      stats.passedThrough.png_16bit++;
      return { kind: "keep", part };
    }
    if (header.animated) {
      stats.passedThrough.animated_png++;
      return { kind: "keep", part };
    }
    if (deps.maxPixels !== undefined && header.width * header.height > deps.maxPixels) {
      throw new SidecarError(
        "request_too_large",
        `${param}: PNG of ${header.width}×${header.height} pixels is over the limit of ${deps.maxPixels} pixels (images.limits.max_image_pixels)`,
        { param },
      );
    }
    return { kind: "convert", part, param, png, key };
  }

  /** The WebP of one checked PNG: a conversion of the same PNG already running for this request, or a new one. */
  function convert(
    checked: Extract<Checked, { kind: "convert" }>,
    stats: ImageStats,
    pending: Map<string, Promise<Uint8Array>>,
  ): Promise<Uint8Array> {
    const running = pending.get(checked.key);
    if (running) {
      stats.cacheHits++;
      return running;
    }
    stats.converted++;
    const conversion = converter.convert(checked.png, settings).then(
      ({ webp, ms }) => {
        stats.encodeMs += ms;
        cache.set(checked.key, webp, deps.owner);
        return webp;
      },
      (error: unknown) => {
        if (error instanceof PngDecodeError)
          throw invalidPng(checked.param, "the decoder rejected its data", error);
        throw error;
      },
    );
    pending.set(checked.key, conversion);
    return conversion;
  }

  const asWebp = (part: HubImagePart, webp: Uint8Array): HubPart => ({
    type: "image",
    mediaType: "image/webp",
    data: encodeBase64(webp),
    ...sourceOf(part),
  });

  return {
    async convertRequest(request) {
      const stats = emptyStats();
      const checked = request.messages.map((message, i) =>
        (message.role === "user" || message.role === "tool") &&
        message.content.some((part) => part.type === "image")
          ? message.content.map((part, j) =>
              check(part, (part.type === "image" && part.source) || `messages[${i}].content[${j}]`, stats),
            )
          : undefined,
      );
      // Every PNG of the request converts at once (as many in parallel as the pool has workers).
      const pending = new Map<string, Promise<Uint8Array>>();
      const messages = await Promise.all(
        request.messages.map(async (message, i) => {
          const parts = checked[i];
          if (!parts || (message.role !== "user" && message.role !== "tool")) return message;
          const content = await Promise.all(
            parts.map(async (item): Promise<HubPart> => {
              if (item.kind === "keep") return item.part;
              if (item.kind === "cached") {
                stats.cacheHits++;
                stats.bytesBefore += item.pngBytes;
                stats.bytesAfter += item.webp.length;
                return asWebp(item.part, item.webp);
              }
              const webp = await convert(item, stats, pending);
              stats.bytesBefore += item.png.length;
              stats.bytesAfter += webp.length;
              return asWebp(item.part, webp);
            }),
          );
          return { ...message, content };
        }),
      );
      return { request: { ...request, messages }, stats };
    },
  };
}

/** The client's field path travels with the converted image (later errors name it too). */
function sourceOf(part: HubImagePart): { source?: string } {
  return part.source ? { source: part.source } : {};
}
