/**
 * Parses a client's JSON body for any ingress. A body nested deeper than
 * `maxJsonDepth` is refused before JSON.parse: the parse itself would succeed,
 * but recording and translating such a value recurses past the stack (a 500 and
 * a lost record). The depth scan is iterative and linear.
 */
export const maxJsonDepth = 512;

/** The body as parsed, always with the exact text received (the records keep that text). */
export type JsonBody =
  | { parsed: true; value: unknown; text: string }
  | { parsed: false; text: string; reason: string };

/**
 * The deepest array/object nesting in JSON text (strings skipped), without recursion.
 * A string is skipped by searching for its closing quote rather than stepping through
 * it character by character: request bodies are mostly long base64 strings.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */) {
      // Find the quote that ends the string: one preceded by an even number of backslashes.
      let end = text.indexOf('"', i + 1);
      while (end > 0) {
        let backslashes = 0;
        while (text.charCodeAt(end - 1 - backslashes) === 92 /* \ */) backslashes++;
        if (backslashes % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      if (end < 0) return deepest;
      i = end;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return deepest;
}

export function parseJsonBody(text: string): JsonBody {
  const depth = jsonNestingDepth(text);
  if (depth > maxJsonDepth) {
    return {
      parsed: false,
      text,
      reason: `request body nests ${depth} levels deep, over the limit of ${maxJsonDepth}`,
    };
  }
  try {
    return { parsed: true, value: JSON.parse(text), text };
  } catch (error) {
    return { parsed: false, text, reason: `request body is not valid JSON (${(error as Error).message})` };
  }
}

/** A value as the body a client would send: its JSON text, parsed the way a route parses it. */
export function jsonBodyOf(value: unknown): JsonBody {
  return parseJsonBody(JSON.stringify(value));
}
