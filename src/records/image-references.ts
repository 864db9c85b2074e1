/**
 * Images in record lines are references to the blob store, not base64 text.
 *
 * An image literal in a line's JSON text — a string token that is a base64 data URL
 * of an image type, or plain base64 whose bytes start with a PNG, JPEG, GIF or WebP
 * signature — is replaced by a reference object, written in exactly this form:
 *   "data:image/png;base64,iVBOR…"  →  {"$blob":"sha256:<hex>","media_type":"image/png","bytes":N}
 *   "iVBOR…"                        →  {"$blob":"sha256:<hex>","media_type":"image/png","bytes":N,"encoding":"base64"}
 * (`media_type` is the data URL's own text, or the sniffed type of plain base64;
 * `bytes` the decoded length; `encoding:"base64"` marks a string that was plain base64.)
 *
 * The replacement is a pure text substitution that `inlineImages` reverses byte for
 * byte, which is what lets `records show` rebuild a client's request exactly:
 * - In valid JSON, `"` + S + `"` where S has no `"` or `\` and the first quote is not
 *   escaped (after an even run of backslashes) can only be a whole string token whose
 *   value is S (a quote inside a string is always escaped, and no JSON token after a
 *   closing quote starts with a base64 character), so the scan needs no parser and never
 *   touches escaped JSON nested inside a string.
 * - Only canonical base64 is replaced (padded, zero trailing bits: the one encoding
 *   `toBase64` gives back); anything else stays inline.
 * - A text that already contains `{"$blob":` is left entirely as it is (the records
 *   writer marks such a line `"images_inline":true`), so every reference in a stored
 *   text is one this module wrote.
 */
import { z } from "zod";
import { encodeBase64 } from "../lib/base64.ts";
import { type FrameText, type ImageBlob, imageBlobFact, textOf } from "../lib/known-frame.ts";
import { knownFact, ownCopy, type TextHold } from "../lib/known-texts.ts";
import { sha256OfBase64 } from "../lib/sha256.ts";
import type { BlobStore } from "./blob-store.ts";

const referenceMarker = '{"$blob":';

const imageLiteral =
  /"(?:data:(image\/[A-Za-z0-9.+-]+);base64,([A-Za-z0-9+/]+={0,2})|((?:iVBORw0KGgo|\/9j\/|R0lGOD|UklGR)[A-Za-z0-9+/]{12,}={0,2}))"/g;

const referencePattern =
  /\{"\$blob":"sha256:([0-9a-f]{64})","media_type":"([A-Za-z0-9.+/-]+)","bytes":(\d+)(,"encoding":"base64")?\}/g;

export const blobReferenceSchema = z.object({
  $blob: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  media_type: z.string(),
  bytes: z.number().int().nonnegative(),
  encoding: z.literal("base64").optional(),
});
export type BlobReference = z.infer<typeof blobReferenceSchema>;

/**
 * A reference's digest wherever a record file's text has one: in a line's JSON, or
 * inside a text member's string, where its quotes are escaped once; an image's
 * (`$blob`) or a long string's (`$text`, text-references.ts).
 */
const referencedDigest = /\{\\?"\$(?:blob|text)\\?":\\?"sha256:([0-9a-f]{64})\\?"/g;

/** The digests of the blob references (images and long strings) in a piece of record text (duplicates included). */
export function referencedDigests(text: string): string[] {
  return Array.from(text.matchAll(referencedDigest), (match) => match[1] as string);
}

/** Whether a text already contains the start of a reference (then it is not externalized). */
export function hasReferenceForm(text: string): boolean {
  return text.includes(referenceMarker);
}

/** The media type of plain base64 image bytes, from their signature. */
export function sniffImageType(bytes: Uint8Array): string | undefined {
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (bytes[0] === 0x89 && ascii(1, 4) === "PNG") return "image/png";
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (ascii(0, 4) === "GIF8") return "image/gif";
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "image/webp";
  return undefined;
}

/**
 * The decoded length of canonical base64 (the caller's pattern admits only the
 * alphabet and `=`), or undefined when encoding its bytes would not give the same
 * text back: a length that is not a multiple of 4, or stray bits in the last group.
 * Groups of four characters decode on their own, so only the last is decoded.
 */
function canonicalLength(base64: string): number | undefined {
  if (base64.length % 4 !== 0 || base64.length === 0) return undefined;
  const lastGroup = base64.slice(-4);
  if (encodeBase64(Buffer.from(lastGroup, "base64")) !== lastGroup) return undefined;
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}

/**
 * The text with every image literal replaced by a reference; each image is in the
 * blob store before this returns (so a line written afterwards never refers to a
 * blob that is not on disk).
 */
export function externalizeImages(text: string, blobs: Pick<BlobStore, "put">): string {
  if (hasReferenceForm(text)) return text;
  return text.replace(
    imageLiteral,
    (
      literal,
      dataUrlType: string | undefined,
      dataUrlBase64: string | undefined,
      plain: string | undefined,
      at: number,
    ) =>
      // A quote after an odd run of backslashes is inside a longer string, not a token of its own.
      escapedAt(text, at)
        ? literal
        : (referenceTo(dataUrlType, dataUrlBase64 ?? plain ?? "", blobs) ?? literal),
  );
}

function escapedAt(text: string, at: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(at - 1 - backslashes) === 92 /* \ */) backslashes++;
  return backslashes % 2 === 1;
}

const imageValue = new RegExp(`^${imageLiteral.source.slice(1, -1)}$`);

/**
 * What `externalizeImages` puts for the string token whose value is `value` (a string
 * with no quote or backslash): its reference, or the token itself when it is not an
 * image literal. For a text split into pieces (split-text.ts), whose long strings are
 * never joined into one text.
 */
export function externalizeImageValue(
  value: FrameText,
  blobs: Pick<BlobStore, "put">,
  texts?: TextHold,
): string {
  // A frame resent every turn is matched and hashed once, given the request's hold
  // (known-texts.ts); its blob is put every time (a blob already stored is not written again).
  // A stand-in (known-frame.ts) was made only with this fact known and its blob on disk.
  const image = knownFact(texts, value, imageBlobFact, (text) => imageBlobOf(text, texts));
  if (image === undefined) return `"${textOf(value)}"`;
  const base64 = () => textOf(value).slice(image.base64From);
  const digest = blobs.put(() => Buffer.from(base64(), "base64"), image.digest, image.bytes);
  return referenceText(digest, image.mediaType, image.bytes, image.dataUrl);
}

function imageBlobOf(value: string, texts: TextHold | undefined): ImageBlob | undefined {
  const match = imageValue.exec(value);
  if (!match) return undefined;
  const base64 = match[2] ?? match[3] ?? "";
  const image = blobOf(match[1], base64, texts);
  return image && { ...image, dataUrl: match[1] !== undefined, base64From: value.length - base64.length };
}

/** The reference to an image literal's bytes (stored first), or undefined when it stays inline. */
function referenceTo(
  dataUrlType: string | undefined,
  base64: string,
  blobs: Pick<BlobStore, "put">,
): string | undefined {
  const image = blobOf(dataUrlType, base64);
  if (image === undefined) return undefined;
  const digest = blobs.put(() => Buffer.from(base64, "base64"), image.digest, image.bytes);
  return referenceText(digest, image.mediaType, image.bytes, dataUrlType !== undefined);
}

/** An image literal's media type, decoded length and digest; undefined when it stays inline. */
function blobOf(
  dataUrlType: string | undefined,
  base64: string,
  texts?: TextHold,
): { mediaType: string; bytes: number; digest: string } | undefined {
  const bytes = canonicalLength(base64);
  if (bytes === undefined) return undefined;
  // The signature is in the first 12 bytes (16 characters); the rest is decoded only
  // to write a blob that is not stored yet: a resent frame is hashed, never decoded.
  const mediaType = dataUrlType ?? sniffImageType(Buffer.from(base64.slice(0, 16), "base64"));
  if (!mediaType) return undefined;
  // Remembered with the text's facts: its own string, not a slice keeping the image alive.
  return { mediaType: ownCopy(mediaType), bytes, digest: sha256OfBase64(base64, texts) };
}

function referenceText(digest: string, mediaType: string, bytes: number, dataUrl: boolean): string {
  const encoding = dataUrl ? "" : ',"encoding":"base64"';
  return `{"$blob":"sha256:${digest}","media_type":"${mediaType}","bytes":${bytes}${encoding}}`;
}

function checkedBlob(read: (digest: string) => Uint8Array, digest: string, bytes: number): Uint8Array {
  const data = read(digest);
  if (data.length !== bytes)
    throw new Error(`blob sha256:${digest} has ${data.length} bytes; the reference says ${bytes}`);
  return data;
}

/** Reverses `externalizeImages`: the exact original text. */
export function inlineImages(text: string, read: (digest: string) => Uint8Array): string {
  if (!text.includes(referenceMarker)) return text;
  return text.replace(
    referencePattern,
    (_reference, digest: string, mediaType: string, bytes: string, plain: string | undefined) => {
      const base64 = encodeBase64(checkedBlob(read, digest, Number(bytes)));
      return plain ? `"${base64}"` : `"data:${mediaType};base64,${base64}"`;
    },
  );
}

/** The string a reference stands for: the data URL, or plain base64 when it was plain. */
export function referencedString(reference: BlobReference, read: (digest: string) => Uint8Array): string {
  const base64 = encodeBase64(checkedBlob(read, reference.$blob.slice("sha256:".length), reference.bytes));
  return reference.encoding === "base64" ? base64 : `data:${reference.media_type};base64,${base64}`;
}

/** A parsed JSON value with every reference replaced by the string it stands for. */
export function resolveBlobReferences(value: unknown, read: (digest: string) => Uint8Array): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveBlobReferences(item, read));
  if (value === null || typeof value !== "object") return value;
  if ("$blob" in value) {
    const reference = blobReferenceSchema.safeParse(value);
    if (reference.success) return referencedString(reference.data, read);
  }
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, resolveBlobReferences(item, read)]),
  );
}
