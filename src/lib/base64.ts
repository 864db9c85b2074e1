/**
 * Base64 for megabyte images on the hot path. Buffer's codec is several times
 * faster here than Uint8Array.fromBase64/toBase64 (measured on 600 KB frames), but
 * it skips characters outside the alphabet silently, so decoding checks the
 * alphabet first: invalid base64 is an error, never a silently different image.
 */
import type { FrameText } from "./known-frame.ts";
import { knownFact, type TextHold } from "./known-texts.ts";

const base64Text = /^[A-Za-z0-9+/\t\n\f\r ]*(?:=[\t\n\f\r ]*){0,2}$/;
const whitespace = /[\t\n\f\r ]/g;

/**
 * Whether the text is base64 (whitespace allowed, padding optional): what `decodeBase64`
 * decodes. `texts`: the request's hold, where a frame resent every turn is known (known-texts.ts).
 */
export function isBase64(text: FrameText, texts?: TextHold): boolean {
  return knownFact(texts, text, "base64", (value) => base64Text.test(value));
}

/** Whether the text is only base64's alphabet and `=` (no whitespace): JSON holds it unescaped, one byte a character. */
export function isPlainBase64(text: FrameText, texts?: TextHold): boolean {
  return knownFact(texts, text, "plain_base64", (value) => plainBase64.test(value));
}

const plainBase64 = /^[A-Za-z0-9+/=]*$/;

/**
 * The bytes, or undefined when the text is not base64 (whitespace allowed, padding optional).
 * A stand-in's are its blob's, checked against their digest (known-frame.ts).
 */
export function decodeBase64(text: FrameText): Uint8Array | undefined {
  if (typeof text !== "string") return text.isDataUrl ? undefined : text.bytes();
  if (!isBase64(text)) return undefined;
  return Buffer.from(text, "base64");
}

/**
 * How many bytes `decodeBase64` gives for a text it accepts, without decoding it: six
 * bits per alphabet character, an incomplete last byte dropped.
 */
export function base64DecodedLength(base64: FrameText, texts?: TextHold): number {
  return knownFact(texts, base64, "decoded_length", decodedLength);
}

function decodedLength(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  let characters = base64.length - padding;
  whitespace.lastIndex = 0;
  if (whitespace.test(base64)) characters = base64.replace(whitespace, "").replace(/=+$/, "").length;
  return Math.floor((characters * 3) / 4);
}

export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("base64");
}

/** Characters of base64 (with padding) for `n` bytes: 4·⌈n/3⌉. */
export function base64Length(n: number): number {
  return 4 * Math.ceil(n / 3);
}
