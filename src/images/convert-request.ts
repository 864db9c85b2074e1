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
 * Every image's structure is checked (signature, IHDR, chunk list) from its base64 text;
 * its data only when it is converted, so pixel data the decoder rejects in a frame the
 * policy leaves out is never found (docs/context-policies.md, "Damaged frames").
 *
 * The input request is never modified (the CLI's original is recorded as sent).
 *
 * `prepare` splits the work for a policy that decides from the converted sizes what
 * to send (body_budget): every image is checked at once, as above, but a PNG is
 * converted only when its size is asked for (`resolve`) or it is in the request
 * finally sent (`finish`), so an image the policy leaves out is never converted.
 */
import type { HubImagePart, HubPart, HubRequest } from "../hub/schema.ts";
import { base64DecodedLength, base64Length, decodeBase64, encodeBase64, isBase64 } from "../lib/base64.ts";
import { SidecarError } from "../lib/errors.ts";
import { jsonStringDataBytes } from "../lib/json-bytes.ts";
import type { TextHold } from "../lib/known-texts.ts";
import { sha256OfBase64 } from "../lib/sha256.ts";
import type { ImageCache } from "./image-cache.ts";
import { inspectPngBase64 } from "./inspect-png.ts";
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
  /** Images of the request left out of what was sent (context policy), never converted. */
  leftOut: number;
}

/** A request's images, checked; converted only on demand. */
export interface PreparedImages {
  /** How an image part of the prepared request goes upstream; its data length once known. */
  formOf(part: HubImagePart): { mediaType: string; dataBytes: number | undefined };
  /** Converts these image parts of the prepared request (their sizes become known). */
  resolve(parts: HubImagePart[]): Promise<void>;
  /**
   * `request` (the prepared one, or one keeping some of its parts) with every PNG as its WebP.
   * `forget`: image parts left out that this episode will not send again: their cached WebP
   * stops being its own, unless `request` sends the same frame.
   */
  finish(request: HubRequest, options?: ForgetOptions): Promise<{ request: HubRequest; stats: ImageStats }>;
}

export type ForgetOptions = {
  /**
   * Parts of the prepared request (body_budget's, src/context/apply-body-budget.ts), or of
   * the client's request before the context policy left them out (sliding_window's,
   * src/context/apply-sliding-window.ts): those are never checked, only hashed (one SHA-256
   * per frame left out, per turn, as a prepared request hashes each of its frames); a part
   * that is not PNG is skipped (it was never cached).
   */
  forget?: readonly HubImagePart[];
};

export interface ImageConverter {
  convertRequest(
    request: HubRequest,
    options?: ForgetOptions,
  ): Promise<{ request: HubRequest; stats: ImageStats }>;
  /** Throws, like convertRequest, for any image refused; converts nothing yet. */
  prepare(request: HubRequest): PreparedImages;
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
  /** The request's hold of its long strings: a frame resent every turn is checked and hashed once (known-texts.ts). */
  texts?: TextHold;
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
    leftOut: 0,
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
  | { kind: "cached"; part: HubImagePart; pngBytes: number; webp: Uint8Array; key: string }
  | { kind: "convert"; part: HubImagePart; param: string; key: string };

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
    if (!isBase64(part.data, deps.texts)) throw invalidPng(param, "invalid base64");
    // A resent frame is found by the digest of its bytes without decoding them: only a
    // frame to convert is decoded.
    const key = sha256OfBase64(part.data, deps.texts);
    // Looked at, not used yet: an image the policy then leaves out must not stay fresh in the cache.
    const webp = cache.peek(key);
    if (webp !== undefined)
      return { kind: "cached", part, pngBytes: base64DecodedLength(part.data, deps.texts), webp, key };
    // Its structure is read from the text: a frame is decoded only to be converted.
    const header = inspectPngBase64(part.data, deps.texts);
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
    return { kind: "convert", part, param, key };
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
    const png = decodeBase64(checked.part.data) as Uint8Array; // base64, checked
    const conversion = converter.convert(png, settings).then(
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

  // The cached WebP's base64, made once per frame (image-cache.ts), else encoded here.
  const asWebp = (part: HubImagePart, webp: Uint8Array, key: string): HubPart => ({
    type: "image",
    mediaType: "image/webp",
    data: (cache.peek(key) === webp ? cache.base64(key) : undefined) ?? encodeBase64(webp),
    ...sourceOf(part),
  });

  function prepare(request: HubRequest): PreparedImages {
    const stats = emptyStats();
    const checked = new Map<HubImagePart, Checked>();
    request.messages.forEach((message, i) => {
      if (message.role !== "user" && message.role !== "tool") return;
      message.content.forEach((part, j) => {
        if (part.type !== "image") return;
        checked.set(part, check(part, part.source || `messages[${i}].content[${j}]`, stats));
      });
    });
    // Conversions started for this request, by PNG digest (the same PNG twice converts once).
    const pending = new Map<string, Promise<Uint8Array>>();
    const converted = new Map<HubImagePart, Uint8Array>();
    const conversionOf = (item: Extract<Checked, { kind: "convert" }>) =>
      convert(item, stats, pending).then((webp) => {
        converted.set(item.part, webp);
        return webp;
      });
    /**
     * The cache key of a part to forget. A part not prepared here is only hashed, not checked
     * (checking its base64 costs more than hashing it): text that is not base64 hashes as the
     * bytes of what it does hold, and at worst lets go of an entry the episode would convert again.
     */
    const cacheKeyOf = (part: HubImagePart): string | undefined => {
      const item = checked.get(part);
      if (item !== undefined) return item.kind === "keep" ? undefined : item.key;
      return part.mediaType.toLowerCase() === "image/png" ? sha256OfBase64(part.data, deps.texts) : undefined;
    };
    return {
      formOf(part) {
        const item = checked.get(part);
        if (item === undefined || item.kind === "keep")
          return { mediaType: part.mediaType, dataBytes: jsonStringDataBytes(part.data, deps.texts) };
        const webp = item.kind === "cached" ? item.webp : converted.get(part);
        return { mediaType: "image/webp", dataBytes: webp && base64Length(webp.length) };
      },
      async resolve(parts) {
        await Promise.all(
          parts.map((part) => {
            const item = checked.get(part);
            return item?.kind === "convert" && !converted.has(part) ? conversionOf(item) : undefined;
          }),
        );
      },
      async finish(sent, options = {}) {
        const forget = options.forget ?? [];
        // A request without images (most turns of a text agent) is sent as it is.
        if (checked.size === 0 && forget.length === 0) return { request: sent, stats };
        let images = 0;
        const sentKeys = new Set<string>();
        // Every PNG still to convert converts at once (as many in parallel as the pool has workers).
        const messages = await Promise.all(
          sent.messages.map(async (message) => {
            if (message.role !== "user" && message.role !== "tool") return message;
            if (!message.content.some((part) => part.type === "image")) return message;
            const content = await Promise.all(
              message.content.map(async (part): Promise<HubPart> => {
                const item = part.type === "image" ? checked.get(part) : undefined;
                if (item === undefined) return part;
                images++;
                if (item.kind === "keep") return item.part;
                if (item.kind === "cached") {
                  cache.get(item.key, deps.owner);
                  sentKeys.add(item.key);
                  stats.cacheHits++;
                  stats.bytesBefore += item.pngBytes;
                  stats.bytesAfter += item.webp.length;
                  return asWebp(item.part, item.webp, item.key);
                }
                const webp = converted.get(item.part) ?? (await conversionOf(item));
                sentKeys.add(item.key);
                stats.bytesBefore += base64DecodedLength(item.part.data, deps.texts);
                stats.bytesAfter += webp.length;
                return asWebp(item.part, webp, item.key);
              }),
            );
            return { ...message, content };
          }),
        );
        stats.leftOut = checked.size - images;
        for (const part of forget) {
          const key = cacheKeyOf(part);
          if (key !== undefined && !sentKeys.has(key)) cache.forget(key, deps.owner);
        }
        return { request: { ...sent, messages }, stats };
      },
    };
  }

  return {
    prepare,
    convertRequest: async (request, options) => prepare(request).finish(request, options),
  };
}

/** The client's field path travels with the converted image (later errors name it too). */
function sourceOf(part: HubImagePart): { source?: string } {
  return part.source ? { source: part.source } : {};
}
