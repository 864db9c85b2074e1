/**
 * JSON.parse for large request bodies without copying their images: a client's camera
 * history is tens of MB of base64 strings, and a plain parse would hold each of them
 * twice (in the text and in the value). The body comes split (split-text.ts): its long
 * base64 strings are separate strings already, and the parse puts those very strings
 * in the value.
 */
import { type FrameText, KnownFrame, textOf } from "../lib/known-frame.ts";
import { type SplitText, splitText } from "./split-text.ts";

/** Bodies from this size on are parsed with their long base64 strings shared (`parseSharingBase64`). */
export const sharingFromChars = 1024 * 1024;

/**
 * The value of a split text, parsing `source` (its reduced text, or that text with some
 * members left out): each placeholder is given back as the string it stands for. A
 * placeholder must come back exactly once as a whole string value; when one does not
 * (it was a key, or the split of a whole string met an escaped quote) the answer is
 * undefined and the caller parses the text as received. Throws what JSON.parse throws
 * for `source`.
 */
export function parseSplit(source: string, split: SplitText): { value: unknown } | undefined {
  const { nonce, strings } = split;
  if (strings.length === 0) return { value: JSON.parse(source) };
  const restored = new Uint8Array(strings.length);
  const value: unknown = JSON.parse(source, function (this: unknown, key, item: unknown) {
    if (typeof item !== "string" || !item.startsWith(nonce)) return item;
    const index = Number(item.slice(nonce.length));
    if (!Number.isInteger(index) || index >= strings.length) return item;
    restored[index] = (restored[index] ?? 0) + 1;
    const taken = strings[index] as FrameText;
    // A stand-in stays one only in a protocol's image field, whose schema and stages expect
    // it; anywhere else its text is rebuilt (counted), so no stage meets one unawares.
    return taken instanceof KnownFrame && !isImageField(this, key) ? textOf(taken) : taken;
  });
  return restored.every((count) => count === 1) ? { value } : undefined;
}

/**
 * Whether `holder[key]` is an image's data in a client protocol: a Responses
 * `input_image`'s `image_url`, a Gemini blob's `data` (beside its `mimeType`), an
 * Anthropic base64 image source's `data`.
 */
function isImageField(holder: unknown, key: string): boolean {
  if (holder === null || typeof holder !== "object" || Array.isArray(holder)) return false;
  const object = holder as Record<string, unknown>;
  if (key === "image_url") return object.type === "input_image";
  if (key !== "data") return false;
  return (
    typeof object.mimeType === "string" || (object.type === "base64" && typeof object.media_type === "string")
  );
}

/**
 * JSON.parse(text), except that long base64 strings (a client's camera history: tens of
 * MB) are not copied out of the text but are views into it, so the parse does not double
 * the request's memory. Either way the value is what JSON.parse(text) gives.
 */
export function parseSharingBase64(text: string): unknown {
  const split = splitText(text);
  let parsed: { value: unknown } | undefined;
  try {
    parsed = parseSplit(split.reduced, split);
  } catch {
    return JSON.parse(text); // the error as the text itself gives it
  }
  return parsed ? parsed.value : JSON.parse(text);
}
