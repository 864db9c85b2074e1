/**
 * The images inside a recorded request body, in document order, whatever the
 * protocol: data URLs (Responses `image_url`, Chat Completions `image_url.url`),
 * base64 beside a media type (Anthropic `source`, Gemini `inlineData`), and blob
 * references (`{"$blob":"sha256:…","media_type":…,"bytes":…}`) once images live in
 * the content-addressed store (their form is the records' own, image-references.ts).
 */
import { blobReferenceSchema } from "../records/image-references.ts";

export type FoundImage =
  | { kind: "inline"; mediaType: string; base64: string; bytes: number }
  | { kind: "blob"; digest: string; mediaType: string; bytes: number };

const dataUrl = /^data:(image\/[a-z0-9.+-]+);base64,/i;

function base64Bytes(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return Math.floor((base64.length * 3) / 4) - padding;
}

export function findImages(value: unknown, out: FoundImage[] = []): FoundImage[] {
  if (typeof value === "string") {
    const match = dataUrl.exec(value);
    if (match?.[1]) {
      const base64 = value.slice(match[0].length);
      out.push({ kind: "inline", mediaType: match[1], base64, bytes: base64Bytes(base64) });
    }
    return out;
  }
  if (Array.isArray(value)) {
    for (const item of value) findImages(item, out);
    return out;
  }
  if (value === null || typeof value !== "object") return out;
  const object = value as Record<string, unknown>;
  const reference = "$blob" in object ? blobReferenceSchema.safeParse(object) : undefined;
  if (reference?.success) {
    const { $blob, media_type, bytes } = reference.data;
    out.push({ kind: "blob", digest: $blob.slice("sha256:".length), mediaType: media_type, bytes });
    return out;
  }
  const mediaType = object.media_type ?? object.mimeType ?? object.mime_type;
  if (typeof mediaType === "string" && mediaType.startsWith("image/") && typeof object.data === "string") {
    out.push({ kind: "inline", mediaType, base64: object.data, bytes: base64Bytes(object.data) });
    return out;
  }
  for (const item of Object.values(object)) findImages(item, out);
  return out;
}
