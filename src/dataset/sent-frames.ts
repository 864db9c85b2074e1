/**
 * The frames a client sent in one exchange, from its request as recorded (any
 * protocol): every inline image — a data URL, a Gemini `inlineData`, an
 * Anthropic base64 `source`, or a blob reference — as byte digests, and the
 * decoded pixels of each PNG. A dataset image must be one of them pixel for
 * pixel (the lossless WebP of a PNG) or byte for byte (an image passed through).
 */
import { createHash } from "node:crypto";
import type { Codecs } from "../images/codecs.ts";
import { isBlobRef } from "./read-episode.ts";
import { parseDataUrl, type SentImage } from "./render-line.ts";
import { pixelDigest, type SentFrames } from "./validate-line.ts";

export type BlobReader = (ref: { $blob: string }) => Uint8Array;

function imagesIn(value: unknown, readBlob: BlobReader, out: SentImage[]): void {
  if (typeof value === "string") {
    if (value.startsWith("data:image/")) {
      const image = parseDataUrl(value);
      if (image) out.push(image);
    }
    return;
  }
  if (typeof value !== "object" || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) imagesIn(item, readBlob, out);
    return;
  }
  if (isBlobRef(value)) {
    try {
      out.push({ mediaType: value.media_type ?? "application/octet-stream", bytes: readBlob(value) });
    } catch {
      // A missing client-side blob only means fewer frames to compare against; the check then fails by name.
    }
    return;
  }
  const record = value as Record<string, unknown>;
  const mediaType = record.mimeType ?? record.media_type;
  if (typeof mediaType === "string" && mediaType.startsWith("image/") && typeof record.data === "string") {
    out.push({ mediaType, bytes: new Uint8Array(Buffer.from(record.data, "base64")) });
  }
  for (const item of Object.values(record)) imagesIn(item, readBlob, out);
}

export function collectSentFrames(clientBody: unknown, readBlob: BlobReader, codecs: Codecs): SentFrames {
  const images: SentImage[] = [];
  imagesIn(clientBody, readBlob, images);
  const frames: SentFrames = { pixels: new Set(), bytes: new Set() };
  for (const image of images) {
    frames.bytes.add(createHash("sha256").update(image.bytes).digest("hex"));
    if (image.mediaType !== "image/png") continue;
    try {
      frames.pixels.add(pixelDigest(codecs.decodePng(image.bytes)));
    } catch {
      // An undecodable PNG is no frame any dataset image could equal.
    }
  }
  return frames;
}
