/**
 * UTF-8 byte counts of JSON text without building more of it than needed: what the
 * context policies compare against byte limits.
 */

import { isPlainBase64 } from "./base64.ts";
import { type FrameText, textOf } from "./known-frame.ts";
import type { TextHold } from "./known-texts.ts";

/** UTF-8 length of `JSON.stringify(value)`. */
export function measureJsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

/**
 * UTF-8 bytes of a string inside a JSON string literal, quotes excluded. JSON.stringify
 * escapes each character on its own, so this adds up across concatenated strings;
 * base64 needs no escaping and is counted without copying it.
 */
export function jsonStringDataBytes(text: FrameText, texts?: TextHold): number {
  return isPlainBase64(text, texts) ? text.length : measureJsonBytes(textOf(text)) - 2;
}
