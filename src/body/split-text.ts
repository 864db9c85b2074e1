/**
 * A JSON request body held with its long base64 strings apart from the rest of its
 * text. A camera history is tens of MB of base64 images: held as one string it is
 * copied whole by every step that reads it (Bun's read buffer, the decoded text, the
 * parse, the record line), and those copies were the peak of a long episode. Split,
 * each image is one compact string the size of its token, and the rest is a small
 * text the parser and the record writer read without touching the images.
 *
 * The text is `reduced` with each taken-out string token replaced by a placeholder
 * token `"<nonce><index>"`; `strings[index]` is the token's value, which holds no
 * quote or backslash, so the token as received is `"` + value + `"`. The nonce is
 * random per body: no client can write a placeholder of its own.
 */
import { type FrameText, textOf } from "../lib/known-frame.ts";
import type { TextHold } from "../lib/known-texts.ts";

export type SplitText = {
  /** The text with each taken-out string token replaced by its placeholder token. */
  reduced: string;
  /**
   * The values of the taken-out string tokens (base64 or base64 data URLs), by index: each
   * a string, or the stand-in of a frame known from an earlier request (known-frame.ts).
   */
  strings: readonly FrameText[];
  /** What every placeholder's value starts with (before its index). */
  nonce: string;
  /**
   * The taken-out strings registered with their facts while the request is processed
   * (known-texts.ts); released by whoever received the body once the request is done.
   */
  hold?: TextHold;
};

/** A string token's value at least this long, of base64 or a base64 data URL, is taken out of the text. */
export const splitFromChars = 4096;

/** The values that are taken out: base64 or a base64 data URL of at least `splitFromChars` characters. */
export const longBase64Value = /^(?:data:[A-Za-z0-9.+/-]+;base64,)?[A-Za-z0-9+/]{4096,}={0,2}$/;

/**
 * The same values as string tokens inside a text. A match that starts at an opening
 * quote is a whole string token; one can also start at an escaped quote inside a
 * longer string, which `parseSplitText` detects (its placeholder does not come back
 * as a whole value) and then parses the text as received.
 */
const longBase64Token = /"((?:data:[A-Za-z0-9.+/-]+;base64,)?[A-Za-z0-9+/]{4096,}={0,2})"/g;

export function newNonce(): string {
  return `ura-split-${crypto.randomUUID()}-`;
}

/** A text kept whole: nothing taken out. */
export function unsplit(text: string): SplitText {
  return { reduced: text, strings: [], nonce: "" };
}

/** The placeholder token of `strings[index]`. */
export function placeholderToken(nonce: string, index: number): string {
  return `"${nonce}${index}"`;
}

function placeholderTokens(nonce: string): RegExp {
  return new RegExp(`"${nonce.replace(/[^A-Za-z0-9]/g, "\\$&")}(\\d+)"`, "g");
}

/**
 * A whole text split: its long base64 string tokens taken out (as views into the
 * text, not copies). For texts that already exist as one string (tests, a body read
 * without the server's receiver).
 */
export function splitText(text: string): SplitText {
  const strings: string[] = [];
  const nonce = newNonce();
  const reduced = text.replace(longBase64Token, (_token, value: string) => {
    strings.push(value);
    return placeholderToken(nonce, strings.length - 1);
  });
  return strings.length === 0 ? unsplit(text) : { reduced, strings, nonce };
}

/** Whether `text` holds a long base64 string token (a value parsed from it may share that text). */
export function hasLongBase64String(text: string): boolean {
  longBase64Token.lastIndex = 0;
  return longBase64Token.test(text);
}

/**
 * The text exactly as received, as one string (a copy of all of it: only for what cannot
 * work on the split form; a stand-in's text is rebuilt from its blob, counted).
 */
export function wholeText(split: SplitText): string {
  if (split.strings.length === 0) return split.reduced;
  return split.reduced.replace(placeholderTokens(split.nonce), (_token, index: string) => {
    return `"${textOf(split.strings[Number(index)] as FrameText)}"`;
  });
}

/**
 * The text in order as pieces of text between taken-out strings and the strings'
 * values: `[text, value, text, value, …, text]` (text at even indexes, always strings), whose
 * join, each value in quotes, is the text as received.
 */
export function textPieces(split: SplitText): FrameText[] {
  if (split.strings.length === 0) return [split.reduced];
  const pieces: FrameText[] = [];
  const tokens = placeholderTokens(split.nonce);
  let at = 0;
  for (const match of split.reduced.matchAll(tokens)) {
    pieces.push(split.reduced.slice(at, match.index), split.strings[Number(match[1])] as FrameText);
    at = match.index + match[0].length;
  }
  pieces.push(split.reduced.slice(at));
  return pieces;
}
