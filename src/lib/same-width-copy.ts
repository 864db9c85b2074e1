/**
 * A flat copy of a string in the width of the string it was cut from. The engine keeps a
 * string one byte a character when it can and two when any character is past Latin-1, and
 * compares two strings at memory speed only when both have the same width: a one-byte run
 * of a history checked inside a two-byte request body (one em dash in a system prompt makes
 * the whole body two bytes a character) is compared character by character, several times
 * slower. What the episode keeps to compare with the next body (a history's runs, a resent
 * member's text, the last upstream body's segments) is therefore copied from the body in
 * its width, not narrowed.
 * - A copy, not a slice: a slice of a large body keeps the whole body alive.
 * - A JSON round trip (or a decode of its bytes) narrows the copy to one byte a character;
 *   a join of two or more strings builds a flat string in the width of its parts, and a
 *   slice of a two-byte string is two-byte, whatever its characters.
 */

/** A flat copy of `text`, as wide as the string it was sliced from. */
export function sameWidthCopy(text: string): string {
  return [text, ""].join("");
}

/** `parts` joined by `separator` as a flat copy of their own (a join of one part may be that very string). */
export function joinedCopy(parts: readonly string[], separator: string): string {
  return parts.length === 1 ? sameWidthCopy(parts[0] as string) : parts.join(separator);
}
