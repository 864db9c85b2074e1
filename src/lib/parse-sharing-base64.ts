/**
 * JSON.parse for large request bodies without copying their images: a client's camera
 * history is tens of MB of base64 strings, and a plain parse would hold each of them
 * twice (in the text and in the value).
 */
/** Bodies from this size on are parsed with their long base64 strings shared (`parseSharingBase64`). */
export const sharingFromChars = 1024 * 1024;

/**
 * A string token of base64 (or a base64 data URL) of at least 4096 characters. A match
 * that starts at an opening quote is a whole string token, its value the text between the
 * quotes: it has no `\`, and no `"` before the closing one. (A match can also start at an
 * escaped quote inside a longer string; `parseSharingBase64` detects that and gives up.)
 */
const longBase64String = /"((?:data:[A-Za-z0-9.+/-]+;base64,)?[A-Za-z0-9+/]{4096,}={0,2})"/g;

/**
 * JSON.parse(text), except that long base64 strings (a client's camera history: tens of
 * MB) are not copied out of the text but are views into it, so the parse does not double
 * the request's memory. Each such string is replaced by a placeholder naming it (with a
 * nonce no client can know) before parsing the rest; the parse is kept only when every
 * placeholder comes back exactly once as a whole string value, else the text is parsed
 * as it is. Either way the value is what JSON.parse(text) gives.
 */
export function parseSharingBase64(text: string): unknown {
  const shared: string[] = [];
  const nonce = `ura-shared-${crypto.randomUUID()}-`;
  const reduced = text.replace(longBase64String, (_token, value: string) => {
    shared.push(value);
    return `"${nonce}${shared.length - 1}"`;
  });
  if (shared.length === 0) return JSON.parse(text);
  const restored = new Uint8Array(shared.length);
  let value: unknown;
  try {
    value = JSON.parse(reduced, (_key, item: unknown) => {
      if (typeof item !== "string" || !item.startsWith(nonce)) return item;
      const index = Number(item.slice(nonce.length));
      if (!Number.isInteger(index) || index >= shared.length) return item;
      restored[index] = (restored[index] ?? 0) + 1;
      return shared[index];
    });
  } catch {
    return JSON.parse(text); // the error as the text itself gives it
  }
  return restored.every((count) => count === 1) ? value : JSON.parse(text);
}

/** Whether `text` holds a long base64 string token (a value parsed from it may share that text). */
export function hasLongBase64String(text: string): boolean {
  longBase64String.lastIndex = 0;
  return longBase64String.test(text);
}
